"""The stage: everything that shows one run (combined column, parallel panes, timeline, server
lane, summary, tokens chart) on one time axis. Live runs, replays, presentation and exports
all drive a stage.
"""
