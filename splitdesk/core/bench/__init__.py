"""Headless measurement sessions: splitdesk bench (one comparison, repeats) and the N-sweep,
and their table.
"""
