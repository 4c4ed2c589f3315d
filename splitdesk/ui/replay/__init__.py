"""Recordings in the window: record, auto-save, open, replay, session history, two runs
compared.
"""
