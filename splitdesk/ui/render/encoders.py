"""Animation encoders: RGB frames in, a GIF, an MP4 or an animated WebP out, one frame at
a time.

Libraries and why:

* **GIF — Pillow** (:mod:`PIL.GifImagePlugin`). Pillow's ``save(save_all=True)`` keeps
  every frame until the end (330 MB for a 12 s 1280×720 30 fps run), so frames are written
  as they come with Pillow's documented building blocks for that (``getheader`` once,
  ``getdata`` per frame). One palette for the whole file, taken from the run's last frame
  (which shows every colour of the run), so colours never flicker. Each frame after the
  first stores only the rectangle around what changed, and inside it every pixel that did
  not change is the palette's one transparent index (disposal 1 keeps the frame below):
  long runs of one index compress to almost nothing in LZW, where the changed rectangle's
  unchanged text would be stored again (the 12 s batching demo at 1280×720, 30 fps: 12.8
  MB as rectangles, 2.9 MB with transparency; benchmarks/export_bench.py). GIF delays
  are centiseconds: frame k lasts ``round(100 (k+1) / fps) − round(100 k / fps)`` cs, so
  the total is ``frames / fps`` and 30 fps alternates 3 and 4 cs.
* **MP4 and WebP — imageio-ffmpeg**: a wheel on PyPI that carries its own ``ffmpeg``
  binary (no system package, nothing downloaded at run time); raw frames are streamed to
  it through a pipe, so encoding runs in a second process beside the rendering
  (:class:`FfmpegWriter` says why splitdesk runs that process itself). MP4: H.264
  (libx264), yuv420p (plays in every browser, slide tool and phone), ``+faststart``. WebP:
  animated WebP (libwebp_anim), lossless (flat colours and text stay sharp, no chroma
  blur of coloured text), looping like a GIF but in full colour and a fraction of its
  size; browsers, Google Slides and Keynote play it, older PowerPoint does not. PyAV would
  do the same in-process but is a larger wheel and a lower-level API.

All take frames of exactly the size given at the start as **BGRX** bytes (4 a pixel,
rows top to bottom: Qt's ``RGB32`` image memory on little-endian machines, so no
conversion per frame). Raises :class:`EncodeError` for a bad size or a frame of the wrong size.
"""

from __future__ import annotations

import atexit
import contextlib
import subprocess
import tempfile
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol

import numpy as np

from splitdesk.core.files.atomic import AtomicFile

if TYPE_CHECKING:
    from PIL import Image

# Pillow is imported where a GIF is written, not when the window starts (about 60 ms of a
# cold start for a window that may never export a GIF; issue 25).

