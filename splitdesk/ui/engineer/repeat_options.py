"""The repeat options dialog (Engineer ▸ Repeat the comparison…): how many runs, whether
combined and parallel alternate which goes first, a discarded warm-up run, a pause between
runs and a per-run nonce in the prompts. The choices are a
:class:`~splitdesk.core.bench.repeats.RepeatOptions`, the same ``splitdesk bench --repeat``
takes from ``--warmup``, ``--pause`` and ``--no-nonce``.
"""

from __future__ import annotations

from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QLabel,
    QSpinBox,
    QWidget,
)

from splitdesk.core.bench.repeats import RepeatOptions

#: Most runs the dialog offers (K) and the longest pause it offers (s).
MAX_RUNS = 50
MAX_PAUSE_S = 600.0

NONCE_TIP = (
    "Each run's prompts open with a line of their own ([run 3f9a…]). Repeated identical "
    "prompts can hit the server's prefix cache, so later runs would skip the prefill the "
    "first one paid for and the runs would not measure the same thing."
)
ALTERNATE_TIP = (
    "One after another: even runs send combined first, odd runs parallel first, so neither "
    "side always profits from (or pays for) going first. Side by side both are sent "
    "together and there is no order to alternate."
)


class RepeatOptionsDialog(QDialog):
    """The dialog; :meth:`options` reads the choices (defaults: 5 runs, alternate on, no
    warm-up, no pause, nonce on).

    ``mode``: the window's run mode. Only choices that apply to it are offered: side by
    side both sides are sent together, so "Alternate which side goes first" is not
    offered (a line says why) and :meth:`options` has ``alternate`` off."""

    def __init__(
        self,
        parent: QWidget | None = None,
        initial: RepeatOptions | None = None,
        mode: str = "one-after-another",
    ):
        super().__init__(parent)
        self.together = mode == "side-by-side"
        self.setWindowTitle("Repeat the comparison")
        o = initial or RepeatOptions()
        form = QFormLayout(self)
        self.runs = QSpinBox()
        self.runs.setRange(1, MAX_RUNS)
        self.runs.setValue(o.repeat)
        self.runs.setToolTip("Counted runs (K); the median and min–max are over these")
        form.addRow("Runs (K):", self.runs)
        self.alternate = QCheckBox("Alternate which side goes first")
        self.alternate.setChecked(o.alternate)
        self.alternate.setToolTip(ALTERNATE_TIP)
        #: side by side: why there is no order to alternate (shown instead of the box)
        self.together_note = QLabel(
            "Side by side: combined and parallel are sent together, so there is no order "
            "to alternate."
        )
        self.together_note.setWordWrap(True)
        form.addRow(self.alternate)
        form.addRow(self.together_note)
        self.alternate.setVisible(not self.together)
        self.together_note.setVisible(self.together)
        self.warmup = QSpinBox()
        self.warmup.setRange(0, 1)
        self.warmup.setValue(o.warmup)
        self.warmup.setToolTip("A first run that is sent but not counted (a cold server)")
        form.addRow("Warm-up runs (discarded):", self.warmup)
        self.pause = QDoubleSpinBox()
        self.pause.setRange(0.0, MAX_PAUSE_S)
        self.pause.setDecimals(1)
        self.pause.setSuffix(" s")
        self.pause.setValue(o.pause_s)
        self.pause.setToolTip("Time the server gets to settle between runs")
        form.addRow("Pause between runs:", self.pause)
        self.nonce = QCheckBox("Per-run nonce in the prompts")
        self.nonce.setChecked(o.nonce)
        self.nonce.setToolTip(NONCE_TIP)
        form.addRow(self.nonce)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        run = buttons.button(QDialogButtonBox.StandardButton.Ok)
        run.setText("Run")
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)

    def options(self) -> RepeatOptions:
        """The choices as :class:`RepeatOptions`."""
        return RepeatOptions(
            repeat=self.runs.value(),
            alternate=self.alternate.isChecked() and not self.together,
            warmup=self.warmup.value(),
            pause_s=round(self.pause.value(), 1),
            nonce=self.nonce.isChecked(),
        )
