"""Presentation mode: scenarios, captions and large type for a talk."""