#: Largest side of an animation (pixels) and highest frame rate: a 4K 60 fps video is
#: the most a slide can use; more only makes huge files.
MAX_SIDE = 3840
MAX_FPS = 60
#: GIF players clamp delays under 2 cs to 10 cs: 50 fps is the fastest GIF that plays right.
MAX_GIF_FPS = 50
#: Colours of a GIF's one palette, the transparent index included. The window draws a few
#: dozen flat colours plus anti-aliased text edges: 64 keep text crisp and make LZW codes
#: shorter than 255 would (the 12 s batching demo at 1280×720, 30 fps: see
#: benchmarks/export_bench.py).
GIF_COLORS = 64
#: The animation kinds and their file suffixes.
KINDS = ("mp4", "gif", "webp")
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
    of a frame whose colours make the file's palette (the run's last frame). The frames go
    to a temporary file beside ``path`` (:class:`~splitdesk.core.files.atomic.AtomicFile`),
    renamed over it by :meth:`close`; :meth:`abort` leaves nothing."""

    #: The palette index that stands for "as the frame before" in every frame after the first.
    TRANSPARENT = GIF_COLORS - 1

    def __init__(self, path: Path, size: tuple[int, int], fps: float, palette_from: bytes) -> None:
        check_size(size, fps, "gif")
        self.path, self.size, self.fps = path, size, fps
        self.frames = 0
        from PIL import Image

        first = self._image(palette_from)
        self._palette = first.quantize(colors=GIF_COLORS - 1, method=Image.Quantize.MEDIANCUT)
        colours = (self._palette.getpalette() or [])[: 3 * (GIF_COLORS - 1)]
        colours += [0, 0, 0] * (GIF_COLORS - len(colours) // 3)  # index 63: transparent
        self._colours = colours
        self._previous: np.ndarray[Any, np.dtype[np.uint8]] | None = None
        self._target = AtomicFile(path)
        self._fp: BinaryIO | None = self._target.temp.open("wb")
        _OPEN.add(self)

    def _image(self, rgb: bytes) -> Image.Image:
        if len(rgb) != self.size[0] * self.size[1] * 4:
            raise EncodeError(f"a frame of {len(rgb)} bytes is not {self.size[0]}x{self.size[1]}")
        from PIL import Image

        return Image.frombytes("RGB", self.size, rgb, "raw", "BGRX")

    def _delay_ms(self, k: int) -> int:
        return 10 * (round(100 * (k + 1) / self.fps) - round(100 * k / self.fps))

    def _indexed(self, pixels: np.ndarray[Any, np.dtype[np.uint8]]) -> Image.Image:
        from PIL import Image

        image = Image.fromarray(pixels, "P")
        image.putpalette(self._colours)
        return image

    def write(self, rgb: bytes) -> None:
        """Add one frame."""
        from PIL import GifImagePlugin, Image

        fp = self._fp
        if fp is None:
            raise EncodeError("the GIF was closed or aborted")
        frame = self._image(rgb).quantize(palette=self._palette, dither=Image.Dither.NONE)
        pixels = np.asarray(frame, dtype=np.uint8)
        params: dict[str, Any] = {"duration": self._delay_ms(self.frames), "disposal": 1}
        previous = self._previous
        if previous is None:
            part, offset = self._indexed(pixels), (0, 0)
            # optimize=False: the global palette keeps all 64 entries in their order, so
            # index 63 is the transparent one in every frame (frames have no own palette).
            header, _ = GifImagePlugin.getheader(part, info={"loop": 0, "optimize": False})
            for chunk in header:
                fp.write(chunk)
        else:
            changed = pixels != previous
            rows, cols = np.nonzero(changed.any(axis=1))[0], np.nonzero(changed.any(axis=0))[0]
            if rows.size == 0:  # nothing changed: one transparent pixel keeps the frame count
                y0, y1, x0, x1 = 0, 1, 0, 1
            else:
                y0, y1, x0, x1 = int(rows[0]), int(rows[-1]) + 1, int(cols[0]), int(cols[-1]) + 1
            box = pixels[y0:y1, x0:x1].copy()
            box[~changed[y0:y1, x0:x1]] = self.TRANSPARENT
            part, offset = self._indexed(box), (x0, y0)
            params["transparency"] = self.TRANSPARENT
        for chunk in GifImagePlugin.getdata(part, offset=offset, **params):
            fp.write(chunk)
        self._previous = pixels
        self.frames += 1

    def close(self) -> None:
        """Finish the file (atomically: it appears whole or not at all)."""
        if self._fp is None:
            return
        fp, self._fp = self._fp, None
        _OPEN.discard(self)
        try:
            fp.write(b";")  # GIF trailer
            fp.close()
            self._target.commit()
        except OSError:
            self._target.discard()
            raise

    def abort(self) -> None:
        """Drop the unfinished file (idempotent, safe from any thread)."""
        _OPEN.discard(self)
        fp, self._fp = self._fp, None
        if fp is not None:
            with contextlib.suppress(OSError, ValueError):
                fp.close()
        self._target.discard()


#: ffmpeg's output options per kind (after the raw-frame input).
_FFMPEG_OUTPUT = {
    "mp4": [
        *("-vcodec", "libx264", "-pix_fmt", "yuv420p", "-preset", "veryfast", "-crf", "26"),
        *("-movflags", "+faststart", "-f", "mp4"),
    ],
    # lossless: the stage is flat colour and text; lossy WebP blurs coloured text.
    # compression_level 2 (of 0-6): a 1920×1080 run encodes faster than it plays.
    "webp": [
        *("-vcodec", "libwebp_anim", "-lossless", "1", "-compression_level", "2"),
        *("-pix_fmt", "bgra", "-loop", "0", "-f", "webp"),
    ],
}


class FfmpegWriter:
    """Writes an H.264 MP4 (``kind`` "mp4") or a looping lossless animated WebP ("webp")
    through imageio-ffmpeg's bundled ffmpeg (module docstring).

    splitdesk starts that ffmpeg itself (``imageio_ffmpeg.get_ffmpeg_exe``) rather than
    through ``imageio_ffmpeg.write_frames``, whose generator owns the process: closing it
    early waits for ffmpeg to encode every frame already piped (and finish the file), and
    nothing can kill it and reap it at once. Here :meth:`abort` kills ffmpeg, waits for it
    and removes the temporary file, so a cancelled export or a closed window leaves no
    process and no partial file. The output goes to a temporary file beside ``path``
    (``-f``: ffmpeg cannot take the container from the temporary file's name), renamed by
    :meth:`close`.
    """

    def __init__(self, path: Path, size: tuple[int, int], fps: float, kind: str = "mp4") -> None:
        if kind not in _FFMPEG_OUTPUT:
            raise EncodeError(f"ffmpeg writes {' or '.join(_FFMPEG_OUTPUT)}, not {kind!r}")
        check_size(size, fps, kind)
        import imageio_ffmpeg

        self.path, self.size, self.fps, self.kind = path, size, fps, kind
        self.frames = 0
        self._target = AtomicFile(path)
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as ffmpeg
        command = [
            imageio_ffmpeg.get_ffmpeg_exe(),
            *("-y", "-v", "error", "-f", "rawvideo", "-vcodec", "rawvideo"),
            *("-s", f"{size[0]}x{size[1]}"),
            *("-pix_fmt", "bgra"),  # Qt RGB32 memory (B G R X); X is ignored
            *("-r", f"{fps:g}", "-i", "-", "-an"),
            *_FFMPEG_OUTPUT[kind],
            str(self._target.temp),
        ]
        try:
            self._proc: subprocess.Popen[bytes] | None = subprocess.Popen(
                command, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=self._stderr
            )
        except OSError as exc:
            self._target.discard()
            self._stderr.close()
            raise EncodeError(f"could not start ffmpeg: {exc}") from None
        _OPEN.add(self)

    def _ffmpeg_said(self) -> str:
        with contextlib.suppress(OSError, ValueError):
            self._stderr.seek(0)
            text = self._stderr.read().decode("utf-8", "replace").strip()
            return text.splitlines()[-1] if text else ""
        return ""

    def write(self, rgb: bytes) -> None:
        """Add one frame."""
        proc = self._proc
        if proc is None or proc.stdin is None:
            raise EncodeError(f"the {self.kind.upper()} was closed or aborted")
        if len(rgb) != self.size[0] * self.size[1] * 4:
            raise EncodeError(f"a frame of {len(rgb)} bytes is not {self.size[0]}x{self.size[1]}")
        try:
            proc.stdin.write(rgb)
        except (OSError, ValueError) as exc:
            said = self._ffmpeg_said()
            raise EncodeError(f"ffmpeg failed: {said or exc}") from None
        self.frames += 1

    def close(self) -> None:
        """Finish the file (atomically): ffmpeg encodes what is piped and exits."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        _OPEN.discard(self)
        try:
            if proc.stdin is not None:
                proc.stdin.close()
            code = proc.wait()
            if code != 0:
                raise EncodeError(f"ffmpeg failed (exit status {code}): {self._ffmpeg_said()}")
            self._target.commit()
        except BaseException:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            self._target.discard()
            raise
        finally:
            self._stderr.close()

    def abort(self) -> None:
        """Kill ffmpeg, wait for it and drop the unfinished file (idempotent, quick, safe
        from any thread)."""
        _OPEN.discard(self)
        proc, self._proc = self._proc, None
        if proc is not None:
            with contextlib.suppress(OSError):
                proc.kill()
            with contextlib.suppress(OSError, ValueError):
                if proc.stdin is not None:
                    proc.stdin.close()
            proc.wait()
            with contextlib.suppress(OSError):
                self._stderr.close()
        self._target.discard()


#: Writers not yet closed or aborted (:func:`abort_open_writers`).
_OPEN: weakref.WeakSet[GifWriter | FfmpegWriter] = weakref.WeakSet()


def abort_open_writers() -> int:
    """Abort every animation still being written (the window closing, the process
    exiting): no ffmpeg left running, no partial file left. Returns how many there were."""
    writers = list(_OPEN)
    for writer in writers:
        writer.abort()
    return len(writers)


atexit.register(abort_open_writers)
