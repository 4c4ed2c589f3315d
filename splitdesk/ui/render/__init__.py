"""Pictures and animations of a stage: PNG, SVG, GIF, MP4 (offscreen, never a hidden window)."""
