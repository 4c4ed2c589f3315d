"""sim/wire"""
