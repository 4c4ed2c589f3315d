"""What every part of the window shares: the theme, the frame throttle, asyncio tasks from Qt
slots, thread priority, the garbage-collector freeze, end-following text views.
"""
