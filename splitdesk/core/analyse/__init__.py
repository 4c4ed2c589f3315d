"""What a measured run means: the figures (TTFT, ITL, TPOT, makespan, speed-up), the diagnosis,
the cost model's prediction, cost, token curves, the stream inspector.
"""
