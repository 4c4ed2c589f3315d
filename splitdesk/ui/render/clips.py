"""Clips for any slide deck: every scene of a talk as an animation and a poster picture.

A *scene* is a scenario (:mod:`splitdesk.core.files.scenarios`) with the recording of its
run (its own recording, or one just made on the built-in endpoint by ``splitdesk
scenarios --export``). Each scene is rendered on a bare stage in the presentation look
at the size asked, the caption bar saying what presentation mode says for it — ``3 / 11 ·
Rate limit of 2``, its caption and, at the end, the measured verdict
(:func:`~splitdesk.ui.render.exports.render_animation`) — as an MP4, a GIF and a poster
PNG (the run's last picture), an animated WebP on request, named ``NN-<scenario>.<kind>``
so a folder lists them in the talk's order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import Qt

from splitdesk.core.files.recording import Recording
from splitdesk.ui.common.theme import Theme
from splitdesk.ui.render.exports import (
    AnimationOptions,
    ReplayFrames,
    render_animation,
    save_png,
    widget_image,
)

#: What a scene can be rendered as, in order: animations, then the poster picture.
CLIP_KINDS = ("mp4", "gif", "webp", "png")
#: What it is rendered as unless asked otherwise (WebP: for a web page, on request).
DEFAULT_KINDS = ("mp4", "gif", "png")


@dataclass(frozen=True)
class Scene:
    """One scene of a talk: the scenario's ``name``, ``title`` and ``caption``, its place
    (``index`` 1-based of ``total``) and the ``recording`` whose first run it shows."""

    name: str
    title: str
    caption: str
    index: int
    total: int
    recording: Recording

    @property
    def where(self) -> str:
        """The caption bar's first line, as presentation mode says it."""
        return f"{self.index} / {self.total} · {self.title}"

    def file(self, folder: Path, kind: str) -> Path:
        """The scene's file of ``kind`` in ``folder``: ``03-rate-limit.mp4``, the poster
        ``03-rate-limit.png``."""
        return folder / f"{self.index:02d}-{self.name}.{kind}"


async def render_scene(
    scene: Scene,
    folder: Path,
    theme: Theme,
    size: tuple[int, int] = (1280, 720),
    fps: float = 30.0,
    kinds: tuple[str, ...] = DEFAULT_KINDS,
    progress: Callable[[str, int, int], bool] | None = None,
) -> list[Path]:
    """Write ``scene``'s files of ``kinds`` (``mp4``, ``gif``, ``webp``, ``png``) into ``folder``;
    returns their paths. ``progress(kind, done, total)`` after each frame; False cancels
    (:class:`~splitdesk.ui.render.exports.ExportCancelledError`, no partial file). Raises
    :class:`~splitdesk.ui.render.encoders.EncodeError` and ``OSError`` as
    :func:`~splitdesk.ui.render.exports.render_animation` does."""
    written = []
    caption = (scene.where, scene.caption)
    for kind in kinds:
        path = scene.file(folder, kind)
        if kind == "png":
            frames = ReplayFrames(scene.recording, 0, size, theme, caption=caption)
            try:
                await frames.frame(frames.duration)  # the run's last picture
                image = widget_image(frames.stage)
                if (image.width(), image.height()) != size:  # as the animation frames are
                    image = image.scaled(
                        *size,
                        Qt.AspectRatioMode.IgnoreAspectRatio,
                        Qt.TransformationMode.SmoothTransformation,
                    )
                save_png(image, path)
            finally:
                frames.dispose()
        else:

            def each(done: int, total: int, kind: str = kind) -> bool:
                return progress(kind, done, total) if progress is not None else True

            opts = AnimationOptions(kind, size, fps, 0, "present", caption)
            await render_animation(scene.recording, path, opts, theme, progress=each)
        written.append(path)
    return written
