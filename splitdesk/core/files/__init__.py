"""Files splitdesk reads and writes: recordings, settings, scenarios, saved sweeps, the bench
JSON document, figure and Perfetto exports, prices; one atomic writer for all.
"""
