"""Animation encoders: RGB frames in, a GIF or an MP4 file out, one frame at a time.

Libraries and why:

* **GIF — Pillow** (:mod:`PIL.GifImagePlugin`). Pillow's ``save(save_all=True)`` keeps
  every frame until the end (330 MB for a 12 s 1280×720 30 fps run), so frames are written
  as they come with Pillow's documented building blocks for that (``getheader`` once,
  ``getdata`` per frame). One palette for the whole file, taken from the run's last frame
  (which shows every colour of the run), so colours never flicker; each frame stores only
  the rectangle that changed since the one before (``ImageChops.difference``). GIF delays
  are centiseconds: frame k lasts ``round(100 (k+1) / fps) − round(100 k / fps)`` cs, so
  the total is ``frames / fps`` and 30 fps alternates 3 and 4 cs.
* **MP4 — imageio-ffmpeg**: a wheel on PyPI that carries its own ``ffmpeg`` binary (no
  system package, nothing downloaded at run time) and streams raw frames to it through a
  pipe, so encoding runs in a second process beside the rendering. H.264 (libx264),
  yuv420p (plays in every browser, slide tool and phone), ``+faststart``. PyAV would do
  the same in-process but is a larger wheel and a lower-level API.

Both take frames of exactly the size given at the start as **BGRX** bytes (4 a pixel,
rows top to bottom: Qt's ``RGB32`` image memory on little-endian machines, so no
conversion per frame). Raises :class:`EncodeError` for a bad size or a frame of the wrong size.
"""

from __future__ import annotations

import contextlib
from collections.abc import Generator
from pathlib import Path
from typing import Any, BinaryIO, Protocol

from PIL import GifImagePlugin, Image, ImageChops

#: Largest side of an animation (pixels) and highest frame rate: a 4K 60 fps video is
#: the most a slide can use; more only makes huge files.
MAX_SIDE = 3840
MAX_FPS = 60
#: GIF players clamp delays under 2 cs to 10 cs: 50 fps is the fastest GIF that plays right.
MAX_GIF_FPS = 50
#: Colours of a GIF's one palette. The window draws a few dozen flat colours plus
#: anti-aliased text edges: 64 keep text crisp and make LZW codes shorter than 255 would
#: (the 12 s batching demo at 1280×720, 30 fps: see benchmarks/export_bench.py).
GIF_COLORS = 64
#: Longest animation (seconds of run): 10 minutes.
MAX_SECONDS = 600.0


class EncodeError(Exception):
    """An animation cannot be written (bad size or frame rate, encoder failure)."""


class FrameWriter(Protocol):
    """What the renderer writes frames to."""

    frames: int

    def write(self, rgb: bytes) -> None: ...
    def close(self) -> None: ...
    def abort(self) -> None: ...


def check_size(size: tuple[int, int], fps: float, kind: str) -> None:
    """Raise :class:`EncodeError` unless ``size`` (pixels) and ``fps`` fit the caps."""
    w, h = size
    if not (16 <= w <= MAX_SIDE and 16 <= h <= MAX_SIDE):
        raise EncodeError(f"size {w}x{h}: each side must be 16-{MAX_SIDE} pixels")
    top = MAX_GIF_FPS if kind == "gif" else MAX_FPS
    if not (1 <= fps <= top):
        raise EncodeError(f"{fps:g} fps: a {kind.upper()} takes 1-{top} frames per second")
    if kind == "mp4" and (w % 2 or h % 2):
        raise EncodeError(f"size {w}x{h}: H.264 needs even width and height")


def gif_delays_cs(frames: int, fps: float) -> list[int]:
    """Each frame's delay in centiseconds so that ``frames`` frames last ``frames / fps``."""
    return [round(100 * (k + 1) / fps) - round(100 * k / fps) for k in range(frames)]


def animation_seconds(frames: int, fps: float, kind: str) -> float:
    """How long an animation of ``frames`` frames at ``fps`` plays (seconds): ``frames /
    fps``, for a GIF in whole centiseconds (the sum of :func:`gif_delays_cs`)."""
    if kind == "gif":
        return sum(gif_delays_cs(frames, fps)) / 100
    return frames / fps


