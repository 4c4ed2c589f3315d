"""The GIF encoder stores each frame as "what changed, the rest transparent": decoding
the file must give back every frame exactly (the one palette, no colour lost, nothing
left over from an earlier frame), and a frame that changes nothing still counts. No Qt:
frames are BGRX bytes made here, with fewer colours than the palette holds, so the
quantised frame is the frame itself."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from splitdesk.ui.render.encoders import EncodeError, FfmpegWriter, GifWriter

W, H = 64, 48
COLOURS = [(16, 24, 32), (240, 240, 240), (255, 85, 0), (0, 150, 255), (90, 200, 90)]


def bgrx(rgb: np.ndarray) -> bytes:
    """(H, W, 3) RGB → Qt RGB32 memory (B G R X)."""
    out = np.full((H, W, 4), 255, np.uint8)
    out[..., 0], out[..., 1], out[..., 2] = rgb[..., 2], rgb[..., 1], rgb[..., 0]
    return out.tobytes()


def frames() -> list[np.ndarray]:
    """A background, a bar growing across, a block that appears and then goes away (its
    pixels go back to the background: transparency must not keep the old colour), and a
    last frame equal to the one before."""
    out = []
    base = np.zeros((H, W, 3), np.uint8)
    base[:] = COLOURS[0]
    for k in range(8):
        f = base.copy()
        f[4:10, : 6 * (k + 1)] = COLOURS[2]
        if 2 <= k <= 4:
            f[20:30, 20:40] = COLOURS[3 + k % 2]
        f[40, k] = COLOURS[1]
        out.append(f)
    out.append(out[-1].copy())
    return out


def test_decoded_gif_frames_equal_the_frames_written(tmp_path: Path) -> None:
    shown = frames()
    path = tmp_path / "a.gif"
    # the palette comes from one frame that holds every colour (the run's last frame does)
    palette = shown[0].copy()
    for i, colour in enumerate(COLOURS):
        palette[0, i] = colour
    writer = GifWriter(path, (W, H), 25.0, bgrx(palette))
    for f in shown:
        writer.write(bgrx(f))
    writer.close()
    assert writer.frames == len(shown)
    with Image.open(path) as im:
        assert im.n_frames == len(shown)
        for k, expected in enumerate(shown):
            im.seek(k)
            got = np.asarray(im.convert("RGB"))
            wrong = np.argwhere((got != expected).any(axis=2))
            assert wrong.size == 0, f"frame {k}: {len(wrong)} pixels differ, first at {wrong[0]}"
            assert im.info["duration"] == 40  # 25 fps: 4 cs a frame
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.gif"]


def test_a_frame_of_the_wrong_size_is_refused_and_abort_leaves_nothing(tmp_path: Path) -> None:
    for writer in (
        GifWriter(tmp_path / "a.gif", (W, H), 25.0, bgrx(frames()[0])),
        FfmpegWriter(tmp_path / "a.webp", (W, H), 25.0, "webp"),
    ):
        with pytest.raises(EncodeError, match=f"is not {W}x{H}"):
            writer.write(b"\0" * 12)
        writer.abort()
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(EncodeError, match="not 'gif'"):
        FfmpegWriter(tmp_path / "a.gif", (W, H), 25.0, "gif")
