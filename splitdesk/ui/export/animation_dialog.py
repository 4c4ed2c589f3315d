"""The animation export's choices in the window: size and frame rate (issue 22), as
``splitdesk export --size --fps`` takes them. Sizes: a 720p slide, 1080p, a 4K screen and
the stage's own size; frame rates 15 to 60 (a GIF at most 50, :data:`MAX_GIF_FPS`)."""

from __future__ import annotations

from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QWidget,
)

from splitdesk.ui.render.encoders import MAX_GIF_FPS, MAX_SIDE

#: The sizes offered, (width, height) pixels, the first the default.
SIZES: tuple[tuple[int, int], ...] = ((1280, 720), (1920, 1080), (3840, 2160))
#: The frame rates offered, the default first.
RATES: tuple[float, ...] = (30.0, 24.0, 15.0, 60.0)


class AnimationDialog(QDialog):
    """Asks the size and frame rate of a ``kind`` ("gif", "mp4" or "webp") animation;
    :meth:`choice` reads them once accepted. ``stage_size``: the stage's own size, offered
    too (even sides, within the caps)."""

    def __init__(self, kind: str, stage_size: tuple[int, int], parent: QWidget | None = None):
        super().__init__(parent)
        self.kind = kind
        self.setWindowTitle(f"Export the run as {kind.upper()}")
        form = QFormLayout(self)
        form.addRow(
            QLabel(
                "What the audience sees: the stage in the presentation look, its caption "
                "bar on top, played at the recorded pace."
            )
        )
        self.size_box = QComboBox()
        w, h = (min(MAX_SIDE, v - v % 2) for v in stage_size)
        sizes = list(SIZES) + ([(w, h)] if (w, h) not in SIZES and w >= 16 and h >= 16 else [])
        for size in sizes:
            label = f"{size[0]} × {size[1]}" + (" (the stage)" if size == (w, h) else "")
            self.size_box.addItem(label, size)
        self.fps_box = QComboBox()
        for fps in RATES:
            if kind != "gif" or fps <= MAX_GIF_FPS:
                self.fps_box.addItem(f"{fps:g} fps", fps)
        form.addRow("Size:", self.size_box)
        form.addRow("Frame rate:", self.fps_box)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)

    def choice(self) -> tuple[tuple[int, int], float]:
        """The size (pixels) and frame rate chosen."""
        size = self.size_box.currentData()
        return (int(size[0]), int(size[1])), float(self.fps_box.currentData())
