"""How a run is measured: the runner that sends a plan over HTTP, arrival stamps, transport
errors in words, the engine process the window uses, the server's own /metrics, the client's
pattern.
"""