class GifWriter:
    """Writes a looping GIF frame by frame (module docstring). ``palette_from``: RGB bytes
    of a frame whose colours make the file's palette (the run's last frame)."""

    def __init__(self, path: Path, size: tuple[int, int], fps: float, palette_from: bytes) -> None:
        check_size(size, fps, "gif")
        self.path, self.size, self.fps = path, size, fps
        self.frames = 0
        first = self._image(palette_from)
        self._palette = first.quantize(colors=GIF_COLORS, method=Image.Quantize.MEDIANCUT)
        self._previous: Image.Image | None = None
        self._fp: BinaryIO | None = None
        self._tmp = path.with_name(path.name + ".part")
        self._fp = self._tmp.open("wb")

    def _image(self, rgb: bytes) -> Image.Image:
        if len(rgb) != self.size[0] * self.size[1] * 4:
            raise EncodeError(f"a frame of {len(rgb)} bytes is not {self.size[0]}x{self.size[1]}")
        return Image.frombytes("RGB", self.size, rgb, "raw", "BGRX")

    def _delay_ms(self, k: int) -> int:
        return 10 * (round(100 * (k + 1) / self.fps) - round(100 * k / self.fps))

    def write(self, rgb: bytes) -> None:
        """Add one frame."""
        assert self._fp is not None, "write after close"
        frame = self._image(rgb).quantize(palette=self._palette, dither=Image.Dither.NONE)
        delay = self._delay_ms(self.frames)
        if self._previous is None:
            header, _ = GifImagePlugin.getheader(frame, info={"loop": 0})
            for chunk in header:
                self._fp.write(chunk)
            box: tuple[int, int, int, int] | None = (0, 0, *self.size)
        else:
            box = ImageChops.difference(frame, self._previous).getbbox()
            if box is None:  # nothing changed: one unchanged pixel keeps the frame count
                box = (0, 0, 1, 1)
        assert box is not None
        part = frame.crop(box)
        part.putpalette(self._palette.getpalette() or [])
        params: dict[str, Any] = {"duration": delay, "disposal": 1, "loop": 0}
        for chunk in GifImagePlugin.getdata(part, offset=box[:2], **params):
            self._fp.write(chunk)
        self._previous = frame
        self.frames += 1

    def close(self) -> None:
        """Finish the file (atomically: it appears whole or not at all)."""
        if self._fp is None:
            return
        self._fp.write(b";")  # GIF trailer
        self._fp.close()
        self._fp = None
        self._tmp.replace(self.path)

    def abort(self) -> None:
        """Drop the unfinished file."""
        if self._fp is not None:
            self._fp.close()
            self._fp = None
        with contextlib.suppress(OSError):
            self._tmp.unlink()


class Mp4Writer:
    """Writes an H.264 MP4 through imageio-ffmpeg's bundled ffmpeg (module docstring)."""

    def __init__(self, path: Path, size: tuple[int, int], fps: float) -> None:
        check_size(size, fps, "mp4")
        import imageio_ffmpeg

        self.path, self.size, self.fps = path, size, fps
        self.frames = 0
        # ffmpeg picks the muxer from the name: keep .mp4 at the end of the temporary file
        self._tmp = path.with_name(f".{path.stem}.part{path.suffix or '.mp4'}")
        self._gen: Generator[None, bytes | None, None] | None = imageio_ffmpeg.write_frames(
            str(self._tmp),
            size,
            fps=fps,
            codec="libx264",
            pix_fmt_in="bgra",  # Qt RGB32 memory (B G R X); X is ignored
            pix_fmt_out="yuv420p",
            quality=None,
            macro_block_size=1,
            ffmpeg_log_level="error",
            output_params=["-preset", "veryfast", "-crf", "26", "-movflags", "+faststart"],
        )
        try:
            self._gen.send(None)  # starts ffmpeg
        except (OSError, RuntimeError) as exc:
            raise EncodeError(f"could not start ffmpeg: {exc}") from None

    def write(self, rgb: bytes) -> None:
        """Add one frame."""
        assert self._gen is not None, "write after close"
        if len(rgb) != self.size[0] * self.size[1] * 4:
            raise EncodeError(f"a frame of {len(rgb)} bytes is not {self.size[0]}x{self.size[1]}")
        try:
            self._gen.send(rgb)
        except (OSError, RuntimeError) as exc:
            raise EncodeError(f"ffmpeg failed: {exc}") from None
        self.frames += 1

    def close(self) -> None:
        """Finish the file (atomically)."""
        if self._gen is None:
            return
        gen, self._gen = self._gen, None
        try:
            gen.close()
        except (OSError, RuntimeError) as exc:
            raise EncodeError(f"ffmpeg failed: {exc}") from None
        self._tmp.replace(self.path)

    def abort(self) -> None:
        """Stop ffmpeg and drop the unfinished file."""
        if self._gen is not None:
            gen, self._gen = self._gen, None
            with contextlib.suppress(Exception):
                gen.close()
        with contextlib.suppress(OSError):
            self._tmp.unlink()
