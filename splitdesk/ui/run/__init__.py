"""Runs in the window: the controller that starts the engine process and the built-in endpoint
and turns a run request into a live run.
"""
