"""File → Export: the menu that writes pictures, figures, traces and animations of the run on
show.
"""
