"""The N-sweep from the window (Engineer ▸ Sweep N = 1…Nmax…).

For N = 1 … Nmax the window's endpoint gets the first N questions of the window's set
(generated ones follow when the set is shorter, :func:`splitdesk.core.bench.sweep.
sweep_questions`), combined then in parallel, ``repeat`` times — the runs of
:func:`splitdesk.core.bench.sweep.sweep_steps`, in that order — each through the window's own
controller and engine process (off the GUI thread; the panes and timeline show each run
live). A progress dialog says which N is running and the time left (:func:`splitdesk.core
.sweep.sweep_eta_s`); Cancel stops the current run and the rest. The rows are the core's
(:func:`~splitdesk.core.bench.sweep.sweep_rows` of the complete repeats, then
:func:`~splitdesk.core.bench.sweep.sweep_document`, the document ``splitdesk sweep --json``
writes); the sweep is kept in ``<data folder>/sweeps`` and shown in a
:class:`~splitdesk.ui.engineer.sweep_view.SweepView`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QLabel,
    QMenu,
    QProgressDialog,
    QSpinBox,
)

from splitdesk.core.analyse.predict import predicted_makespan, schedule_slip_s
from splitdesk.core.bench.compare import endpoint_info
from splitdesk.core.bench.sweep import (
    SweepRun,
    SweepStep,
    sweep_document,
    sweep_eta_s,
    sweep_questions,
    sweep_rows,
    sweep_steps,
)
from splitdesk.core.files.sweep_files import SweepFileError, read_sweep, save_sweep, sweeps_dir
from splitdesk.core.measure.client_pattern import ClientPattern
from splitdesk.core.run.run_state import RunState
from splitdesk.ui.common.tasks import spawn
from splitdesk.ui.engineer.sweep_view import SweepView
from splitdesk.ui.run.controller import ControllerError, RunRequest

if TYPE_CHECKING:
    from splitdesk.ui.port import Port

log = logging.getLogger(__name__)

#: Largest N the window sweeps (as ``splitdesk sweep --max-n``).
MAX_N = 64


class SweepSession:
    """One sweep of the window's endpoint and questions; :meth:`run` returns its document.

    Attributes after :meth:`run`: ``runs`` (every finished :class:`SweepRun`), ``doc`` (the
    sweep document, ``None`` when no N finished), ``path`` (where it was kept, ``None``
    when it could not be written: the status bar says why), ``view`` (the shown
    :class:`SweepView`).
    """

    def __init__(self, port: Port, max_n: int, repeat: int = 1) -> None:
        self.port = port
        self.max_n = max_n
        self.repeat = repeat
        self.steps = sweep_steps(max_n, repeat)
        self.runs: list[SweepRun] = []
        self.cancelled = False
        self.doc: dict[str, Any] | None = None
        self.path: Path | None = None
        self.view: SweepView | None = None
        self.finished = False
        #: why the sweep stopped before its end other than Cancel (a run could not start)
        self.error: str | None = None
        self.questions: list[str] = []
        self.generated = 0
        self.client = ClientPattern()
        self.progress = QProgressDialog(
            self._label(self.steps[0], None), "Cancel", 0, len(self.steps), port.widget
        )
        self.progress.setWindowTitle("Sweeping N")
        self.progress.setWindowModality(Qt.WindowModality.NonModal)
        self.progress.setMinimumDuration(0)
        self.progress.canceled.connect(self.cancel)
        self._stop_connected = False

    def _label(self, step: SweepStep, eta: float | None) -> str:
        left = f" · about {eta:.0f} s left" if eta is not None else ""
        rep = f" (repeat {step.repeat + 1} of {self.repeat})" if self.repeat > 1 else ""
        return f"N = {step.n} of {self.max_n} · {step.mode}{rep}…{left}"

    def cancel(self) -> None:
        """Stop the current run and run no more. Between two runs (the next one being
        prepared, the controller not busy yet) the next run is not started, or stopped as
        soon as it starts."""
        self.cancelled = True
        controller = self.port.runs
        controller.stop()
        if not controller.busy and not self._stop_connected:
            controller.busyChanged.connect(self._stop_when_busy)
            self._stop_connected = True

    def _stop_when_busy(self, busy: bool) -> None:
        if busy:
            self.port.runs.stop()

    async def run(self) -> dict[str, Any] | None:
        """Run the sweep, keep it and show it (also after Cancel: the N that finished)."""
        w = self.port
        try:
            await self._run_steps()
        finally:
            self.progress.reset()
            self.progress.hide()
        rows = sweep_rows(self.runs, complete_only=True)
        if rows:
            first = self.runs[0].state.info
            where = dict(first.endpoint) if first is not None else {}
            settings = w.endpoint_settings()
            info = endpoint_info(
                where.get("url", ""),
                where.get("api", settings.api),
                where.get("model", settings.model),
                settings.profile if settings.is_builtin else None,
            )
            self.doc = sweep_document(
                info, self.questions, self.generated, self.max_n, self.repeat, rows, self.client
            )
            try:
                self.path = await asyncio.to_thread(save_sweep, self.doc)
            except SweepFileError as exc:
                w.say(f"The sweep was not kept: {exc}")
            self.view = SweepView(self.doc, self.path, w.theme, w.scale, w.widget)
            self.view.show()
            if self.error is not None:
                w.say(f"The sweep stopped after N = {rows[-1].n}: {self.error}")
            elif self.cancelled:
                w.say(f"Sweep cancelled after N = {rows[-1].n}.")
        elif self.error is not None:
            w.say(f"The sweep stopped: {self.error}")
        else:
            w.say("Sweep cancelled before N = 1 finished: nothing to show.")
        self.finished = True
        return self.doc

    async def _run_steps(self) -> None:
        w = self.port
        self.questions, self.generated = sweep_questions(w.question_texts(), self.max_n)
        self.client = w.client_pattern()
        settings = w.endpoint_settings()
        api_key = await w.api_key()
        key_problem = await w.key_problem()
        # the set's shared document opens every prompt, as in the window's own run and
        # `splitdesk sweep` (each run's sides with their own nonce: RunRequest.plan)
        context = w.question_set().context
        # The engine and the built-in endpoint start together, before the first run (whose
        # schedule slip is then read too); a failure is the first run's to say.
        starting: list[Any] = [w.runs.start_engine()]
        if settings.is_builtin:
            starting.append(w.runs.ensure_builtin(settings.profile, settings.speed))
        await asyncio.gather(*starting, return_exceptions=True)
        done: list[tuple[SweepStep, float]] = []
        for i, step in enumerate(self.steps):
            if self.cancelled:
                return
            request = RunRequest(
                endpoint=settings,
                api_key=api_key,
                questions=step.questions(self.questions),
                template=w.template(),
                mode=step.mode,
                key_problem=key_problem,
                client=self.client,
                context=context,
            )
            t0 = time.monotonic()
            run = await self._one_run(request, step)
            if run is None:
                return
            self.runs.append(run)
            done.append((step, time.monotonic() - t0))
            log.info("sweep: N = %d %s took %.2f s", step.n, step.mode, done[-1][1])
            self.progress.setValue(i + 1)
            if i + 1 < len(self.steps):
                eta = sweep_eta_s(done, self.steps[i + 1 :])
                self.progress.setLabelText(self._label(self.steps[i + 1], eta))

    async def _one_run(self, request: RunRequest, step: SweepStep) -> SweepRun | None:
        """One run through the window's controller; ``None`` when it did not finish (it
        could not start, or was stopped: the sweep ends)."""
        w, controller = self.port, self.port.runs
        loop = asyncio.get_running_loop()
        ended: asyncio.Future[RunState] = loop.create_future()
        predicted: list[float | None] = [None]

        def finished(state: RunState) -> None:
            if not ended.done():
                ended.set_result(state)

        def predictions(preds: list[Any]) -> None:
            predicted[0] = predicted_makespan(preds)

        sim = controller.sim if request.endpoint.is_builtin else None
        slip0 = await schedule_slip_s(sim.url) if sim is not None else None
        if self.cancelled:  # Cancel while the run was being prepared
            return None
        disconnect = w.on_run_shown(finished)
        controller.predictionsReady.connect(predictions)
        try:
            w.stage.say(f"sweep: N = {step.n} · {step.mode}…")
            await controller.start(request)
            state = await ended
        except ControllerError as exc:
            self.error = str(exc)
            return None
        finally:
            disconnect()
            controller.predictionsReady.disconnect(predictions)
            if self._stop_connected:
                controller.busyChanged.disconnect(self._stop_when_busy)
                self._stop_connected = False
        sim = controller.sim if request.endpoint.is_builtin else None
        slip1 = await schedule_slip_s(sim.url) if sim is not None else None
        run = SweepRun(
            step,
            state,
            predicted[0],
            slip1 - slip0 if slip0 is not None and slip1 is not None else None,
        )
        return None if run.stopped else run


class SweepMenu:
    """The Engineer menu's sweep actions: "Sweep N = 1…Nmax…" and "Open a saved sweep…"."""

    def __init__(self, port: Port, menu: QMenu) -> None:
        self.port = port
        self.session: SweepSession | None = None
        self.views: list[SweepView] = []
        menu.addAction("Sweep N = 1…Nmax…").triggered.connect(self.ask)
        menu.addAction("Open a saved sweep…").triggered.connect(self._ask_open)

    def ask(self) -> QDialog:
        """The dialog asking Nmax and the repeats K; OK starts the sweep."""
        dialog = QDialog(self.port.widget)
        dialog.setWindowTitle("Sweep N = 1…Nmax")
        form = QFormLayout(dialog)
        form.addRow(
            QLabel(
                "For N = 1…Nmax the first N questions (more are generated when the set is "
                "shorter), combined then in parallel, each on an idle endpoint."
            )
        )
        self.max_n_box = QSpinBox()
        self.max_n_box.setRange(1, MAX_N)
        self.max_n_box.setValue(8)
        self.repeat_box = QSpinBox()
        self.repeat_box.setRange(1, 20)
        self.repeat_box.setValue(1)
        form.addRow("Largest N (Nmax):", self.max_n_box)
        form.addRow("Repeats per N (K, medians):", self.repeat_box)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        form.addRow(buttons)
        buttons.accepted.connect(dialog.accept)
        buttons.rejected.connect(dialog.reject)
        dialog.accepted.connect(lambda: self.sweep(self.max_n_box.value(), self.repeat_box.value()))
        dialog.show()
        self.dialog = dialog
        return dialog

    def sweep(self, max_n: int, repeat: int = 1) -> SweepSession | None:
        """Start a sweep of N = 1…``max_n`` with ``repeat`` repeats (``None`` while the
        window is running something: the status bar says so)."""
        w = self.port
        if w.runs.busy or (self.session is not None and not self.session.finished):
            w.say("A run is in progress: stop it before sweeping.")
            return None
        self.session = SweepSession(w, max_n, repeat)
        spawn(self.session.run(), "sweep", ends_with_window=True)
        return self.session

    def _ask_open(self) -> None:
        folder = sweeps_dir()
        path, _ = QFileDialog.getOpenFileName(
            self.port.widget, "Open a saved sweep", str(folder), "Sweeps (*.json)"
        )
        if path:
            spawn(self.open(Path(path)))

    async def open(self, path: Path) -> SweepView | None:
        """Show the sweep saved in ``path`` (read off the GUI thread); a file that is not a
        sweep is one status line."""
        try:
            doc = await asyncio.to_thread(read_sweep, path)
        except SweepFileError as exc:
            self.port.say(str(exc))
            return None
        view = SweepView(doc, path, self.port.theme, self.port.scale, self.port.widget)
        self.views.append(view)
        view.finished.connect(lambda _r: self.views.remove(view))
        view.show()
        return view
