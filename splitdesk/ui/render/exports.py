"""Pictures and animations of a run: the timeline as PNG (2× by default, for slides) or
SVG (pyqtgraph's exporters), the stage as PNG, and a replay rendered offscreen as an MP4,
a GIF or an animated WebP at a fixed size and frame rate.

The animation (:func:`render_animation`) plays one run of a recording on a bare
:class:`~splitdesk.ui.stage.stage.Stage` of its own, never shown on screen
(``WA_DontShowOnScreen``) and never inside a window: what the audience sees, in the
presentation look at the size asked (caption bar, large type, the presentation
palette), driven by a :class:`~splitdesk.ui.stage.playback.StagePlayer` and moved to
each frame's moment with its ``seek`` (recorded time, not wall time: rendering can be
slower or faster than real time and the file plays at the recorded pace). Frame ``k`` shows
the run at ``min(k / fps, duration)``; there are :func:`frame_count` frames, so the file
lasts ``frames / fps`` seconds. Between frames the coroutine yields to the event loop, so
a window doing this stays responsive, and a cancel request stops it at the next frame.
Encoding: :mod:`splitdesk.ui.render.encoders` (Pillow for GIF, imageio-ffmpeg for MP4
and WebP).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QBuffer, QByteArray, QCoreApplication, QEvent, QIODevice, Qt
from PySide6.QtGui import QFontMetrics, QImage
from PySide6.QtWidgets import QGraphicsItem, QGraphicsView, QWidget

from splitdesk.core.analyse.diagnosis import diagnose_state
from splitdesk.core.analyse.plain import VerdictKind, measured_verdict
from splitdesk.core.files.atomic import write_atomic
from splitdesk.core.files.recording import Recording
from splitdesk.core.run.run_state import RunState
from splitdesk.ui.common.follow_end import EndFollower
from splitdesk.ui.common.theme import Theme, dress, present_scale, present_theme, ui_font
from splitdesk.ui.render import svg_fix
from splitdesk.ui.render.encoders import (
    KINDS,
    MAX_SECONDS,
    EncodeError,
    FfmpegWriter,
    FrameWriter,
    GifWriter,
    check_size,
)
from splitdesk.ui.render.svg_portable import portable_svg
from splitdesk.ui.stage.playback import StagePlayer
from splitdesk.ui.stage.stage import Look, Stage

if TYPE_CHECKING:
    from splitdesk.ui.stage.timeline import Timeline

#: Default scale of PNG exports (slides are shown on 2× screens and projectors).
PNG_SCALE = 2.0
#: Largest side of a PNG export (pixels).
MAX_PNG_SIDE = 16000


class ExportCancelledError(Exception):
    """The user cancelled an export; nothing was written."""


def _check_png_path(path: Path) -> None:
    folder = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise OSError(f"{path}: is a folder; give a file name")
    if not folder.is_dir():
        raise OSError(f"{path}: folder {folder} does not exist")


@contextmanager
def drawn_in_full(widget: QWidget) -> Iterator[None]:
    """While inside, every graphics item shown in ``widget`` (and the views in it) draws
    itself, none from the pixmap it keeps on screen (``QGraphicsItem.cacheMode``: the
    timeline's and server lane's axes are cached, so a frame that moves the "now" line or
    adds a sample blits them). An export then gets the items' own drawing: SVG text for
    lane names and tick numbers, not an embedded bitmap, and crisp ticks at 2×. The cache
    modes are restored on exit."""
    views = widget.findChildren(QGraphicsView)
    if isinstance(widget, QGraphicsView):
        views.append(widget)
    cached = [
        (item, item.cacheMode())
        for view in views
        if view.scene() is not None
        for item in view.scene().items()
        if item.cacheMode() != QGraphicsItem.CacheMode.NoCache
    ]
    for item, _mode in cached:
        item.setCacheMode(QGraphicsItem.CacheMode.NoCache)
    try:
        yield
    finally:
        for item, mode in cached:
            item.setCacheMode(mode)


@contextmanager
def every_lane(timeline: Timeline) -> Iterator[None]:
    """While inside, the timeline's plot is tall enough for every lane at the normal lane
    pitch (names at the normal size), laid out for that height: an export then holds
    every lane, not just those the window has room for (the rest are behind the lane
    scroll bar on screen, or packed into one "Parallel (N)" block). The plot's size and the lane scroll position are restored on
    exit. Nothing changes when every lane is already shown."""
    from splitdesk.ui.stage.timeline import LANE_PITCH

    n = len(timeline.lanes)
    if timeline.lanes_shown >= n and not timeline.packed:
        yield
        return
    plot, bar = timeline.plot, timeline.lane_bar
    old, top = plot.size(), bar.value()
    chrome = plot.height() - plot.getPlotItem().getViewBox().height()  # axis, margins
    pitch = QFontMetrics(ui_font(timeline.scale, 0)).height() * LANE_PITCH
    plot.resize(old.width(), math.ceil(chrome + n * pitch) + 2)
    timeline.refresh()  # lanes, names and labels laid out for the new height
    _settle(timeline)
    try:
        yield
    finally:
        plot.resize(old)
        timeline.refresh()
        bar.setValue(top)
        _settle(timeline)


def _settle(timeline: Timeline) -> None:
    """Apply now the plot's pending layout (the lane-name axis's new width), which Qt
    would do on its next event loop pass: else the exporter draws the old width and
    pyqtgraph drops the names that no longer fit."""
    layout = timeline.plot.getPlotItem().layout
    layout.invalidate()
    layout.activate()


def timeline_image(timeline: Timeline, scale: float = PNG_SCALE) -> QImage:
    """The timeline's plot, every lane (:func:`every_lane`), drawn at ``scale`` × its size
    (pyqtgraph's ``ImageExporter``). Raises ``ValueError`` for a scale giving more than
    :data:`MAX_PNG_SIDE` pixels a side."""
    with every_lane(timeline), drawn_in_full(timeline.plot):
        return _plot_image(timeline, scale)


def _plot_image(timeline: Timeline, scale: float) -> QImage:
    import pyqtgraph.exporters as ex

    item = timeline.plot.getPlotItem()
    rect = item.sceneBoundingRect()
    width = max(1, round(rect.width() * scale))
    height = max(1, round(rect.height() * scale))
    if max(width, height) > MAX_PNG_SIDE or scale <= 0:
        raise ValueError(f"{width}x{height}: a PNG side may be at most {MAX_PNG_SIDE} pixels")
    exporter = ex.ImageExporter(item)
    exporter.parameters()["width"] = width
    exporter.parameters()["height"] = height  # kept: rounding must not change the size
    image: QImage = exporter.export(toBytes=True)
    if image.width() != width or image.height() != height:
        image = image.scaled(width, height)
    return image


def save_png(image: QImage, path: Path) -> tuple[int, int]:
    """Write ``image`` to ``path`` as PNG (safe in a worker thread). Returns its size.
    Raises ``OSError`` when the file cannot be written."""
    _check_png_path(path)
    write_atomic(path, png_bytes(image))  # whole or not at all (core/files/atomic.py)
    return image.width(), image.height()


def png_bytes(image: QImage, fmt: str = "PNG") -> bytes:
    """``image`` encoded as PNG (or ``fmt``, a format Qt writes: ``JPG``, ``BMP`` …), to be
    written with :func:`~splitdesk.core.files.atomic.write_atomic`. Safe in a worker
    thread (QImage is reentrant). Raises ``OSError`` when Qt cannot encode it."""
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    # PySide6 takes the format as str; its stubs say bytes
    if not image.save(buffer, fmt):  # type: ignore[call-overload]
        raise OSError(f"Qt could not encode the image as {fmt}")
    buffer.close()
    return bytes(data.data())


def timeline_png(timeline: Timeline, path: Path, scale: float = PNG_SCALE) -> tuple[int, int]:
    """Save the timeline's plot as PNG at ``scale`` × its size on screen
    (:func:`timeline_image`). Returns (width, height) in pixels. Raises ``OSError`` when
    the file cannot be written, ``ValueError`` for a scale over the cap."""
    _check_png_path(path)
    return save_png(timeline_image(timeline, scale), path)


def timeline_svg_bytes(timeline: Timeline) -> bytes:
    """The timeline's plot, every lane (:func:`every_lane`), as SVG (pyqtgraph's
    ``SVGExporter``, with :mod:`splitdesk.ui.render.svg_fix` for Qt ≥ 6.11). Lane names are SVG
    text."""
    import pyqtgraph.exporters as ex

    svg_fix.install()
    with every_lane(timeline), drawn_in_full(timeline.plot):
        text = ex.SVGExporter(timeline.plot.getPlotItem()).export(toBytes=True)
    # sized, and in a font other programs have (ui/render/svg_portable.py)
    return portable_svg(text if isinstance(text, bytes) else str(text).encode("utf-8"))


def timeline_svg(timeline: Timeline, path: Path) -> None:
    """Save :func:`timeline_svg_bytes` to ``path``. Raises ``OSError`` when the file
    cannot be written."""
    _check_png_path(path)
    write_atomic(path, timeline_svg_bytes(timeline))


def widget_image(widget: QWidget, scale: float = 1.0) -> QImage:
    """``widget`` painted into an image at ``scale`` × its size (crisp text: the widget
    paints at that device pixel ratio, it is not an enlarged screenshot)."""
    w, h = round(widget.width() * scale), round(widget.height() * scale)
    image = QImage(w, h, QImage.Format.Format_RGB32)
    image.setDevicePixelRatio(scale)
    image.fill(widget.palette().window().color())
    with drawn_in_full(widget):
        widget.render(image)
    image.setDevicePixelRatio(1.0)
    return image


def window_png(window: QWidget, path: Path, scale: float = 1.0) -> tuple[int, int]:
    """Save the whole window as PNG at ``scale`` × its size. Returns (width, height)."""
    _check_png_path(path)
    image = widget_image(window, scale)
    if max(image.width(), image.height()) > MAX_PNG_SIDE:
        raise ValueError(f"a PNG side may be at most {MAX_PNG_SIDE} pixels")
    return save_png(image, path)


# -- animation ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class AnimationOptions:
    """What to render: ``kind`` "mp4", "gif" or "webp"; ``size`` (width, height) pixels; ``fps``
    frames per second; ``run``: which run of the recording (0-based); ``look``: the
    stage's look (the audience's, by default); ``caption``: what its caption bar says
    (where, caption)."""

    kind: str
    size: tuple[int, int] = (1280, 720)
    fps: float = 30.0
    run: int = 0
    look: Look = "present"
    caption: tuple[str, str] | None = None


def frame_count(duration_s: float, fps: float) -> int:
    """Frames of an animation of a ``duration_s``-second run: ``ceil(duration × fps) + 1``
    (frame 0 at the start, the last one at the end)."""
    return math.ceil(max(0.0, duration_s) * fps - 1e-9) + 1


def _bgrx(image: QImage, size: tuple[int, int]) -> bytes:
    """``image`` at ``size`` as 4 bytes a pixel, B G R X (Qt's RGB32 in memory on
    little-endian machines; the encoders read it as such: no conversion per frame)."""
    if (image.width(), image.height()) != size:
        image = image.scaled(
            size[0],
            size[1],
            Qt.AspectRatioMode.IgnoreAspectRatio,
            Qt.TransformationMode.SmoothTransformation,
        )
    if image.format() != QImage.Format.Format_RGB32:
        image = image.convertToFormat(QImage.Format.Format_RGB32)
    w, h, stride = image.width(), image.height(), image.bytesPerLine()
    data = bytes(image.constBits())
    if stride == w * 4:
        return data[: w * h * 4]
    return b"".join(data[y * stride : y * stride + w * 4] for y in range(h))


class ReplayFrames:
    """A stage of its own, never shown on screen, playing run ``run`` of ``recording``
    paused; :meth:`frame` paints it at any recorded moment. ``look``: ``"present"`` (the
    audience's: caption bar, large type for ``size``, the presentation palette of
    ``theme``) or ``"window"`` (the engineer's, at ``scale``). ``caption``: what the
    caption bar says (where, caption; default the recording's description and title).
    Call :meth:`dispose` when done."""

    def __init__(
        self,
        recording: Recording,
        run: int,
        size: tuple[int, int],
        theme: Theme,
        scale: float | None = None,
        look: Look = "present",
        caption: tuple[str, str] | None = None,
    ) -> None:
        if look == "present":
            theme = present_theme(theme)
            scale = present_scale(*size) if scale is None else scale
        scale = 1.0 if scale is None else scale
        stage = Stage(theme, scale, look)
        dress(stage, theme, scale)
        stage.set_idle_text("")
        stage.grid.scrolls = False  # a clip cannot be scrolled: "+2 more not shown"
        stage.timeline.scrolls = False
        where, text = caption or (recording.describe(), recording.title)
        stage.caption.where.setText(where)
        stage.caption.caption.setText(text)
        stage.caption.keys.setText("")
        stage.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen, True)
        stage.resize(*size)
        stage.show()
        self.stage = stage
        self.size = size
        self.look: Look = look
        self.player = StagePlayer(stage, recording, run)
        self.player.finished.connect(self._measured)
        #: the measured line the end will show, held (undrawn) from the first frame so the
        #: caption bar has its final height throughout: nothing moves when it appears
        self._end: tuple[str, VerdictKind] | None = None
        if look == "present":
            final = RunState()
            for ev in recording.runs[run].events:
                final.apply(ev)
            if final.ended is not None:
                v = measured_verdict(final, diagnose_state(final))
                self._end = (f"Measured: {v.text}", v.kind)
        self.player.start_paused()
        self.duration = self.player.duration

    def _measured(self, state: RunState) -> None:
        """At the end, the measured line beside the caption (as presentation mode says it)."""
        if self.look == "present":
            v = measured_verdict(state, diagnose_state(state))
            self.stage.caption.show_measured(f"Measured: {v.text}", v.kind)

    def settle(self) -> None:
        """Paint what the views have pending (their throttles), now."""
        stage = self.stage
        for pane in stage.panes.values():
            pane.throttle.flush()
        stage.timeline.throttle.request()
        stage.timeline.throttle.flush()
        stage.summary.throttle.request()
        stage.summary.throttle.flush()

    async def frame(self, t: float) -> bytes:
        """The stage at recorded time ``t`` (seconds) as BGRX bytes of :attr:`size`; the
        caption's measured line shows only at the run's end (as presentation mode says it
        once the run has ended)."""
        self.player.seek(t)
        if not self.player.done:
            if self._end is not None:
                self.stage.caption.show_measured(*self._end, hidden=True)
            else:
                self.stage.caption.show_measured("")
        await asyncio.sleep(0)  # deferred updates run
        self.settle()
        # every layout this frame changed, done before the picture: a label's new text
        # (the measured line, a pane's end) re-lays its parents only when the posted
        # LayoutRequest is handled, and a frame grabbed before that showed the caption
        # bar cut and text half-scrolled
        for _ in range(3):
            QCoreApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest.value)
            for follower in self.stage.findChildren(EndFollower):  # text views at their end
                follower.flush()
        return _bgrx(widget_image(self.stage), self.size)

    def dispose(self) -> None:
        """Drop the stage and its player."""
        self.player.stop()
        self.player.deleteLater()
        self.stage.hide()
        self.stage.deleteLater()


def _writer(opts: AnimationOptions, path: Path, palette_frame: bytes) -> FrameWriter:
    if opts.kind == "gif":
        return GifWriter(path, opts.size, opts.fps, palette_frame)
    return FfmpegWriter(path, opts.size, opts.fps, opts.kind)


async def render_animation(
    recording: Recording,
    path: Path,
    opts: AnimationOptions,
    theme: Theme,
    progress: Callable[[int, int], bool] | None = None,
) -> int:
    """Render run ``opts.run`` of ``recording`` to ``path`` (module docstring). ``progress(
    done, total)`` is called after each frame; returning False cancels. Returns the number
    of frames written. Raises :class:`ExportCancelledError` (no file left behind),
    :class:`~splitdesk.ui.render.encoders.EncodeError` for sizes, rates or runs over the caps and
    encoder failures, ``OSError`` when the file cannot be written. Encoding runs in a
    worker thread (GIF) or ffmpeg's own process (MP4, WebP)."""
    if opts.kind not in KINDS:
        raise EncodeError(f"unknown animation kind {opts.kind!r} ({', '.join(KINDS)})")
    check_size(opts.size, opts.fps, opts.kind)
    if not 0 <= opts.run < len(recording.runs):
        raise EncodeError(f"the recording holds {len(recording.runs)} run(s), not {opts.run + 1}")
    _check_png_path(path)
    duration = recording.runs[opts.run].duration_s
    if duration > MAX_SECONDS:
        raise EncodeError(
            f"the run lasts {duration:.0f} s; animations are capped at {MAX_SECONDS:.0f} s"
        )
    total = frame_count(duration, opts.fps)
    frames = ReplayFrames(
        recording, opts.run, opts.size, theme, look=opts.look, caption=opts.caption
    )
    writer: FrameWriter | None = None
    pending: asyncio.Future[None] | None = None
    try:
        last = await frames.frame(frames.duration)  # its colours make the GIF palette
        writer = await asyncio.to_thread(_writer, opts, path, last)
        for k in range(total):
            rgb = await frames.frame(min(k / opts.fps, frames.duration))
            if pending is not None:
                await pending
            pending = asyncio.ensure_future(asyncio.to_thread(writer.write, rgb))
            if progress is not None and not progress(k + 1, total):
                await pending
                raise ExportCancelledError("cancelled")
        if pending is not None:
            await pending
        await asyncio.to_thread(writer.close)
        return writer.frames
    except BaseException:
        # Cancelled (Cancel, the window closing) or failed: a frame still being written
        # finishes first, then the writer is aborted at once, here (kill ffmpeg, drop the
        # partial file): the loop may not run again after a close.
        if pending is not None and not pending.done():
            with contextlib.suppress(BaseException):
                await asyncio.wait([pending], timeout=2.0)
        if writer is not None:
            writer.abort()
        raise
    finally:
        frames.dispose()
