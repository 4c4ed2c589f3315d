"""The main window: questions and endpoint on the left; the combined pane, the parallel
panes, the timeline and the summary on the right.

The window wires views to the :class:`~splitdesk.ui.run.controller.RunController`: it builds a
run request from the editors, and when a run starts it binds the panes, timeline and
summary to the run's :class:`~splitdesk.core.run.run_state.RunState`. Views repaint on their
own throttles; the window measures nothing.
"""

from __future__ import annotations

import asyncio
import html
import logging
import time
from collections import deque
from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, QRect, Qt, QTimer, Signal
from PySide6.QtGui import (
    QAction,
    QCloseEvent,
    QFontMetrics,
    QGuiApplication,
    QIcon,
    QKeySequence,
    QResizeEvent,
    QShortcut,
    QShowEvent,
)
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QPushButton,
    QScrollArea,
    QSplitter,
    QTabWidget,
    QToolBar,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from splitdesk.core.analyse.predict import PredictedRequest
from splitdesk.core.files.settings import AppSettings, save_settings
from splitdesk.core.run.endpoints import EndpointSettings
from splitdesk.core.run.events import RequestPlanned, RunEnded, RunEvent
from splitdesk.core.run.labels import question_label
from splitdesk.core.run.plans import Mode, RequestSpec, RunPlan
from splitdesk.core.run.run_state import RunState
from splitdesk.ui.common.follow_end import follow_end
from splitdesk.ui.common.tasks import cancel_pending, spawn, task_slot
from splitdesk.ui.common.theme import Theme, lane_hex, ui_font
from splitdesk.ui.common.throttle import LIVE_FRAME_MS, Throttle
from splitdesk.ui.engineer.menu import EngineerMenu
from splitdesk.ui.export.menu import ExportMenu
from splitdesk.ui.inputs.endpoint_panel import EndpointPanel
from splitdesk.ui.inputs.questions_editor import QuestionsEditor
from splitdesk.ui.present.presentation import Presentation
from splitdesk.ui.replay.recordings import RecordingsUi
from splitdesk.ui.run.controller import ControllerError, RunController, RunRequest
from splitdesk.ui.stage.grid import PaneGrid, dispose
from splitdesk.ui.stage.panes import CombinedPane, RequestPane, SequentialPane
from splitdesk.ui.stage.server_lane import ServerLane
from splitdesk.ui.stage.summary import SummaryStrip
from splitdesk.ui.stage.timeline import LANE_PITCH, PACKED_MIN_PX, Timeline
from splitdesk.ui.stage.token_chart import TokenChartUi

log = logging.getLogger(__name__)

MODES: dict[str, Mode] = {
    "side by side": "side-by-side",
    "one after another": "one-after-another",
    "dependent: combined vs chain": "dependent",  # questions that need earlier answers
}

#: A live run's panes are built this many milliseconds at most per event-loop turn
#: (:meth:`MainWindow._run_planned_in_steps`): 64 panes took 150-210 ms in one go as Run
#: was pressed, a frozen window and a late sample for everything else on the loop.
BUILD_SLICE_MS = 10


#: The settings a scenario replaces (:meth:`MainWindow._persisted` keeps the user's own).
SCENARIO_INPUTS = ("endpoint", "mode", "with_sequential", "question_set")


def _toolbar_overflows(bar: QToolBar, width: int) -> bool:
    """Whether ``bar``, laid out now ``width`` pixels wide, puts an item into its overflow
    menu (Qt's own layout decides, with the style's spacing, margins and separators: an
    estimate of them at --scale 1.5 let the Present button slip into the menu). The width
    is given: in the window's resize event the bar still has its old one."""
    layout = bar.layout()
    if layout is None:
        return False
    layout.invalidate()
    layout.setGeometry(QRect(0, 0, width, bar.height()))
    extension = bar.findChild(QToolButton, "qt_toolbar_ext_button")
    return extension is not None and not extension.isHidden()


