"""``splitdesk export --gif``: the line it prints gives how long the GIF plays (what the
file's frame delays add up to) and, apart, how long the render took."""

from __future__ import annotations

from pathlib import Path

from PIL import Image

from splitdesk.cli.export import animation_line
from splitdesk.ui.render.encoders import GifWriter, animation_seconds


def test_gif_plays_as_long_as_its_frame_delays_add_up_to(tmp_path: Path) -> None:
    path, size, fps = tmp_path / "a.gif", (16, 16), 3.0
    frames = [bytes([k * 30, 0, 0, 0]) * (16 * 16) for k in range(7)]
    writer = GifWriter(path, size, fps, frames[-1])
    for rgb in frames:
        writer.write(rgb)
    writer.close()
    with Image.open(path) as gif:
        played_ms = 0
        for k in range(gif.n_frames):
            gif.seek(k)
            played_ms += gif.info["duration"]
    assert gif.n_frames == 7
    assert animation_seconds(7, fps, "gif") == played_ms / 1000 == 2.33
    assert animation_seconds(30, 30.0, "mp4") == 1.0


def test_the_line_says_rendered_in_and_the_length_apart() -> None:
    line = animation_line("gif", Path("out.gif"), 15, 5.0, 3.0, 0.31, 0.7)
    assert line == (
        "gif: wrote out.gif (15 frames at 5 fps, plays 3.0 s, 0.3 MB; rendered in 0.7 s)"
    )
