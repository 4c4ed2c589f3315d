"""The window's Engineer menu: the client's own pattern
(:mod:`splitdesk.core.measure.client_pattern`), repeats, sweeps, the stream inspector, prices.

Two checkable actions choose how the next run sends: cold connections (opened inside the
timed phase) and release as scheduled (no barrier). The pattern a run used is kept
(:attr:`EngineerMenu.used`), shown beside the speed-up in the summary and saved in the
run's recording.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QLabel,
    QMenu,
    QWidget,
)

from splitdesk.core.analyse.cost import Prices
from splitdesk.core.analyse.stream_inspector import inspect_stream
from splitdesk.core.bench.repeats import RepeatOptions
from splitdesk.core.files.prices import PricesFileError, endpoint_key, load_prices, save_prices
from splitdesk.core.measure.client_pattern import ClientPattern
from splitdesk.core.run.endpoints import EndpointSettings
from splitdesk.ui.common.tasks import spawn
from splitdesk.ui.engineer.inspector import InspectorDialog
from splitdesk.ui.engineer.repeat_options import RepeatOptionsDialog
from splitdesk.ui.engineer.repeat_session import RepeatSession
from splitdesk.ui.engineer.sweep_session import SweepMenu

if TYPE_CHECKING:
    from splitdesk.ui.port import Port


class EngineerMenu:
    """The Engineer menu of the window behind ``port``."""

    def __init__(self, port: Port) -> None:
        self.port = port
        window = port.widget
        self.menu = port.menu("&Engineer")
        client = self.menu.addMenu("Client pattern")
        client.setToolTipsVisible(True)
        self.cold = QAction("Cold connections (opened inside the timed phase)", window)
        self.cold.setCheckable(True)
        self.cold.setToolTip(
            "Off (default): every connection is opened before a phase, so TTFT measures the "
            "server. On: each request opens its own, as a plain script does."
        )
        self.as_scheduled = QAction("Release as scheduled (no barrier)", window)
        self.as_scheduled.setCheckable(True)
        self.as_scheduled.setToolTip(
            "Off (default): the N requests are built first and sent together. On: each is "
            "sent when the event loop gets to it, as a plain script's asyncio.gather does."
        )
        client.addAction(self.cold)
        client.addAction(self.as_scheduled)
        #: The pattern of the run started last.
        self.used = ClientPattern()
        self.keep_raw = QAction("Keep raw events for the stream inspector", window)
        self.keep_raw.setCheckable(True)
        self.keep_raw.setChecked(True)
        self.keep_raw.setToolTip(
            "Each response's reads as they arrived, kept for the run (right-click a pane: "
            "Inspect stream…)"
        )
        self.menu.addAction(self.keep_raw)
        repeat = self.menu.addAction("Repeat the comparison…")
        repeat.triggered.connect(self._ask_repeat)
        self.session: RepeatSession | None = None
        self.repeat_options = RepeatOptions()  #: the repeat dialog's last choices
        prices = self.menu.addAction("Prices for this endpoint…")
        prices.triggered.connect(self.edit_prices)
        self.dialogs: list[InspectorDialog] = []
        #: Sweep N = 1…Nmax… and Open a saved sweep… (splitdesk/ui/sweep_session.py)
        self.sweeps = SweepMenu(port, self.menu)
        port.stage.paneAdded.connect(lambda req, pane: self.attach_inspector(pane, req))

    def pattern(self) -> ClientPattern:
        """The pattern the menu selects now."""
        return ClientPattern(
            cold=self.cold.isChecked(),
            release="as-scheduled" if self.as_scheduled.isChecked() else "barrier",
        )

    def take(self) -> ClientPattern:
        """The pattern for a run starting now (remembered as :attr:`used`)."""
        self.used = self.pattern()
        return self.used

    def attach_inspector(self, pane: QWidget, req: int) -> None:
        """Give ``pane`` (request ``req``'s) a context menu with "Inspect stream…" (once: the
        sequential pane, shared by its requests, inspects its first)."""
        if pane.property("splitdesk_inspector"):
            return
        pane.setProperty("splitdesk_inspector", True)
        pane.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)

        def menu(pos: QPoint) -> None:
            m = QMenu(pane)
            action = m.addAction("Inspect stream…")
            action.triggered.connect(lambda: self.open_inspector(req))
            m.popup(pane.mapToGlobal(pos))

        pane.customContextMenuRequested.connect(menu)

    def open_inspector(self, req: int) -> InspectorDialog | None:
        """Open the inspector of request ``req`` of the last run; ``None`` (and a status
        line saying why) when its raw events were not kept."""
        w = self.port
        reads = getattr(w.runs, "last_raw", {}).get(req)
        if not reads:
            w.say(
                "No raw events for this request: the run is still going, or "
                "Engineer ▸ Keep raw events was off when it ran"
            )
            return None
        request = w.runs.request  # its key is masked in the raw lines
        key = request.api_key if request is not None else None
        events = inspect_stream(reads, w.endpoint_settings().api, api_key=key)
        dialog = InspectorDialog(f"request {req + 1}", events, w.widget)
        self.dialogs.append(dialog)
        dialog.finished.connect(lambda _r: self.dialogs.remove(dialog))
        dialog.show()
        return dialog

    @staticmethod
    def prices_key(s: EndpointSettings) -> str:
        """The prices' key of endpoint settings ``s`` (:func:`~splitdesk.core.files.prices.endpoint_key`)."""
        where = f"builtin:{s.profile}" if s.is_builtin else s.base_url
        return endpoint_key(s.api, where, s.model)

    def load_prices_for_run(self) -> None:
        """Read the current endpoint's prices off the GUI thread into the summary (each
        side's cost beside its time); a broken prices file is one status line."""
        w = self.port
        key = self.prices_key(w.endpoint_settings())

        async def go() -> None:
            try:
                w.stage.prices = await asyncio.to_thread(load_prices, key)
            except PricesFileError as exc:
                w.stage.prices = None
                w.say(str(exc))

        spawn(go())

    def edit_prices(self) -> QDialog:
        """The price entry dialog for the current endpoint (per million tokens; no
        defaults). Saving writes ``prices.json`` off the GUI thread."""
        w = self.port
        key = self.prices_key(w.endpoint_settings())
        dialog = QDialog(w.widget)
        dialog.setWindowTitle("Prices for this endpoint")
        form = QFormLayout(dialog)
        form.addRow(QLabel(f"{key}\nPrices per million tokens, in your currency. None is assumed."))
        boxes = []
        for label in ("Input (prompt) tokens:", "Output tokens:", "Cached input tokens:"):
            box = QDoubleSpinBox()
            box.setRange(0, 1e6)
            box.setDecimals(4)
            form.addRow(label, box)
            boxes.append(box)
        # a prompt read from the server's prefix cache is billed at its own price (OpenAI's
        # "cached input", Anthropic's cache reads); at its minimum the box says the input
        # price applies (Prices.cached_input_per_m None, core/analyse/cost.py)
        cached = boxes[2]
        cached.setRange(-1, 1e6)
        cached.setSpecialValueText("same as input")
        cached.setValue(-1)
        cached.setToolTip(
            "The price of a million prompt tokens the server read from its prefix cache"
            " (usage's cached tokens). 'same as input' bills them as input tokens."
        )
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Save
            | QDialogButtonBox.StandardButton.Reset
            | QDialogButtonBox.StandardButton.Cancel
        )
        form.addRow(buttons)
        current = w.stage.prices
        if current is not None:
            boxes[0].setValue(current.input_per_m)
            boxes[1].setValue(current.output_per_m)
            if current.cached_input_per_m is not None:
                cached.setValue(current.cached_input_per_m)

        def store(prices: Prices | None) -> None:
            w.stage.prices = prices

            async def go() -> None:
                try:
                    await asyncio.to_thread(save_prices, key, prices)
                except PricesFileError as exc:
                    w.say(str(exc))

            spawn(go())
            dialog.accept()

        def entered() -> Prices:
            return Prices(
                input_per_m=boxes[0].value(),
                output_per_m=boxes[1].value(),
                cached_input_per_m=None if cached.value() < 0 else cached.value(),
            )

        buttons.accepted.connect(lambda: store(entered()))
        buttons.button(QDialogButtonBox.StandardButton.Reset).clicked.connect(lambda: store(None))
        buttons.rejected.connect(dialog.reject)
        dialog.show()
        self.prices_dialog = dialog
        return dialog

    def _ask_repeat(self) -> RepeatOptionsDialog:
        """The repeat options dialog; Run starts the session (:meth:`repeat`)."""
        dialog = RepeatOptionsDialog(self.port.widget, self.repeat_options)
        dialog.accepted.connect(lambda: self.repeat(dialog.options()))
        dialog.show()
        self.repeat_dialog = dialog
        return dialog

    def repeat(self, options: RepeatOptions | int) -> RepeatSession:
        """Run the window's current run as ``options`` asks (an int: that many runs with
        the default options) (:class:`RepeatSession`)."""
        options = RepeatOptions(repeat=options) if isinstance(options, int) else options
        self.repeat_options = options
        self.session = RepeatSession(self.port, options)
        spawn(self.session.run(), "repeats", ends_with_window=True)
        return self.session
