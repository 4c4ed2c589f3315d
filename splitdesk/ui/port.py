"""The port: what a feature of the window may use of it, and nothing more.

The window (:mod:`splitdesk.ui.shell`) is a thin shell around one
:class:`~splitdesk.ui.stage.stage.Stage`: toolbar, sidebar, menus, the run controller and
persistence. The features — replay and recordings, exports, the Engineer menu,
presentation mode — each get a :class:`Port` when the shell builds them and never import
the shell, nor each other (import-linter contracts in ``pyproject.toml``). It is the rule
qutebrowser writes down for its components (``qutebrowser/api``: a component uses only
this API) and napari's split of the viewer from its window.

A feature drives the stage through the stage's own API, starts and stops runs through
:attr:`Port.runs` (the :class:`~splitdesk.ui.run.controller.RunController`: its signals say
when a run is planned, starts, has predictions and finishes), reads the user's inputs
(read-only: questions, endpoint, mode), says things in the status line, adds its menu
entries, toolbar rows and docks, and asks the shell for what another feature owns (the
recording on show) through the shell, never through that feature.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from PySide6.QtGui import QAction
    from PySide6.QtWidgets import QDockWidget, QMenu, QToolBar, QWidget

    from splitdesk.core.files.recording import Recording
    from splitdesk.core.files.settings import AppSettings
    from splitdesk.core.measure.client_pattern import ClientPattern
    from splitdesk.core.run.endpoints import EndpointSettings
    from splitdesk.core.run.plans import Mode
    from splitdesk.core.run.questions import QuestionSet
    from splitdesk.core.run.template import CombinedTemplate
    from splitdesk.ui.common.theme import Theme
    from splitdesk.ui.run.controller import RunController
    from splitdesk.ui.stage.stage import Look, Stage


class Port(Protocol):
    """The window as its features see it (module docstring)."""

    # -- what shows a run, and runs -------------------------------------------------------------
    @property
    def widget(self) -> QWidget:
        """The window as a plain widget: the parent of a feature's dialogs and shortcuts."""
        ...

    @property
    def stage(self) -> Stage:
        """The stage every run, replay and scenario is shown on."""
        ...

    @property
    def runs(self) -> RunController:
        """Start, stop, busy, the engine and the built-in endpoint; its signals
        (``runPlanned``, ``runStarted``, ``predictionsReady``, ``runFinished``,
        ``busyChanged``) say what a live run does."""
        ...

    def start_run(self) -> None:
        """Press Run: a live run of the inputs as they are (refused, said in the status
        line, when the inputs have a problem or a run is in progress)."""
        ...

    def on_run_shown(self, call: Callable[[Any], None]) -> Callable[[], None]:
        """Call ``call(state)`` each time a run's end is on the stage (a live run's or a
        replay's, once every view shows its final figures); returns the disconnect."""
        ...

    # -- the look --------------------------------------------------------------------------------
    @property
    def theme(self) -> Theme:
        """The window's theme now (a presentation palette while presenting)."""
        ...

    @property
    def scale(self) -> float:
        """The window's type scale now."""
        ...

    def restyle(self, theme: Theme, scale: float, look: Look) -> None:
        """Show the window and its stage in ``theme`` at ``scale`` and ``look``."""
        ...

    # -- the user's inputs, read-only ------------------------------------------------------------
    def question_set(self) -> QuestionSet:
        """The questions in the editor, with their titles and the set's template."""
        ...

    def question_texts(self) -> list[str]:
        """The questions' texts, in order."""
        ...

    def template(self) -> CombinedTemplate:
        """The combined prompt's template."""
        ...

    def question_problem(self) -> str | None:
        """Why the questions cannot be sent now (``None``: they can)."""
        ...

    def endpoint_settings(self) -> EndpointSettings:
        """The endpoint chosen (never its key)."""
        ...

    async def api_key(self) -> str | None:
        """The endpoint's API key from the keyring or the environment (never stored)."""
        ...

    async def key_problem(self) -> str | None:
        """Why the key the endpoint needs is missing (``None``: none is needed, or it is there)."""
        ...

    def mode_chosen(self) -> Mode:
        """The mode chosen in the toolbar."""
        ...

    def client_pattern(self) -> ClientPattern:
        """How the next run's client sends (the Engineer menu's choice)."""
        ...

    def app_settings(self) -> AppSettings:
        """The settings as they will be saved (read-only)."""
        ...

    # -- what a feature may change ---------------------------------------------------------------
    def say(self, text: str) -> None:
        """Put ``text`` in the status line."""
        ...

    def update_settings(self, **changes: Any) -> None:
        """Change settings fields (saved off the GUI thread a moment later)."""
        ...

    def use_inputs(
        self,
        question_set: QuestionSet,
        endpoint: EndpointSettings,
        mode: Mode,
        sim_overrides: dict[str, Any] | None = None,
    ) -> None:
        """Put a scenario's questions, endpoint and mode in the inputs for this session
        (the user's own stay in the settings file); ``sim_overrides``: built-in endpoint
        parameters beyond profile and speed."""
        ...

    def restore_inputs(self) -> None:
        """Give the user's own inputs back (after :meth:`use_inputs`)."""
        ...

    def set_chrome_shown(self, shown: bool) -> None:
        """Show or hide everything but the stage: sidebar, toolbars, menus, status line
        (presentation mode); hidden, the window's own Esc does nothing."""
        ...

    def chrome_shown(self) -> bool:
        """Whether the sidebar, toolbars, menus and status line are shown (not presenting)."""
        ...

    def set_full_screen(self, on: bool) -> None:
        """Full screen, or back to the window as it was."""
        ...

    def set_run_title(self, title: str | None) -> None:
        """Name the runs started from now on (a scenario's title: their recordings are
        saved under it); ``None``: by their mode."""
        ...

    def run_title(self) -> str | None:
        """The name :meth:`set_run_title` gave the runs, if any."""
        ...

    def set_title(self, title: str | None) -> None:
        """The window's title (``None``: its own)."""
        ...

    def menu(self, title: str) -> QMenu:
        """The menu bar's menu called ``title`` ("&File", "&View", "&Engineer"…), made on
        first use."""
        ...

    def add_toolbar_action(self, action: QAction, short: str | None = None) -> None:
        """Add ``action`` at the end of the main toolbar (``short``: its label when the
        toolbar is tight)."""
        ...

    def add_toolbar_row(self, bar: QToolBar) -> None:
        """Add ``bar`` as a toolbar row of its own under the main one."""
        ...

    def add_dock(self, dock: QDockWidget) -> None:
        """Add ``dock`` under the stage (hidden until the user opens it)."""
        ...

    # -- what the shell answers for another feature ----------------------------------------------
    def current_recording(self) -> Recording | None:
        """The recording on show: the replay shown, else the session's last run."""
        ...

    def recording_shown(self) -> tuple[Recording, int] | None:
        """The recording the stage plays now and which of its runs, if a replay shows."""
        ...
