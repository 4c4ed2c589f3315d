"""Two runs side by side: both recordings' timelines, one above the other, on one time
axis (say a vLLM server and a single-slot one).

Each timeline is the window's own :class:`~splitdesk.ui.stage.timeline.Timeline`, bound to the
run's final state rebuilt from its events
(:func:`splitdesk.core.files.recording.rebuild_state`); the lower plot's x axis is linked to the
upper one's, so zooming or panning one moves both. The headline under each is read from
the recording's figures. No network is used.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QLabel, QSplitter, QVBoxLayout, QWidget

from splitdesk.core.files.recording import Recording, rebuild_state
from splitdesk.core.run.labels import question_label
from splitdesk.ui.common.theme import Theme, ui_font
from splitdesk.ui.stage.timeline import Timeline


def headline(recording: Recording, run: int = 0) -> str:
    """ "Combined 10.4 s · Parallel 2.2 s · 4.7×" from the run's recorded figures."""
    figures = recording.runs[run].figures
    parts = []
    for group, name in (("combined", "Combined"), ("parallel", "Parallel"), ("sequential", "Seq.")):
        g = figures.get("groups", {}).get(group)
        if g and isinstance(g.get("makespan_s"), (int, float)):
            parts.append(f"{name} {g['makespan_s']:.2f} s")
    if isinstance(figures.get("speedup"), (int, float)):
        parts.append(f"speed-up {figures['speedup']:.2f}×")
    return " · ".join(parts) or "no figures"


class CompareDialog(QDialog):
    """A non-modal window with two runs' timelines on one time axis."""

    def __init__(
        self,
        first: tuple[Recording, int],
        second: tuple[Recording, int],
        theme: Theme,
        scale: float = 1.0,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Two runs on one time axis — splitdesk")
        self.setModal(False)
        self.resize(int(1200 * min(scale, 1.3)), int(760 * min(scale, 1.3)))
        self.timelines: list[Timeline] = []
        self.titles: list[QLabel] = []
        split = QSplitter(Qt.Orientation.Vertical)
        for recording, run in (first, second):
            state = rebuild_state(recording.runs[run])
            box = QWidget()
            lay = QVBoxLayout(box)
            lay.setContentsMargins(4, 4, 4, 4)
            title = QLabel(
                f"<b>{recording.describe()}</b> · {recording.runs[run].label}"
                f"<br>{headline(recording, run)}"
            )
            title.setFont(ui_font(scale, 0))
            title.setWordWrap(True)
            timeline = Timeline(theme, scale)
            labels = [question_label(q.text, q.title) for q in recording.questions]
            timeline.bind(state, recording.question_texts, labels)
            timeline.finish()
            lay.addWidget(title)
            lay.addWidget(timeline, 1)
            split.addWidget(box)
            self.timelines.append(timeline)
            self.titles.append(title)
        upper, lower = self.timelines
        lower.plot.setXLink(upper.plot)
        end = max(
            max((e.t for e in rec.runs[run].events), default=0.0) for rec, run in (first, second)
        )
        upper.plot.setXRange(0, end * 1.12, padding=0)  # room for the end labels
        outer = QVBoxLayout(self)
        outer.addWidget(split)
