"""What a run is: questions and their labels, the combined prompt's template and its answer
sections, the run plan, the event model and the state events build (plain data, no I/O).
"""