class MainWindow(QMainWindow):
    """The splitdesk window.

    Signals:
        runFinished(object): the finished run's :class:`RunState` (for scripts and tests).
        closed(): the window has finished closing (runs stopped, endpoint process gone).
    """

    runFinished = Signal(object)
    closed = Signal()

    def __init__(
        self,
        settings: AppSettings,
        controller: RunController,
        theme: Theme,
        scale: float = 1.0,
        icon: QIcon | None = None,
        saved_endpoint: EndpointSettings | None = None,
    ) -> None:
        super().__init__()
        self.settings = settings
        #: The endpoint to keep in the settings file while the one shown came from the
        #: command line (``--profile``/``--speed``) and the user has not changed it.
        self._saved_endpoint = saved_endpoint
        #: The inputs (endpoint, mode, questions) to keep in the settings file once a
        #: scenario has replaced them for a talk (set by the presentation's first scenario).
        self.kept_inputs: AppSettings | None = None
        #: Save the window's size for the next start (off while ``--size`` set it).
        self.remember_size = True
        self.controller = controller
        self.theme = theme
        self.scale = scale
        self.state: RunState | None = None
        self.panes: dict[int, RequestPane] = {}
        self._sequential: SequentialPane | None = None
        self._questions: list[str] = []
        self._labels: list[str] = []  #: the run's question labels (pane headers, lanes)
        self._closing = False
        self._closed = False
        #: Panes of the coming run still to build (:meth:`_run_planned_in_steps`), the
        #: run's state once it started (they bind to it as they are built), and the build's
        #: number (a newer run's build makes an older one's pending turns do nothing).
        self._to_build: deque[tuple[int, RequestSpec]] = deque()
        self._build_state: RunState | None = None
        self._build_no = 0
        #: A live run is showing its end over turns (_live_run_finished); what the status
        #: bar should say after it waits here.
        self._finishing = False
        self._pending_after_finish: list[Callable[[], None]] = []
        self._build_lanes = 1  #: the coming run's timeline lanes
        self._laid_out = True  #: the coming run's panes are built and laid out
        self.setWindowTitle("splitdesk — one combined request vs N parallel requests")
        if icon is not None:
            self.setWindowIcon(icon)
        self._fit_to_screen(settings.window_size)

        # -- left: questions and endpoint ---------------------------------------------------
        self.questions = QuestionsEditor(theme, scale)
        if settings.question_set is not None and settings.question_set.questions:
            self.questions.set_question_set(settings.question_set)
        self.endpoint = EndpointPanel(theme, controller.endpoint_config)
        self.endpoint.set_settings(settings.endpoint)
        endpoint_scroll = QScrollArea()
        endpoint_scroll.setWidgetResizable(True)
        endpoint_scroll.setWidget(self.endpoint)
        self.sidebar = QTabWidget()
        self.sidebar.addTab(self.questions, "Questions")
        self.sidebar.addTab(endpoint_scroll, "Endpoint")
        self.sidebar.setMinimumWidth(int(260 * scale))

        # -- right: panes, timeline, summary -----------------------------------------------------
        self.combined_box = QVBoxLayout()
        self.combined_title = self._section_title("COMBINED · 1 request")
        self.combined_holder = QWidget()
        self.combined_layout = QVBoxLayout(self.combined_holder)
        self.combined_layout.setContentsMargins(0, 0, 0, 0)
        left_col = QWidget()
        lc = QVBoxLayout(left_col)
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
        right_col = QWidget()
        rc = QVBoxLayout(right_col)
        rc.setContentsMargins(0, 0, 0, 0)
        title_row = QHBoxLayout()
        title_row.addWidget(self.parallel_title, 1)
        self.grid.more_label.setFont(ui_font(self.scale, 0, bold=True))
        title_row.addWidget(self.grid.more_label)
        rc.addLayout(title_row)
        rc.addWidget(self.grid, 1)

        self.pane_split = QSplitter(Qt.Orientation.Horizontal)
        self.pane_split.addWidget(left_col)
        self.pane_split.addWidget(right_col)
        self.pane_split.setStretchFactor(0, 2)
        self.pane_split.setStretchFactor(1, 3)

        self.timeline = Timeline(theme, scale)
        self.summary = SummaryStrip(theme, scale)
        self.summary.installEventFilter(self)  # its wrapped lines are never cut (eventFilter)
        self.summary.fairModeRequested.connect(self._run_fair_mode)
        bottom = QWidget()
        bl = QVBoxLayout(bottom)
        bl.setContentsMargins(0, 0, 0, 0)
        bl.setSpacing(0)
        bl.addWidget(self.timeline, 1)
        # the server's own batch size and queue, from its /metrics (hidden when it has none)
        self.server_lane = ServerLane(theme, scale, self.timeline.plot)
        bl.addWidget(self.server_lane)
        bl.addWidget(self.summary)
        self.main_split = QSplitter(Qt.Orientation.Vertical)
        self.main_split.addWidget(self.pane_split)
        self.main_split.addWidget(bottom)
        self.main_split.setStretchFactor(0, 5)
        self.main_split.setStretchFactor(1, 4)
        self._divider_moved = False
        self._auto_sizing = False
        self.main_split.splitterMoved.connect(self._divider_dragged)

        outer = QSplitter(Qt.Orientation.Horizontal)
        outer.addWidget(self.sidebar)
        outer.addWidget(self.main_split)
        outer.setStretchFactor(0, 0)
        outer.setStretchFactor(1, 1)
        outer.setSizes([int(380 * scale), int(1120 * scale)])
        self._outer = outer
        central = QWidget()
        central.setObjectName("central")
        cl = QHBoxLayout(central)
        cl.setContentsMargins(8, 8, 8, 0)
        cl.addWidget(outer)
        self.setCentralWidget(central)

        self._build_toolbar()
        self._sized = False
        self.statusBar().showMessage(self._ready_line())

        # -- wiring --------------------------------------------------------------------------------
        self.questions.changed.connect(self._inputs_changed)
        self.questions.message.connect(self.statusBar().showMessage)
        self.endpoint.changed.connect(self._inputs_changed)
        self.endpoint.changed.connect(self._endpoint_edited)
        self.endpoint.message.connect(self.statusBar().showMessage)
        controller.status.connect(self.statusBar().showMessage)
        controller.busyChanged.connect(self._busy_changed)
        controller.runPlanned.connect(self._run_planned_in_steps)
        controller.runStarted.connect(self._run_started)
        controller.runFinished.connect(self._live_run_finished)
        controller.runStarted.connect(self._server_lane_start)
        controller.runFinished.connect(self.server_lane.finish)
        # the shown server lane takes height: the timeline's lanes keep theirs (it may fold)
        controller.runStarted.connect(lambda _s: self._fit_timeline(self._lanes_wanted))
        self.server_lane.foldChanged.connect(lambda _f: self._fit_timeline(self._lanes_wanted))
        controller.predictionsReady.connect(self._predictions)
        self._persist = Throttle(self._save_settings, 800, self)
        #: Recording, auto-save, session history, replay, demos (File, Demos, View menus).
        self.recordings = RecordingsUi(self)
        #: The live tokens chart beside the timeline (View → Tokens chart).
        self.token_chart = TokenChartUi(self)
        view_menu = getattr(self, "view_menu", None)  # made by the recordings' menus
        if view_menu is not None:  # View → Server lane: the user's choice beats auto-folding
            view_menu.addAction(self.server_lane.action)
        #: Presentation mode and scenarios (F11, the toolbar's Present button).
        self.presentation = Presentation(self)
        self._short_labels[self.presentation.action] = "▣"
        #: File → Export: pictures, figures, the Perfetto trace, GIF/MP4 animations.
        self.exports = ExportMenu(self)
        #: Engineer menu: the client's pattern (cold connections, release)
        self.engineer = EngineerMenu(self)
        self._inputs_changed()

    # -- construction helpers -------------------------------------------------------------------
    def _section_title(self, text: str) -> QLabel:
        label = QLabel(text)
        label.setObjectName("sectionTitle")
        label.setWordWrap(True)
        label.setFont(ui_font(self.scale, 0, bold=True))
        return label

    def _build_toolbar(self) -> None:
        bar = QToolBar("Run")
        bar.setMovable(False)
        self.addToolBar(bar)
        self.sidebar_button = QToolButton()
        self.sidebar_button.setCheckable(True)
        self.sidebar_button.setToolTip("Show or hide the questions and endpoint (Ctrl+B)")
        self.sidebar_button.setFont(ui_font(self.scale, 0))
        self.sidebar_button.toggled.connect(self._sidebar_toggled)
        QShortcut(QKeySequence("Ctrl+B"), self, self.sidebar_button.toggle)
        bar.addWidget(self.sidebar_button)
        self.run_button = QPushButton("▶  Run")
        self.run_button.setObjectName("run")
        self.run_button.setFont(ui_font(self.scale, 1, bold=True))
        self.run_button.setToolTip("Send the questions both ways (Ctrl+Enter)")
        self.run_button.clicked.connect(self.start_run)
        self.stop_button = QPushButton("■  Stop")
        self.stop_button.setObjectName("stop")
        self.stop_button.setFont(ui_font(self.scale, 1))
        self.stop_button.setToolTip("Stop every stream now, keeping what arrived (Esc)")
        self.stop_button.setEnabled(False)
        self.stop_button.clicked.connect(self.controller.stop)
        self.mode = QComboBox()
        for label, value in MODES.items():
            self.mode.addItem(label, value)
        self.mode.setCurrentIndex(max(0, self.mode.findData(self.settings.mode)))
        self.mode.setToolTip(
            "side by side: combined and parallel at once (the demo)\n"
            "one after another: combined, then parallel, each on an idle server (fair measurement)"
        )
        self.mode.currentIndexChanged.connect(self._inputs_changed)
        self.mode.currentIndexChanged.connect(self._fit_mode_box)
        self.mode.setSizeAdjustPolicy(
            QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon
        )
        self._fit_mode_box()
        self.sequential = QCheckBox("+ sequential")
        self.sequential.setToolTip(
            "In “one after another”, also send the questions one at a time (the baseline)"
        )
        self.sequential.setChecked(self.settings.with_sequential)
        self.sequential.toggled.connect(self._inputs_changed)
        self.endpoint_button = QToolButton()
        self.endpoint_button.setToolTip("Choose the endpoint")
        self.endpoint_button.clicked.connect(self._show_endpoint)
        bar.addWidget(self.run_button)
        bar.addWidget(self.stop_button)
        bar.addSeparator()
        bar.addWidget(self.mode)  # its items say what they are: no "Mode" caption
        self._sequential_action = bar.addWidget(self.sequential)
        bar.addSeparator()
        bar.addWidget(self.endpoint_button)
        spacer = QWidget()
        spacer.setSizePolicy(
            spacer.sizePolicy().horizontalPolicy().Expanding, spacer.sizePolicy().verticalPolicy()
        )
        bar.addWidget(spacer)
        self._toolbar_spacer = spacer  # what follows it may go to the overflow menu
        self.problem_label = QLabel("")
        self.problem_label.setObjectName("problem")
        bar.addWidget(self.problem_label)
        for keys in ("Ctrl+Return", "Ctrl+Enter"):
            QShortcut(QKeySequence(keys), self, self.start_run)
        QShortcut(QKeySequence("Escape"), self, self.controller.stop)
        theme_action = QAction("Light theme" if self.theme.name == "dark" else "Dark theme", self)
        theme_action.setToolTip("Takes effect at the next start")
        theme_action.triggered.connect(self._toggle_theme)
        bar.addAction(theme_action)
        self._toolbar = bar
        # The overflow button, when a narrow window (1024 px at --scale 1.5) sends the last
        # buttons into its menu, says so: its arrow icon is missing where no icon theme is
        # installed, which left an empty sliver at the window's edge.
        extension = bar.findChild(QToolButton, "qt_toolbar_ext_button")
        if extension is not None:
            extension.setText("»")
            extension.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
            extension.setToolTip("More buttons")
        #: Short labels the toolbar's last buttons show when the window is too narrow for
        #: their whole ones (Present adds its own).
        self._short_labels: dict[QAction, str] = {
            theme_action: "Light" if self.theme.name == "dark" else "Dark"
        }

    # -- inputs ---------------------------------------------------------------------------------
    def _inputs_changed(self) -> None:
        one_after = self.mode.currentData() == "one-after-another"
        self.sequential.setEnabled(one_after)
        self._sequential_action.setVisible(one_after)  # only that mode has the baseline
        self._fit_endpoint_button()
        problem = self.questions.problem()
        self.problem_label.setText(problem or "")
        self.run_button.setEnabled(problem is None and not self.controller.busy)
        self.run_button.setToolTip(problem or "Send the questions both ways (Ctrl+Enter)")
        self.settings = self.settings.model_copy(
            update={
                "endpoint": self.endpoint.settings(),
                "mode": self.mode.currentData(),
                "with_sequential": self.sequential.isChecked(),
                "question_set": self.questions.question_set(),
            }
        )
        self._persist.request()

    def _fit_mode_box(self) -> None:
        """The mode box as wide as the chosen mode's name (the longest one would take a
        projector's toolbar); the list shows every name whole."""
        text = self.mode.currentText()
        char = max(self.mode.fontMetrics().horizontalAdvance("x"), 1)
        self.mode.setMinimumContentsLength(
            self.mode.fontMetrics().horizontalAdvance(text) // char + 2
        )
        self.mode.view().setMinimumWidth(
            max(self.mode.fontMetrics().horizontalAdvance(t) for t in MODES) + 40
        )
        if hasattr(self, "_toolbar"):
            self._fit_endpoint_button()

    def _fit_endpoint_button(self) -> None:
        """The endpoint button's longest wording that fits beside the other toolbar
        buttons ("Built-in · batching · 1×", "batching · 1×", "batching"), never pushed
        into the toolbar's overflow menu; the full wording on hover. The buttons after the
        spacer (theme, Present) keep their room too: when even the shortest wording leaves
        them none, they show their short labels (:attr:`_short_labels`), and their whole
        ones on hover."""
        full = self.endpoint.summary()
        parts = full.split(" · ")
        variants = [full, " · ".join(parts[1:]), parts[1] if len(parts) > 1 else full]
        bar = self._toolbar
        after: list[QAction] = []  # the actions after the spacer that may go short
        seen_spacer = False
        for action in bar.actions():
            w = bar.widgetForAction(action)
            if w is self._toolbar_spacer:
                seen_spacer = True
            elif not action.isVisible() or w is self.endpoint_button or w is None:
                continue
            elif seen_spacer and w is not self.problem_label:
                after.append(action)
        chosen, short = variants[-1], True
        width = self.width()  # the top toolbar spans the window
        for short_labels in (False, True):
            for action in after:
                label = self._short_labels.get(action) if short_labels else None
                action.setIconText(label or action.text())
            fits = None
            for text in variants:
                self.endpoint_button.setText(text + "  ▾")
                if not _toolbar_overflows(bar, width):
                    fits = text
                    break
            if fits is not None:
                chosen, short = fits, short_labels
                break
        for action in after:  # as chosen (short ones when nothing fits)
            label = self._short_labels.get(action) if short else None
            action.setIconText(label or action.text())
            if not action.toolTip().startswith(action.text()):
                action.setToolTip(f"{action.text()}: {action.toolTip()}")
        self.endpoint_button.setText(chosen + "  ▾")
        self.endpoint_button.setToolTip(f"Choose the endpoint ({full})")

    def resizeEvent(self, event: QResizeEvent) -> None:
        """Re-fit the toolbar's endpoint wording to the new width."""
        super().resizeEvent(event)
        self._fit_endpoint_button()

    # -- sidebar --------------------------------------------------------------------------------
    def set_sidebar_shown(self, shown: bool, remember: bool = True) -> None:
        """Show or hide the questions/endpoint sidebar; ``remember`` keeps the choice in the
        settings for the next start."""
        self._remember_sidebar = remember
        if self.sidebar_button.isChecked() == shown:
            self._sidebar_toggled(shown)
        else:
            self.sidebar_button.setChecked(shown)
        self._remember_sidebar = True

    def _sidebar_toggled(self, shown: bool) -> None:
        self.sidebar.setVisible(shown)
        self.sidebar_button.setText("◀ Questions" if shown else "Questions ▶")
        if getattr(self, "_remember_sidebar", True):
            self.settings = self.settings.model_copy(update={"sidebar_collapsed": not shown})
            self._persist.request()

    def _show_endpoint(self) -> None:
        self.set_sidebar_shown(True)
        self.sidebar.setCurrentIndex(1)

    def _toggle_theme(self) -> None:
        new = "light" if self.settings.theme == "dark" else "dark"
        self.settings = self.settings.model_copy(update={"theme": new})
        self._persist.request()
        self.statusBar().showMessage(f"The {new} theme applies at the next start.")

    def _save_settings(self) -> None:
        settings = self._persisted()

        async def save() -> None:
            try:
                await asyncio.to_thread(save_settings, settings)
            except OSError as exc:
                self.statusBar().showMessage(f"Could not save settings: {exc.strerror or exc}")

        spawn(save())

    def _fit_to_screen(self, size: tuple[int, int] | None) -> None:
        """The last size, or 1500 × 940 (scaled), never larger than the screen's free area
        (offscreen has no real screen: its 800 × 800 would only shrink screenshots)."""
        w, h = size or (int(1500 * min(self.scale, 1.3)), int(940 * min(self.scale, 1.3)))
        screen = self.screen() or QGuiApplication.primaryScreen()
        if screen is not None and QGuiApplication.platformName() != "offscreen":
            free = screen.availableGeometry()
            w, h = min(w, free.width()), min(h, free.height())
        self.resize(w, h)

    def _persisted(self) -> AppSettings:
        settings = self.settings
        if self.remember_size and not self.isMaximized() and not self.isFullScreen():
            settings = settings.model_copy(update={"window_size": (self.width(), self.height())})
        if self.kept_inputs is not None:  # a scenario's inputs are for this session only
            kept = self.kept_inputs
            return settings.model_copy(update={k: getattr(kept, k) for k in SCENARIO_INPUTS})
        if self._saved_endpoint is None:
            return settings
        return settings.model_copy(update={"endpoint": self._saved_endpoint})

    def _endpoint_edited(self) -> None:
        self._saved_endpoint = None  # the user chose: save what they chose
        if self.statusBar().currentMessage().startswith("Ready."):  # it follows the endpoint
            self.statusBar().showMessage(self._ready_line())

    def _ready_line(self) -> str:
        """The status line before a run: where the requests will go."""
        ep = self.endpoint.settings()
        if ep.is_builtin:
            return "Ready. The built-in endpoint needs no network."
        return f"Ready. Endpoint: {ep.host} · {ep.model or 'no model'}"

    def _busy_changed(self, busy: bool) -> None:
        self.stop_button.setEnabled(busy)
        self.run_button.setEnabled(not busy and self.questions.problem() is None)
        self.questions.set_locked(busy)
        self.endpoint.setEnabled(not busy)

    # -- runs -----------------------------------------------------------------------------------
    @task_slot
    async def start_run(self) -> None:
        """Start a run with the current questions, endpoint and mode (Ctrl+Enter)."""
        if self.controller.busy or self._closing:
            return
        problem = self.questions.problem()
        if problem is not None:
            self.statusBar().showMessage(problem)
            return
        try:
            request = RunRequest(
                endpoint=self.endpoint.settings(),
                api_key=await self.endpoint.api_key(),
                questions=self.questions.questions(),
                template=self.questions.template(),
                mode=self.mode.currentData(),
                with_sequential=self.sequential.isChecked()
                and self.mode.currentData() == "one-after-another",
                key_problem=await self.endpoint.key_problem(),
                client=self.engineer.take(),
                capture_raw=self.engineer.keep_raw.isChecked(),
            )
            self.engineer.run_key = request.api_key  # masked in the inspector's raw lines
            ep, sim = request.endpoint, self.controller.sim
            # the wait before the first request says what it waits for (the panes are
            # planned meanwhile: _plan_panes keeps it)
            if not ep.is_builtin:
                self._waiting_for = f"connecting to {ep.host}…"
            elif sim is None or not sim.alive():
                self._waiting_for = "starting the built-in endpoint…"
            if self._waiting_for:
                self.summary.clear(self._waiting_for)
            try:
                await self.controller.start(request)
            finally:
                self._waiting_for = ""
        except Exception as exc:  # never raised into Qt, never silent: said where it shows
            if not isinstance(exc, ControllerError):
                log.exception("Run could not start")

            def show(exc: Exception = exc) -> None:
                self.statusBar().showMessage(f"Cannot run: {exc}")
                self.summary.headline.setText(
                    f"<span style='color:{self.theme.error}'>"
                    f"Cannot run: {html.escape(str(exc))}</span>"
                )

            self._after_finish(show)  # after the failed run's own end, which it explains

    def _clear_panes(self) -> None:
        self.grid.clear()
        layout = self.combined_layout
        while layout.count():
            item = layout.takeAt(0)
            w = item.widget() if item is not None else None
            if w is not None and w is not self._combined_placeholder:
                dispose(w)  # now, and let go of its run (see grid.dispose)
        self._combined_placeholder.hide()
        self.panes = {}
        self._sequential = None

    def _run_planned(
        self, plan: RunPlan, questions: list[str], labels: list[str] | None = None
    ) -> None:
        """Build every pane of the coming run now, before anything is sent. ``labels``:
        the questions' short labels (a replay's recorded titles); by default the editor's
        when it holds these questions, else derived from the texts."""
        self._plan_panes(plan, questions, labels)
        self.complete_panes()

    def _run_planned_in_steps(self, plan: RunPlan, questions: list[str]) -> None:
        """A live run's panes: built ``BUILD_SLICE_MS`` at a time, one slice per
        event-loop turn, then laid out in one pass. The run does not wait for them: the
        engine sends once the run's state has every request, and a pane built after its
        request started binds to its trace and shows all it has (its text, figures and
        state are read from the :class:`RunState`). Anything that needs every pane (the
        run's end) builds the rest first (:meth:`complete_panes`)."""
        self._plan_panes(plan, questions, None)
        build_no = self._build_no  # from the next turn: this one pressed Run and planned
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

    def _plan_panes(self, plan: RunPlan, questions: list[str], labels: list[str] | None) -> None:
        """Clear the previous run's panes and queue the coming run's."""
        self._clear_panes()
        self.timeline.clear()
        self.summary.clear(self._waiting_for or "Starting…")
        self._questions = questions
        if labels is None:
            labels = self.questions.labels() if questions == self.questions.questions() else []
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
        # no parallel request (dependent questions: combined vs the chain): no empty column;
        # the combined and sequential panes take the width
        parallel = any(s.group not in ("combined", "sequential") for s in plan.requests)
        right_col = self.grid.parentWidget()
        if right_col is not None:
            right_col.setVisible(parallel)

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
            self._panes_built()

    def _build_one(self) -> None:
        index, spec = self._to_build.popleft()
        self._make_pane(index, spec.group, spec.questions, relayout=False)
        state = self._build_state
        if state is not None and index < len(state.requests):  # planned before it was built
            self._bind_pane(index)

    def _panes_built(self) -> None:
        """Every pane of the run is built: one layout pass, and the split of the room."""
        self._laid_out = True
        self.grid.relayout_now()
        self._fit_room()

    def _fit_room(self) -> None:
        """The timeline's room for the run's lanes, and the panes' split."""
        self._fit_timeline(self._build_lanes)
        # many questions: the parallel side gets two thirds of the width (more columns)
        total = sum(self.pane_split.sizes())
        share = 0.4 if len(self._questions) <= 5 else 0.3
        self.pane_split.setSizes([int(total * share), total - int(total * share)])

    _lanes_wanted = 1  #: lanes of the current run (the timeline's room follows them)
    #: What a run being started waits for before its first request, said in the summary
    #: while its panes are planned ("starting the built-in endpoint…"); empty otherwise.
    _waiting_for = ""

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
        # the parallel lanes packed into one block (ui/timeline.py), beside a combined and
        # perhaps a sequential lane of their own
        packed = fixed + int(2.2 * small_px + max(0, lanes - 2) * PACKED_MIN_PX) + axis + 2
        if wanted <= int(h * 0.6):
            bottom = max(wanted, int(h * 0.4))
        elif need <= room:
            bottom = max(min(wanted, room), int(h * 0.6))
        else:  # too many lanes to name each: room for them packed, where the panes allow
            bottom = max(min(packed, room), int(h * 0.6))
        self._auto_sizing = True
        self.main_split.setSizes([h - bottom, bottom])
        self._auto_sizing = False

    def _server_lane_start(self, state: RunState) -> None:
        """Poll the run's endpoint for the server lane (its own thread; never blocks)."""
        self.summary.client_note = self.engineer.used.short()
        self.engineer.load_prices_for_run()  # each side's cost beside its time
        sim = self.controller.sim
        self.server_lane.start(state, self.endpoint.settings(), sim.url if sim else None)

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

    def _below_timeline(self, width: int) -> int:
        """Pixels the other shown widgets under the panes (summary strip, server lane…)
        need at ``width``: wrapped text at its real height, not its size hint's guess."""
        holder = self.main_split.widget(1)
        lay = holder.layout() if holder is not None else None
        total = 0
        for i in range(lay.count() if lay is not None else 0):
            item = lay.itemAt(i) if lay is not None else None
            w = item.widget() if item is not None else None
            # the timeline itself, or the splitter holding it beside the tokens chart
            if w is None or w is self.timeline or w.isAncestorOf(self.timeline) or w.isHidden():
                continue
            inner = w.layout()
            if inner is not None and inner.hasHeightForWidth():
                total += inner.totalHeightForWidth(width)
            elif w.hasHeightForWidth():
                total += w.heightForWidth(width)
            else:
                total += max(w.minimumHeight(), w.sizeHint().height())
        return total

    def _divider_dragged(self) -> None:
        if not self._auto_sizing:
            self._divider_moved = True

    def _run_started(self, state: RunState) -> None:
        self.state = state
        self._build_state = state  # panes still to build bind to it as they are made
        questions = self._questions
        state.subscribe(self._on_event)
        self.timeline.bind(state, questions, self._labels)
        self.summary.bind(state)
        self.statusBar().showMessage("Running… (Esc stops)")

    def _on_event(self, ev: RunEvent) -> None:
        if isinstance(ev, RequestPlanned):
            self._add_pane(ev)
        elif isinstance(ev, RunEnded):
            self.complete_panes()
            if self.controller.live is None:  # a replay: its last frame at once
                for pane in self.panes.values():
                    pane.changed(final=True)
            # a live run's panes finish in steps once the controller says it ended
            # (:meth:`_run_finished`)
            if self._sequential is not None:
                self._sequential.changed(final=True)
        else:
            req = getattr(ev, "req", None)
            if req is not None:
                target = self.panes.get(req)
                if target is not None:
                    # an ended request shows its end at the next frame (≤ LIVE_FRAME_MS), not
                    # inside this drain: 64 requests ending in one batch step refreshed all
                    # 64 panes in one event-loop turn
                    target.changed()
        self.timeline.throttle.request()

    def _add_pane(self, ev: RequestPlanned) -> None:
        """Bind request ``ev.req`` to its pane (made now if the plan did not announce it,
        as in a replay; bound when it is built if it is still queued)."""
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
            self.combined_layout.addWidget(pane, 2)
        elif group == "sequential":
            if self._sequential is None:
                self._sequential = SequentialPane(questions, self.theme, self.scale)
                self.combined_layout.addWidget(self._sequential, 1)
            pane = self._sequential
        else:
            q = questions_of[0]
            text = questions[q] if q < len(questions) else ""
            label = self._labels[q] if q < len(self._labels) else question_label(text)
            pane = RequestPane(f"Q{q + 1}", label, lane_hex(q), self.theme, self.scale)
            pane.title.setToolTip(text)
            self.grid.add(pane, relayout)
            n = len(self.grid.panes)
            self.parallel_title.setText(f"PARALLEL · {n} request{'s' if n != 1 else ''}")
            self.parallel_title.setToolTip("One request per question, all sent at once")
        self.engineer.attach_inspector(pane, index)  # right-click: Inspect stream…
        # at its end through size/layout changes (the reasoning view, made on demand, too)
        follow_end(pane.text, pane.text.scroll_to_end)
        self.panes[index] = pane
        return pane

    def _predictions(self, predictions: list[PredictedRequest]) -> None:
        self.timeline.set_predictions(predictions)
        self.summary.set_predictions(predictions)

    def _run_fair_mode(self) -> None:
        """The summary's offer after a side-by-side run on a one-slot server: measure the
        two ways one after another, each on an idle server."""
        if self.controller.busy:
            return
        self.mode.setCurrentIndex(max(0, self.mode.findData("one-after-another")))
        self.start_run()

    def _run_finished(self, state: RunState) -> None:
        """The run ended (a replay's end, or :meth:`_live_run_finished`'s last step):
        every pane, the timeline, summary and status take the final figures now, and
        :attr:`runFinished` is emitted."""
        self.complete_panes()
        for pane in self.panes.values():
            pane.changed(final=True)
        self.timeline.finish()
        self._finish_run(state)

    def _live_run_finished(self, state: RunState) -> None:
        """A live run ended: as :meth:`_run_finished`, spread over event-loop turns so the
        window never freezes at the end of a large run (64 final pane refreshes, the
        timeline's last frame and one paint of it all took 40-70 ms in one turn): the
        panes :data:`BUILD_SLICE_MS` at a time, the timeline a frame later (painted apart
        from the panes), then the summary and :attr:`runFinished`. Until then a message
        for the status bar waits (:meth:`_after_finish`)."""
        self.complete_panes()
        self._finishing = True
        build_no, panes = self._build_no, deque(self.panes.values())

        def timeline_then_summary() -> None:
            self.timeline.finish()
            self._later(build_no, 0, lambda: self._finish_run(state))

        self._in_slices(
            build_no,
            lambda: bool(panes),
            lambda: panes.popleft().changed(final=True),
            timeline_then_summary,
            LIVE_FRAME_MS,
        )

    def _after_finish(self, show: Callable[[], None]) -> None:
        """Call ``show`` once the run that is ending shows its end (at once when none is):
        what it says is not then replaced by the run's own summary."""
        if self._finishing:
            self._pending_after_finish.append(show)
        else:
            show()

    def _finish_run(self, state: RunState) -> None:
        self.summary.throttle.request()
        self.summary.throttle.flush()
        in_banner = self.summary.shared_failure is not None  # one message, not one per pane
        for pane in self.panes.values():
            pane.set_error_in_banner(in_banner)
        stopped = state.ended is not None and state.ended.stopped
        failed = [r for r in state.requests if r.outcome == "failed"]
        msg = "Stopped." if stopped else "Done."
        if failed:  # the error stays in view: never a bare "Done." over a failure
            why = next((r.error.message for r in failed if r.error is not None), "")
            msg = (
                f"{'Stopped' if stopped else 'Finished'} — {len(failed)} of "
                f"{len(state.requests)} request(s) failed: {why}"
            )
        self.statusBar().showMessage(msg)
        self._inputs_changed()
        self._finishing = False
        pending, self._pending_after_finish = self._pending_after_finish, []
        for show in pending:
            show()
        self.runFinished.emit(state)

    def showEvent(self, event: QShowEvent) -> None:
        """First show: give the panes a bit more than half the height."""
        super().showEvent(event)
        self._fit_endpoint_button()
        if not self._sized:
            self._sized = True
            chosen = self.settings.sidebar_collapsed
            if chosen is None:  # not chosen yet: a narrow window (a projector) hides it
                self.set_sidebar_shown(self.width() >= 1000 * self.scale, remember=False)
            else:
                self.set_sidebar_shown(not chosen, remember=False)
            # the questions column: up to 380 px (scaled), at most 30 % of a small window
            side = min(int(380 * self.scale), int(self.width() * 0.3))
            self._outer.setSizes([side, max(self.width() - side, 1)])
            h = self.main_split.height()
            self._auto_sizing = True
            self.main_split.setSizes([int(h * 0.56), int(h * 0.44)])
            self._auto_sizing = False

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """The summary strip's wrapped lines decide its height: a splitter would squeeze
        it and cut the headline's second line; the timeline above gives way instead (its
        lanes scroll). On a short window the details line gives way first (shown on
        hover)."""
        if watched is self.summary and event.type() in (
            QEvent.Type.LayoutRequest,
            QEvent.Type.Resize,
        ):
            lay = self.summary.layout()
            if lay is not None and self.summary.width() > 0:
                details = self.summary.details
                need = lay.totalHeightForWidth(self.summary.width())
                tight = need > 0.36 * self.main_split.height()  # a projector's short window
                if tight and not details.isHidden():  # the least needed line gives way
                    details.hide()
                    need = lay.totalHeightForWidth(self.summary.width())
                elif details.isHidden() and details.text():
                    extra = details.heightForWidth(self.summary.width()) + lay.spacing()
                    if need + extra <= 0.36 * self.main_split.height():
                        details.show()  # room again (a taller window)
                        need += extra
                self.summary.setToolTip(details.text() if details.isHidden() else "")
                if need > 0 and need != self.summary.maximumHeight():
                    # fixed: a splitter's child layout would otherwise give the strip its
                    # height-for-width below the timeline and cut its last line
                    self.summary.setFixedHeight(need)
                    self._fit_timeline(self._lanes_wanted)  # the timeline keeps its room
        return super().eventFilter(watched, event)

    # -- closing --------------------------------------------------------------------------------
    def closeEvent(self, event: QCloseEvent) -> None:
        """Stop streams, the engine and the built-in endpoint before the window goes."""
        if self._closed:
            event.accept()
            return
        event.ignore()
        if not self._closing:
            self._closing = True
            spawn(self._close_async())

    async def _close_async(self) -> None:
        self._persist.cancel()
        await cancel_pending()  # tasks started from slots end now, none left pending
        try:
            await asyncio.to_thread(save_settings, self._persisted())
        except OSError as exc:
            log.warning("could not save settings: %s", exc)
        try:
            await asyncio.wait_for(self.controller.shutdown(), 3.0)
        except (TimeoutError, Exception):
            log.exception("shutdown was not clean")
            await asyncio.to_thread(self.controller.close_sync)
        self._closed = True
        self.close()
        self.closed.emit()
