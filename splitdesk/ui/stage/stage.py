"""The stage: one widget that shows one run, whoever drives it.

A live run (the window's controller), a replay (:mod:`splitdesk.ui.stage.playback`), a
scenario in presentation mode and an exported picture or clip all show a run the same
way: they drive a :class:`Stage` through its small API, so what each shows cannot drift
apart.

- :meth:`Stage.plan` — a new run is coming: clear the last one, lay out its panes (a live
  run's are built a slice per event-loop turn; the run does not wait for them).
- :meth:`Stage.bind` — the run's :class:`~splitdesk.core.run.run_state.RunState`: every
  view reads it from now on, on its own throttle.
- :meth:`Stage.predictions` — the cost model's predicted requests (ghost bars, "predicted
  4.5×"; ignored in the presentation look).
- :meth:`Stage.finish` — the run ended: final figures everywhere, then :attr:`finished`
  (a live run's end is shown over several event-loop turns, so 64 panes never freeze the
  window).
- :meth:`Stage.clear` — an empty stage saying what comes next.
- :meth:`Stage.restyle` — another theme, type scale or look (``"window"`` or ``"present"``):
  the views are rebuilt and the run on show is shown again from its state.

What it holds: the caption bar (presentation look), the combined column (the combined
pane and the sequential baseline), the parallel panes' grid, the timeline with the tokens
chart beside it, the server lane and the summary strip. Every lane — the server's
included — is drawn on one time axis: seconds since the run started
(:attr:`~splitdesk.core.run.events.RunStarted` ``t0``), in every mode. The stage has no
controller, menus or settings, and measures nothing.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Literal

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QFontMetrics, QResizeEvent, QShowEvent
from PySide6.QtWidgets import (
    QApplication,
    QHBoxLayout,
    QLabel,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from splitdesk.core.analyse.cost import Prices
from splitdesk.core.analyse.predict import PredictedRequest
from splitdesk.core.measure.client_cpu import ObserverEffect
from splitdesk.core.measure.server_metrics import LoadSeries, series_of
from splitdesk.core.run.events import RequestPlanned, RunEnded, RunEvent, TextReceived
from splitdesk.core.run.labels import question_label
from splitdesk.core.run.plans import RequestSpec, RunPlan
from splitdesk.core.run.run_state import RunState
from splitdesk.ui.common.follow_end import follow_end
from splitdesk.ui.common.theme import Theme, lane_hex, ui_font
from splitdesk.ui.stage.answers import AnswersDialog
from splitdesk.ui.stage.caption import CaptionBar
from splitdesk.ui.stage.grid import PaneGrid, dispose
from splitdesk.ui.stage.panes import (
    MANY_PANES,
    MANY_PANES_MS,
    CombinedPane,
    ElidedLabel,
    RequestPane,
    SequentialPane,
)
from splitdesk.ui.stage.server_lane import ServerLane
from splitdesk.ui.stage.summary import SummaryStrip
from splitdesk.ui.stage.timeline import LANE_PITCH, PACKED_MIN_PX, Timeline
from splitdesk.ui.stage.token_chart import TokenChart

#: How a stage looks: ``"window"`` (the engineer's: predictions, the server lane) or
#: ``"present"`` (the audience's: caption bar, no predicted figures, no server lane).
Look = Literal["window", "present"]

#: A live run's panes are built (and its end shown) this many milliseconds at most per
#: event-loop turn: 64 panes took 150-210 ms in one go as Run was pressed, a frozen
#: window and a late sample for everything else on the loop.
BUILD_SLICE_MS = 10
#: The longest a live run's start holds the stage's painting (:meth:`Stage._hold_paints`):
#: 64 panes are built and laid out in ~0.2 s; whatever else delays the layout pass, the
#: stage is painted again by then.
HOLD_PAINTS_MS = 400
#: A live run's end: the timeline's last frame this long after the panes' (ms), so Qt
#: paints it in a pass of its own; the summary follows in the next turn.
FINISH_STEP_MS = 50

#: What the empty stage says before anything ran (the driver says what to press).
IDLE_TEXT = "Press ▶ Run (Ctrl+Enter) to send the questions both ways."


class Stage(QWidget):
    """Everything that shows one run (module docstring).

    Signals:
        finished(object): the run's :class:`RunState`, once its end is on screen (every
            pane, the timeline and the summary show the final figures).
        paneAdded(int, object): a request's index and its
            :class:`~splitdesk.ui.stage.panes.RequestPane`, as each pane is made.
        fairModeRequested(): the summary's offer to measure the ways one after another.
        claimed(object): who drives the stage from now on (:meth:`claim`): a live run's
            controller, a replay's player, presentation mode's; the one before lets go.
    """

    finished = Signal(object)
    paneAdded = Signal(int, object)
    fairModeRequested = Signal()
    claimed = Signal(object)

    def __init__(
        self,
        theme: Theme,
        scale: float = 1.0,
        look: Look = "window",
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("stage")
        self.theme = theme
        self.scale = scale
        self.look: Look = look
        self.state: RunState | None = None
        #: The answers window opened last (:meth:`show_answers`).
        self.answers: AnswersDialog | None = None
        #: Who drives the stage now (:meth:`claim`).
        self.driver: object | None = None
        self._unsubscribe: Callable[[], None] | None = None
        #: Each request's pane (the sequential requests share one).
        self.panes: dict[int, RequestPane] = {}
        self._sequential: SequentialPane | None = None
        self._plan: RunPlan | None = None
        self._questions: list[str] = []
        self._labels: list[str] = []  #: the run's question labels (pane headers, lanes)
        self._predictions: list[PredictedRequest] | None = None
        self._idle_text = IDLE_TEXT
        self._prices: Prices | None = None
        self._client_note = ""
        #: Panes of the coming run still to build, the run's state once it started (they
        #: bind to it as they are built), and the build's number (a newer run's build makes
        #: an older one's pending turns do nothing).
        self._to_build: deque[tuple[int, RequestSpec]] = deque()
        self._build_state: RunState | None = None
        self._build_no = 0
        self._build_lanes = 1  #: the coming run's timeline lanes
        self._laid_out = True  #: the coming run's panes are built and laid out
        #: A live run is showing its end over turns; calls waiting for it (:meth:`after_finish`).
        self._finishing = False
        self._pending_after_finish: list[Callable[[], None]] = []
        self._lanes_wanted = 1
        self._divider_moved = False
        #: The summary's lines that gave way to a short stage, the last gone last
        #: (:meth:`_give_way`).
        self._gave_way: list[str] = []
        self._auto_sizing = False
        #: painting held while a live run's panes are built (:meth:`_hold_paints`)
        self._holding = False
        #: the last :meth:`_set_split` request and the sizes it gave: (top, bottom, sizes)
        self._split_set: tuple[int, int, list[int]] | None = None
        self._sized = False
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.setSpacing(6)
        self._build(theme, scale, look)

    # -- construction ---------------------------------------------------------------------------
    def _section_title(self, text: str) -> ElidedLabel:
        """A column's title: one line, its longest wording that fits (a two-line title
        over one column, beside one line over the other, had set their panes' tops
        apart: the combined column at 1024×768 with 8 or more questions)."""
        label = ElidedLabel(text)
        label.setObjectName("sectionTitle")
        label.setFont(ui_font(self.scale, 0, bold=True))
        return label

    def _build(self, theme: Theme, scale: float, look: Look) -> None:
        present = look == "present"
        # a child from the start: shown while parentless, it would open as a window of its own
        self.caption = CaptionBar(self)
        self.caption.restyle(theme, scale)
        self.caption.setVisible(present)

        self.combined_title = self._section_title("COMBINED · 1 request")
        self.combined_holder = QWidget()
        self.combined_layout = QVBoxLayout(self.combined_holder)
        self.combined_layout.setContentsMargins(0, 0, 0, 0)
        self.combined_column = QWidget()
        lc = QVBoxLayout(self.combined_column)
        lc.setContentsMargins(0, 0, 0, 0)
        lc.addWidget(self.combined_title)
        lc.addWidget(self.combined_holder, 1)
        self._combined_placeholder = QLabel(
            "The combined request streams here:\none prompt asking every question."
        )
        self._combined_placeholder.setObjectName("hint")
        self._combined_placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self._combined_placeholder.setWordWrap(True)
        self.combined_layout.addWidget(self._combined_placeholder)

        self.grid = PaneGrid(
            "The parallel requests stream here:\none request per question, all sent at once.", scale
        )
        self.parallel_title = self._section_title("PARALLEL · one request per question")
        self.parallel_column = QWidget()
        rc = QVBoxLayout(self.parallel_column)
        rc.setContentsMargins(0, 0, 0, 0)
        title_row = QHBoxLayout()
        title_row.addWidget(self.parallel_title, 1)
        self.grid.more_label.setFont(ui_font(scale, 0, bold=True))
        title_row.addWidget(self.grid.more_label)
        rc.addLayout(title_row)
        rc.addWidget(self.grid, 1)

        self.pane_split = QSplitter(Qt.Orientation.Horizontal)
        self.pane_split.addWidget(self.combined_column)
        self.pane_split.addWidget(self.parallel_column)
        self.pane_split.setStretchFactor(0, 2)
        self.pane_split.setStretchFactor(1, 3)

        self.timeline = Timeline(theme, scale, show_predictions=not present)
        self.chart = TokenChart(theme, scale)
        self.chart.hide()
        self.chart.bind(lambda: self.state)
        self.timeline_split = QSplitter(Qt.Orientation.Horizontal)
        self.timeline_split.addWidget(self.timeline)
        self.timeline_split.addWidget(self.chart)
        self.timeline_split.setStretchFactor(0, 3)
        self.timeline_split.setStretchFactor(1, 2)
        self.summary = SummaryStrip(theme, scale, show_predictions=not present)
        self.summary.prices = self._prices
        self.summary.client_note = self._client_note
        self.summary.clear(self._idle_text)
        self.summary.installEventFilter(self)  # its wrapped lines are never cut (eventFilter)
        self.summary.fairModeRequested.connect(self.fairModeRequested)
        self.bottom = QWidget()
        bl = QVBoxLayout(self.bottom)
        bl.setContentsMargins(0, 0, 0, 0)
        bl.setSpacing(0)
        bl.addWidget(self.timeline_split, 1)
        # the server's own batch size and queue, from its /metrics (hidden when it has none;
        # never while presenting: engineer detail)
        self.server_lane = ServerLane(theme, scale, self.timeline.plot)
        self.server_lane.foldChanged.connect(lambda _f: self._fit_timeline(self._lanes_wanted))
        if present:
            self.server_lane.setMaximumHeight(0)
        bl.addWidget(self.server_lane)
        bl.addWidget(self.summary)
        self.main_split = QSplitter(Qt.Orientation.Vertical)
        self.main_split.addWidget(self.pane_split)
        self.main_split.addWidget(self.bottom)
        self.main_split.setStretchFactor(0, 5)
        self.main_split.setStretchFactor(1, 4)
        self.main_split.splitterMoved.connect(self._divider_dragged)

        self._layout.addWidget(self.caption)
        self._layout.addWidget(self.main_split, 1)

    # -- the API --------------------------------------------------------------------------------
    def claim(self, driver: object) -> None:
        """``driver`` shows its run on the stage from now on: one driver at a time, so a
        replay never keeps playing into a live run's panes (whoever drove it before hears
        :attr:`claimed` and lets go)."""
        self.driver = driver
        self.claimed.emit(driver)

    def plan(
        self,
        plan: RunPlan,
        questions: list[str],
        labels: list[str] | None = None,
        *,
        live: bool = False,
        waiting: str = "",
    ) -> None:
        """A run of ``plan`` over ``questions`` is coming: clear the last run and lay out
        this one's panes. ``labels``: the questions' short labels (the set's titles; by
        default derived from the texts). ``live``: build the panes a slice per event-loop
        turn (the run does not wait for them); otherwise at once. ``waiting``: what the
        summary says until the run is bound (``"starting the built-in endpoint…"``)."""
        self._unbind()
        self._clear_panes()
        self.timeline.clear()
        self.summary.clear(waiting or "Starting…")
        self.server_lane.stop()
        self.state = None
        self._plan = plan
        self._predictions = None
        self._questions = list(questions)
        labels = list(labels or [])
        self._labels = labels if len(labels) == len(questions) else []
        self._labels = self._labels or [question_label(q) for q in questions]
        self._build_no += 1
        self._build_state = None
        self._finishing = False  # an older run's end, still showing, is dropped with it
        self._pending_after_finish = []
        self._to_build = deque(enumerate(plan.requests))
        self._laid_out = False
        self._build_lanes = len(
            {("sequential" if s.group == "sequential" else i) for i, s in enumerate(plan.requests)}
        )
        self._set_columns(plan)
        if not live:
            self.complete_panes()
            return
        build_no = self._build_no  # from the next turn: this one pressed Run and planned
        # one paint once the panes are laid out, not one per slice of half-built panes
        self._hold_paints(True)
        self._later(build_no, HOLD_PAINTS_MS, lambda: self._hold_paints(False))
        self._later(
            build_no,
            0,
            lambda: self._in_slices(
                build_no,
                lambda: bool(self._to_build),
                self._build_one,
                lambda: self._lay_out_built(build_no),  # the layout pass: a turn of its own
            ),
        )

    def bind(self, state: RunState) -> None:
        """Show ``state`` from now on: the panes already built bind to its traces (those
        still to build bind as they are made), the timeline and summary read it."""
        self._unbind()
        self.state = state
        self._build_state = state
        self._unsubscribe = state.subscribe_batch(self._on_events)
        self.timeline.bind(state, self._questions, self._labels)
        self.summary.bind(state)
        for index in list(self.panes):
            if index < len(state.requests):
                self._bind_pane(index)
        # the planned run's lanes, not the last run's: the timeline takes its room once
        self._fit_timeline(self._build_lanes)

    def predictions(self, predictions: list[PredictedRequest] | None) -> None:
        """The cost model's predicted requests (index order) for the run on show: the
        timeline's ghost bars and the summary's predicted figures (not in the
        presentation look)."""
        self._predictions = list(predictions) if predictions is not None else None
        if predictions is not None:
            self.timeline.set_predictions(list(predictions))
            self.summary.set_predictions(list(predictions))

    def observe(self, effect: ObserverEffect | None) -> None:
        """What splitdesk's own processes cost a local server on a busy machine during
        the live run on show (``None``: nothing to say): the summary's details line says
        it (:meth:`SummaryStrip.set_observer`)."""
        self.summary.set_observer(effect)

    def finish(self, state: RunState, *, live: bool = False) -> None:
        """``state`` ended: every pane, the timeline and the summary take the final
        figures, then :attr:`finished` is emitted. ``live``: spread over event-loop turns
        (64 final pane refreshes, the timeline's last frame and one paint of it all took
        40-70 ms in one turn): the panes :data:`BUILD_SLICE_MS` at a time, the timeline a
        frame later (painted apart from the panes), then the summary."""
        self.complete_panes()
        self.server_lane.finish()
        if not live:
            for pane in self.panes.values():
                pane.changed(final=True)
            self.timeline.finish()
            self._finish_summary(state)
            return
        self._finishing = True
        build_no, panes = self._build_no, deque(self.panes.values())

        def timeline_then_summary() -> None:
            self.timeline.finish()
            self._later(build_no, 0, lambda: self._finish_summary(state))

        self._in_slices(
            build_no,
            lambda: bool(panes),
            lambda: panes.popleft().changed(final=True),
            timeline_then_summary,
            FINISH_STEP_MS,
        )

    def clear(self, text: str | None = None) -> None:
        """An empty stage: no run, no panes; the summary says ``text`` (default: what the
        stage says when idle, :meth:`set_idle_text`)."""
        self._hold_paints(False)
        self._unbind()
        self._clear_panes()
        self._build_no += 1
        self._to_build = deque()
        self._laid_out = True
        self._plan = None
        self.state = None
        self._build_state = None
        self._predictions = None
        self._finishing = False
        self._pending_after_finish = []
        self.timeline.clear()
        self.server_lane.stop()
        self.server_lane.replay(RunState(), None)  # hidden, saying nothing
        self._combined_placeholder.show()
        self.combined_column.show()
        self.parallel_column.show()
        self.combined_title.setText("COMBINED · 1 request")
        self.parallel_title.setText("PARALLEL · one request per question")
        self.summary.clear(self._idle_text if text is None else text)

    @property
    def idle_text(self) -> str:
        """What the summary says on an empty stage (:meth:`set_idle_text`)."""
        return self._idle_text

    def set_idle_text(self, text: str) -> None:
        """What the summary says on an empty stage (the driver names its own keys:
        "Press ▶ Run (Ctrl+Enter)…" in the window, "Press Space…" while presenting)."""
        self._idle_text = text
        if self.state is None and self._plan is None:
            self.summary.clear(text)

    def say(self, text: str) -> None:
        """Put ``text`` in the summary's headline now (a wait before the run, a reason
        a run could not start)."""
        self.summary.headline.setText(text)

    def show_recorded_server(self, state: RunState, series: LoadSeries | None) -> None:
        """The server lane of a replayed run: the recording's samples, drawn up to the
        playback position (``None``: no lane)."""
        self.server_lane.replay(state, series)

    @property
    def finishing(self) -> bool:
        """A live run's end is being shown over event-loop turns (:meth:`finish`)."""
        return self._finishing

    def after_finish(self, show: Callable[[], None]) -> None:
        """Call ``show`` once the run that is ending shows its end (at once when none is):
        what it says is then not replaced by the run's own summary."""
        if self._finishing:
            self._pending_after_finish.append(show)
        else:
            show()

    @property
    def prices(self) -> Prices | None:
        """The endpoint's prices per million tokens, for each side's cost in the summary."""
        return self._prices

    @prices.setter
    def prices(self, prices: Prices | None) -> None:
        self._prices = prices
        self.summary.prices = prices

    @property
    def client_note(self) -> str:
        """How the client sent the run (cold connections, no barrier), said in the summary."""
        return self._client_note

    @client_note.setter
    def client_note(self, note: str) -> None:
        self._client_note = note
        self.summary.client_note = note

    def show_answers(self) -> AnswersDialog | None:
        """Open the run on show's answers side by side (each question's section of the
        combined reply next to its own request's answer) in a window of their own;
        ``None`` when no run is shown."""
        if self.state is None:
            return None
        dialog = AnswersDialog(self.state, self.theme, self.scale, self._labels, self.window())
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.show()
        self.answers = dialog
        return dialog

    def show_chart(self, shown: bool) -> None:
        """Show or hide the tokens chart beside the timeline."""
        self.chart.setVisible(shown)

    def restyle(self, theme: Theme, scale: float, look: Look | None = None) -> None:
        """Show the stage in ``theme`` at type ``scale`` and ``look`` (default: the same):
        the views take their fonts at construction, so they are built anew and the run
        on show (its plan, state, predictions and server samples) is shown again at once.
        A live run must not be in progress (its panes would be rebuilt under it)."""
        plan, questions, labels = self._plan, self._questions, self._labels
        state, predictions = self.state, self._predictions
        server = self._server_snapshot()
        chart_shown = not self.chart.isHidden()
        caption = (self.caption.where.text(), self.caption.caption.text())
        measured = (self.caption.measured.text(), self.caption.measured_kind)
        keys = self.caption.keys.text()
        focus = QApplication.focusWidget()
        if focus is not None and self.isAncestorOf(focus):  # keys keep reaching the window
            focus.clearFocus()
        self._unbind()
        self.server_lane.stop()
        self._clear_panes()
        for child in (self.caption, self.main_split):
            self._layout.removeWidget(child)
            child.hide()
            child.deleteLater()
        self.theme, self.scale = theme, scale
        self.look = look or self.look
        self._divider_moved = False
        self._gave_way = []  # a new strip shows every line
        self._sized = False
        self._build(theme, scale, self.look)
        self.main_split.show()  # now, not at the next turn (as a layout would show it)
        self.caption.where.setText(caption[0])
        self.caption.caption.setText(caption[1])
        self.caption.show_measured(*measured)
        self.caption.keys.setText(keys)
        self.chart.setVisible(chart_shown)
        if self.isVisible():
            self._first_sizes()
        if plan is None:
            self.summary.clear(self._idle_text)
            return
        self.plan(plan, questions, labels)
        if state is not None:
            self.server_lane.replay(state, server)
            self.bind(state)
            if predictions is not None:
                self.predictions(predictions)
            if state.ended is not None:
                self.finish(state)

    def _unbind(self) -> None:
        """The stage's views stop following the run bound last."""
        unsubscribe, self._unsubscribe = self._unsubscribe, None
        if unsubscribe is not None:
            unsubscribe()
        self.summary.unbind()

    def _server_snapshot(self) -> LoadSeries | None:
        """The server lane's samples of the run on show (recorded or polled so far)."""
        lane, state = self.server_lane, self.state
        if lane.recorded is not None:
            return lane.recorded
        if state is None:
            return None
        return series_of(lane.record(state))

    # -- columns and panes ----------------------------------------------------------------------
    def _set_columns(self, plan: RunPlan) -> None:
        """Each column shows only what the plan sends, and its title says what it holds:
        the combined request and/or the sequential baseline on the left, the parallel
        requests on the right (a column with nothing of the plan in it is hidden)."""
        groups = [s.group for s in plan.requests]
        n_parallel = sum(1 for g in groups if g not in ("combined", "sequential"))
        n_sequential = groups.count("sequential")
        has_combined = "combined" in groups
        # each title's wordings, longest first: the one that fits shows (_section_title)
        words: list[tuple[str, ...]] = []
        if has_combined:
            words.append(("COMBINED · 1 request", "COMBINED", "COMBINED"))
        if n_sequential:
            n = n_sequential
            words.append((f"SEQUENTIAL · {n} one after another", f"SEQUENTIAL · {n}", "SEQUENTIAL"))
        variants = ["  +  ".join(w[k] for w in words) for k in range(3)] if words else []
        self.combined_title.set_variants(list(dict.fromkeys(variants)) or ["COMBINED"])
        self.combined_title.set_hint(
            "The combined request: one prompt asking every question"
            + ("; below it the sequential baseline, one request at a time" if n_sequential else "")
        )
        self.combined_column.setVisible(bool(words))
        self._combined_placeholder.setVisible(False)
        # no parallel request (dependent questions: combined vs the chain): no empty
        # column; the combined and sequential panes take the width
        self.parallel_column.setVisible(n_parallel > 0)
        self.parallel_title.set_variants(
            [f"PARALLEL · {n_parallel} request{'s' if n_parallel != 1 else ''}", "PARALLEL"]
            if n_parallel
            else ["PARALLEL · one request per question", "PARALLEL"]
        )

    def _clear_panes(self) -> None:
        self.grid.clear()
        layout = self.combined_layout
        while layout.count():
            item = layout.takeAt(0)
            w = item.widget() if item is not None else None
            if w is not None and w is not self._combined_placeholder:
                dispose(w)  # now, and let go of its run (see grid.dispose)
        self.combined_layout.addWidget(self._combined_placeholder)
        self._combined_placeholder.hide()
        self.panes = {}
        self._sequential = None

    def _on_events(self, events: Sequence[RunEvent]) -> None:
        """A batch of events was applied (a drain's, or one replayed): new panes bound, and
        each pane whose request changed told once (not once per token)."""
        touched: set[int] = set()
        for ev in events:
            if type(ev) is TextReceived:  # most of them
                touched.add(ev.req)
            elif isinstance(ev, RequestPlanned):
                self._add_pane(ev)
            elif isinstance(ev, RunEnded):
                self.complete_panes()
                # a live run's panes finish in steps once the driver says it ended (finish)
            else:
                req = getattr(ev, "req", None)
                if req is not None:
                    touched.add(req)
        panes = self.panes
        for req in touched:
            target = panes.get(req)
            if target is not None:
                # an ended request shows its end at the next frame (≤ throttle.LIVE_FRAME_MS), not
                # inside this drain: 64 requests ending in one batch step refreshed all
                # 64 panes in one event-loop turn
                target.changed()
        self.timeline.throttle.request()

    def _add_pane(self, ev: RequestPlanned) -> None:
        """Bind request ``ev.req`` to its pane (made now if the plan did not announce it;
        bound when it is built if it is still queued)."""
        if ev.req not in self.panes:
            if any(index == ev.req for index, _spec in self._to_build):
                return  # queued: bound as it is built (_build_one)
            self._make_pane(ev.req, ev.group, ev.questions)
        self._bind_pane(ev.req)

    def _bind_pane(self, req: int) -> None:
        """Show request ``req`` of the current run in its pane."""
        assert self.state is not None
        trace = self.state.requests[req]
        pane = self.panes[req]
        pane.set_run(self.state)  # names what a waiting request waits for, and counts
        if isinstance(pane, SequentialPane):
            pane.add(trace)
        else:
            pane.bind(trace)

    def _make_pane(
        self, index: int, group: str, questions_of: tuple[int, ...], relayout: bool = True
    ) -> RequestPane:
        """Make request ``index``'s pane (``relayout=False``: the caller lays the grid out)."""
        questions = self._questions
        pane: RequestPane
        if group == "combined":
            pane = CombinedPane(len(questions_of), self.theme, self.scale)
            self.combined_layout.insertWidget(self.combined_layout.count() - 1, pane, 2)
        elif group == "sequential":
            if self._sequential is None:
                self._sequential = SequentialPane(questions, self.theme, self.scale)
                self.combined_layout.insertWidget(
                    self.combined_layout.count() - 1, self._sequential, 1
                )
            pane = self._sequential
        else:
            q = questions_of[0]
            text = questions[q] if q < len(questions) else ""
            label = self._labels[q] if q < len(self._labels) else question_label(text)
            pane = RequestPane(f"Q{q + 1}", label, lane_hex(q), self.theme, self.scale)
            if len(questions) > MANY_PANES:  # many at once: a slower frame, between the
                # timeline's ticks (its frame is as slow with as many lanes)
                pane.throttle.set_interval(MANY_PANES_MS, MANY_PANES_MS // 2)
            pane.title.setToolTip(text)
            self.grid.add(pane, relayout)
            self.parallel_title.set_hint("One request per question, all sent at once")
        # at its end through size/layout changes (the reasoning view, made on demand, too)
        follow_end(pane.text, pane.text.scroll_to_end)
        self.panes[index] = pane
        self.paneAdded.emit(index, pane)
        return pane

    def _later(self, build_no: int, ms: int, call: Callable[[], None]) -> None:
        """``call()`` in ``ms`` milliseconds (0: the next event-loop turn), unless a newer
        run's panes have replaced build ``build_no``'s by then."""
        QTimer.singleShot(ms, self, lambda: call() if build_no == self._build_no else None)

    def _in_slices(
        self,
        build_no: int,
        pending: Callable[[], bool],
        step: Callable[[], None],
        then: Callable[[], None],
        then_ms: int = 0,
    ) -> None:
        """``step()`` while ``pending()``, for up to :data:`BUILD_SLICE_MS` of work per
        event-loop turn; then ``then()`` after ``then_ms`` (:meth:`_later`). A live run's
        panes are built so, and its end shown so."""
        if build_no != self._build_no:
            return  # a newer run's panes replaced these
        # a work budget per turn, not a measurement: no figure reads this clock
        end = time.perf_counter() + BUILD_SLICE_MS / 1000
        while pending() and time.perf_counter() < end:
            step()
        if pending():
            self._later(
                build_no, 0, lambda: self._in_slices(build_no, pending, step, then, then_ms)
            )
        else:
            self._later(build_no, then_ms, then)

    def _lay_out_built(self, build_no: int) -> None:
        """The layout pass, then the room's split in a turn of its own."""
        if not self._laid_out:
            self._laid_out = True
            self.grid.relayout_now()
            self._later(build_no, 0, self._fit_room)

    def complete_panes(self) -> None:
        """Build the coming run's panes still queued, now, and lay them out."""
        while self._to_build:
            self._build_one()
        if not self._laid_out:
            self._laid_out = True
            self.grid.relayout_now()
            self._fit_room()

    def _build_one(self) -> None:
        index, spec = self._to_build.popleft()
        self._make_pane(index, spec.group, spec.questions, relayout=False)
        state = self._build_state
        if state is not None and index < len(state.requests):  # planned before it was built
            self._bind_pane(index)

    def _finish_summary(self, state: RunState) -> None:
        self.summary.throttle.request()
        self.summary.throttle.flush()
        in_banner = self.summary.shared_failure is not None  # one message, not one per pane
        for pane in self.panes.values():
            pane.set_error_in_banner(in_banner)
        self._finishing = False
        pending, self._pending_after_finish = self._pending_after_finish, []
        self.finished.emit(state)
        for show in pending:
            show()

    # -- room -----------------------------------------------------------------------------------
    def _fit_room(self) -> None:
        """The timeline's room for the run's lanes, and the panes' split."""
        self._fit_timeline(self._build_lanes)
        # many questions: the parallel side gets two thirds of the width (more columns)
        total = sum(self.pane_split.sizes())
        share = 0.4 if len(self._questions) <= 5 else 0.3
        self.pane_split.setSizes([int(total * share), total - int(total * share)])
        self._hold_paints(False)

    def _hold_paints(self, hold: bool) -> None:
        """Hold the stage's painting while a live run's panes are built and laid out, a
        slice per event-loop turn (:meth:`plan`), and paint it whole once they are.

        Each turn had painted the stage again (the window, the timeline's axes, the
        panes' text), with the panes half built: four or five paints of ~8 ms in the
        ~60 ms from Run to the laid-out panes, during which the event loop waited."""
        if hold != self._holding:
            self._holding = hold
            self.setUpdatesEnabled(not hold)

    def _divider_dragged(self) -> None:
        if not self._auto_sizing:
            self._divider_moved = True

    def _panes_min_height(self, h: int) -> int:
        """Pixels the panes keep however many lanes the timeline wants: the section titles
        and one row of the tightest panes (header and last line; 40 % of ``h`` before a run
        has panes)."""
        panes = list(self.panes.values())
        if not panes:
            return int(h * 0.4)
        title = self.parallel_title.sizeHint().height()
        row = title + max(p.tight_height() for p in panes) + 2 * self.grid.frameWidth() + 8
        handle = self.main_split.handleWidth()
        return max(row, self.pane_split.minimumSizeHint().height()) + handle

    def _below_timeline(self, width: int, only: QWidget | None = None) -> int:
        """Pixels the other shown widgets under the panes (server lane, summary strip)
        need at ``width``: wrapped text at its real height, not its size hint's guess
        (``only``: that one widget's)."""
        lay = self.bottom.layout()
        total = 0
        for i in range(lay.count() if lay is not None else 0):
            item = lay.itemAt(i) if lay is not None else None
            w = item.widget() if item is not None else None
            # the timeline itself, or the splitter holding it beside the tokens chart
            if w is None or w is self.timeline or w.isAncestorOf(self.timeline) or w.isHidden():
                continue
            if only is not None and w is not only:
                continue
            inner = w.layout()
            if inner is not None and inner.hasHeightForWidth():
                total += inner.totalHeightForWidth(width)
            elif w.hasHeightForWidth():
                total += w.heightForWidth(width)
            else:
                total += max(w.minimumHeight(), w.sizeHint().height())
        return total

    def _fit_timeline(self, lanes: int) -> None:
        """Give the timeline room for ``lanes`` readable lanes, unless the user has placed
        the divider themselves.

        The lanes are the app's key picture: up to 60 % of the height, and more when that
        lets every lane show without scrolling (at the timeline's smaller lane names) while
        the panes keep their titles and one row of tight panes. When even that is short
        (a projector), the server lane folds to its caption line, or hides, unless the user
        chose how it shows. Too many lanes for any of this: room for the parallel lanes
        packed into one block (at least 60 %), or as much as the panes leave; where even
        that is short, they scroll."""
        self._lanes_wanted = lanes
        if self._divider_moved:
            return
        h = self.main_split.height()
        lane_px = QFontMetrics(ui_font(self.scale, 0)).height() * LANE_PITCH
        small_px = QFontMetrics(ui_font(self.scale, -2)).height() * LANE_PITCH  # crowded names
        vb = self.timeline.plot.getPlotItem().getViewBox()
        plot_h = self.timeline.plot.height()
        # the axis, its label and the plot's margins: measured once laid out
        axis = plot_h - int(vb.height()) if vb.height() > 0 else int(60 * self.scale)
        axis += 4  # layout spacing and rounding
        width = max(self.timeline.width(), 1)  # wrapped labels: their height at this width
        room = max(int(h * 0.6), h - self._panes_min_height(h))
        server = self.server_lane
        if server.polling() and server.fold_by_user is None:
            fixed = self.timeline.legend.heightForWidth(width) + self._below_timeline(width)
            if not server.isHidden():
                fixed -= server.sizeHint().height()
            lanes_need = fixed + int(lanes * small_px) + axis + 2
            if lanes_need + server.open_height() <= room:
                server.set_fold("open")
            elif lanes_need + server.line_height() <= room:
                server.set_fold("line")
            else:
                server.set_fold("off")
        fixed = self.timeline.legend.heightForWidth(width) + self._below_timeline(width)
        wanted = fixed + int(lanes * lane_px) + axis
        need = fixed + int(lanes * small_px) + axis + 2  # every lane, smaller names
        # the parallel lanes packed into one block (ui/stage/timeline.py), beside a combined
        # and perhaps a sequential lane of their own
        packed = fixed + int(2.2 * small_px + max(0, lanes - 2) * PACKED_MIN_PX) + axis + 2
        # The summary's Why line gives way (to the strip's tooltip; the plain words stay)
        # when that lets every lane show, and comes back when there is room for it again:
        # every lane in sight is worth more at 1280×720 ×1.5 than the second wording.
        summary = self.summary
        why = summary.why_px(width) if summary.why_text else 0
        if summary.why_shown and why and need > room and need - why <= room:
            summary.set_why_shown(False)  # the strip re-lays out and fits the lanes again
            return
        if not summary.why_shown and why and need + why <= room and "why" not in self._gave_way:
            summary.set_why_shown(True)
            return
        if wanted <= int(h * 0.6):
            bottom = max(wanted, int(h * 0.4))
        elif need <= room:
            bottom = max(min(wanted, room), int(h * 0.6))
        else:  # too many lanes to name each: room for them packed, where the panes allow
            bottom = max(min(packed, room), int(h * 0.6))
        self._set_split(h - bottom, bottom)

    def _set_split(self, top: int, bottom: int) -> None:
        """The panes ``top`` pixels, the timeline's block ``bottom``: unless the
        divider already stands where the same request put it (the splitter takes its handle
        off the sizes, so they never read back as asked). A run's start and end ask again
        and again, and each setting laid the timeline and the panes out once more."""
        if self._split_set == (top, bottom, self.main_split.sizes()):
            return
        self._auto_sizing = True
        self.main_split.setSizes([top, bottom])
        self._auto_sizing = False
        self._split_set = (top, bottom, self.main_split.sizes())

    def _first_sizes(self) -> None:
        """The panes a bit more than half the height until a run's lanes decide."""
        h = self.main_split.height()
        self._set_split(int(h * 0.56), int(h * 0.44))

    def showEvent(self, event: QShowEvent) -> None:
        """First show: give the panes a bit more than half the height."""
        super().showEvent(event)
        if not self._sized:
            self._sized = True
            self._first_sizes()
            if self._plan is not None:
                self._fit_timeline(self._lanes_wanted)

    def resizeEvent(self, event: QResizeEvent) -> None:
        """Another height (a dock opened beside the stage, a window resized): the timeline
        keeps room for its lanes (its share is worked out again, in the next turn, once
        the splitter has the new height)."""
        super().resizeEvent(event)
        if self._sized and event.oldSize().height() != event.size().height():
            QTimer.singleShot(0, self, lambda: self._fit_timeline(self._lanes_wanted))

    #: The summary's lines that give way on a stage too short for them, in order.
    GIVE_WAY = ("split", "why", "payoff")

    def _summary_room(self, width: int) -> int:
        """Pixels the summary strip may take: the stage's height less the panes' least
        (titles and one row of the tightest panes), the timeline's least and what else is
        shown beneath it (the server lane)."""
        h = self.main_split.height()
        others = self._below_timeline(width) - self._below_timeline(width, only=self.summary)
        return (
            h - self._panes_min_height(h) - self.timeline_split.minimumSizeHint().height() - others
        )

    def _give_way(self, need: int, width: int) -> bool:
        """One of the summary's :data:`GIVE_WAY` lines goes when the strip needs more than
        :meth:`_summary_room`, or the last gone comes back when it fits again; whether one
        changed (the strip then lays out again)."""
        summary = self.summary
        if not summary.isVisible() or self.main_split.height() <= 0:
            return False
        room = self._summary_room(width)
        shown = {
            "split": summary.split_shown and bool(summary.split_text),
            "why": summary.why_shown and bool(summary.why_text),
            "payoff": summary.payoff_shown and bool(summary.payoff.text()),
        }
        setters = {
            "split": summary.set_split_shown,
            "why": summary.set_why_shown,
            "payoff": summary.set_payoff_shown,
        }
        if need > room:
            part = next((p for p in self.GIVE_WAY if shown[p]), None)
            if part is None:
                return False
            self._gave_way.append(part)
            setters[part](False)
            return True
        if self._gave_way:
            part = self._gave_way[-1]
            text, label = {
                "split": (summary.split_text, summary.explain),
                "why": (summary.why_text, summary.explain),
                "payoff": (summary.payoff.text(), summary.payoff),
            }[part]
            lay = summary.layout()
            spacing = lay.spacing() if lay is not None else 0
            if need + summary.line_px(label, text, width) + spacing <= room:
                self._gave_way.pop()
                setters[part](True)
                return True
        return False

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """The summary strip's wrapped lines decide its height: a splitter would squeeze
        it and cut the headline's second line; the timeline above gives way instead (its
        lanes scroll). On a short stage the details line gives way first (shown on
        hover); where the stage cannot hold the strip beside the panes' and the
        timeline's least (a projector, one way after another), the split line, the Why
        line and the payoff line follow, in that order, one per layout pass, and come
        back, last gone first, once they fit again (:meth:`_summary_room`). A window is
        never made taller than asked for the strip's sake."""
        if watched is self.summary and event.type() in (
            QEvent.Type.LayoutRequest,
            QEvent.Type.Resize,
        ):
            lay = self.summary.layout()
            if lay is not None and self.summary.width() > 0:
                details = self.summary.details
                need = lay.totalHeightForWidth(self.summary.width())
                summary, width = self.summary, self.summary.width()
                share = 0.36 * self.main_split.height()  # a projector's short window
                if need > share and not details.isHidden():  # the least needed line goes
                    details.hide()
                    need = lay.totalHeightForWidth(width)
                if details.isHidden() and details.text() and summary.why_shown:
                    extra = details.heightForWidth(width) + lay.spacing()
                    if need + extra <= share and not self._gave_way:
                        details.show()
                        need += extra
                if self._give_way(need, width):
                    return super().eventFilter(watched, event)  # the strip lays out again
                hover = [summary.split_text] if not summary.split_shown else []
                hover += [summary.why_text] if not summary.why_shown else []
                hover += [summary.payoff.text()] if not summary.payoff_shown else []
                hover += [details.text()] if details.isHidden() and details.text() else []
                summary.setToolTip("<br>".join(t for t in hover if t))
                if need > 0 and need != self.summary.maximumHeight():
                    # fixed: a splitter's child layout would otherwise give the strip its
                    # height-for-width below the timeline and cut its last line
                    self.summary.setFixedHeight(need)
                    self._fit_timeline(self._lanes_wanted)  # the timeline keeps its room
        return super().eventFilter(watched, event)
