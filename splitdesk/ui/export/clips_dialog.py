"""File → Export → Clips of the talk: which talk, into which folder, at what size and
frame rate, as which files — what ``splitdesk scenarios --export DIR --talk --size --fps
--formats`` takes (issue 22), asked in the window. :mod:`splitdesk.ui.export.talk_clips`
runs the export."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QStandardPaths
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QWidget,
)

from splitdesk.ui.export.animation_dialog import RATES, SIZES
from splitdesk.ui.render.clips import CLIP_KINDS
from splitdesk.ui.render.encoders import MAX_GIF_FPS

#: The files a scene can be written as, the ones ticked by default first: (kind, label).
KINDS: tuple[tuple[str, str, bool], ...] = (
    ("mp4", "MP4 (slides: PowerPoint, Keynote, Google Slides)", True),
    ("gif", "GIF (anything, any slide tool)", True),
    ("png", "Poster PNG (the run's last picture)", True),
    ("webp", "Animated WebP (web pages; lossless)", False),
)


@dataclass(frozen=True)
class ClipsChoice:
    """What the dialog asked: ``talk`` a scenario file or folder (``None``: the built-in
    talk), ``folder`` to write into, ``size`` (width, height) pixels, ``fps`` frames per
    second, ``kinds`` among mp4, gif, webp, png."""

    talk: Path | None
    folder: Path
    size: tuple[int, int]
    fps: float
    kinds: tuple[str, ...]


def default_folder() -> Path:
    """Where clips go unless the user says otherwise: ``splitdesk talk`` in the user's
    videos folder (home when the platform names none)."""
    videos = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.MoviesLocation)
    return Path(videos or Path.home()) / "splitdesk talk"


class ClipsDialog(QDialog):
    """Asks for a :class:`ClipsChoice`; :meth:`choice` reads it once accepted. OK is
    enabled only with a folder and at least one kind of file."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Clips of the talk")
        form = QFormLayout(self)
        intro = QLabel(
            "Every scenario of the talk as clips in the presentation look, its caption "
            "included, named 01-name.mp4, 02-… in the talk's order. Scenarios without a "
            "recording run on the built-in endpoint first, at their own pace. The export "
            "runs in a process of its own: the window stays free."
        )
        intro.setWordWrap(True)
        form.addRow(intro)

        self.talk = QLineEdit()
        self.talk.setPlaceholderText("the built-in talk")
        self.talk.setToolTip("A scenario .toml file or a folder of them; empty: the built-in talk")
        talk_row = QHBoxLayout()
        talk_row.addWidget(self.talk, 1)
        for text, pick in (("File…", self._pick_talk_file), ("Folder…", self._pick_talk_folder)):
            button = QPushButton(text)
            button.clicked.connect(pick)
            talk_row.addWidget(button)
        form.addRow("Talk:", talk_row)

        self.folder = QLineEdit(str(default_folder()))
        folder_row = QHBoxLayout()
        folder_row.addWidget(self.folder, 1)
        browse = QPushButton("Choose…")
        browse.clicked.connect(self._pick_folder)
        folder_row.addWidget(browse)
        form.addRow("Into folder:", folder_row)

        self.size_box = QComboBox()
        for size in SIZES:
            self.size_box.addItem(f"{size[0]} × {size[1]}", size)
        self.fps_box = QComboBox()
        for fps in RATES:
            if fps <= MAX_GIF_FPS:  # the GIF's cap: every kind takes it
                self.fps_box.addItem(f"{fps:g} fps", fps)
        form.addRow("Size:", self.size_box)
        form.addRow("Frame rate:", self.fps_box)
        self.kind_boxes: dict[str, QCheckBox] = {}
        for kind, label, ticked in KINDS:
            box = QCheckBox(label)
            box.setChecked(ticked)
            box.toggled.connect(self._update_ok)
            self.kind_boxes[kind] = box
            form.addRow("Files:" if kind == KINDS[0][0] else "", box)

        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        form.addRow(self.buttons)
        self.folder.textChanged.connect(self._update_ok)
        self._update_ok()

    def _update_ok(self) -> None:
        ok = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        ready = bool(self.folder.text().strip()) and any(
            b.isChecked() for b in self.kind_boxes.values()
        )
        ok.setEnabled(ready)

    def _pick_talk_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "A talk", "", "Scenario (*.toml)")
        if path:
            self.talk.setText(path)

    def _pick_talk_folder(self) -> None:
        if path := QFileDialog.getExistingDirectory(self, "A folder of scenarios"):
            self.talk.setText(path)

    def _pick_folder(self) -> None:
        if path := QFileDialog.getExistingDirectory(self, "Write the clips into"):
            self.folder.setText(path)

    def choice(self) -> ClipsChoice:
        """What was chosen (the kinds in the order the export writes them)."""
        talk = self.talk.text().strip()
        size = self.size_box.currentData()
        kinds = tuple(k for k in CLIP_KINDS if self.kind_boxes[k].isChecked())
        return ClipsChoice(
            Path(talk) if talk else None,
            Path(self.folder.text().strip()),
            (int(size[0]), int(size[1])),
            float(self.fps_box.currentData()),
            kinds,
        )
