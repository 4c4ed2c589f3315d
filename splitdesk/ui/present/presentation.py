"""Presentation mode: give the talk from the app.

F11, the toolbar's "Present" button or ``splitdesk --present``: full screen, the window's
chrome (sidebar, toolbars, menus, status line) hidden, large type, a high-contrast palette
(:data:`PRESENT_DARK`, or :data:`PRESENT_LIGHT` when the light theme is chosen), and the
stage in its presentation look (:class:`~splitdesk.ui.stage.stage.Stage` ``look="present"``:
the caption bar on top, no predicted figures, no server lane).

Scenarios (:mod:`splitdesk.core.files.scenarios`) are the slides. Changing scenario (←/→,
1–9) shows that scenario's own state and never another's result: the result it had
earlier in this session (its run, or its recording, at its end), else an empty stage
saying what Space will do, or its recording ready at its start. Space runs the scenario
(its questions, endpoint and mode) or plays and pauses its recording; the caption bar
names the keys that do something now.

Keys while presenting: Space, Esc (stop a run, pause a replay, else leave), R (the last
result again from its start), T (the tokens chart), A (the answers side by side), ←/→ and
1–9 (scenarios), +/− (type size). The recordings a scenario plays are played here, on the stage, by presentation
mode's own :class:`~splitdesk.ui.stage.playback.StagePlayer`.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QAction, QGuiApplication, QKeySequence, QShortcut

from splitdesk.core.analyse.diagnosis import diagnose_state
from splitdesk.core.analyse.plain import VerdictKind, measured_verdict
from splitdesk.core.files.recording import Recording, RecordingError, load_recording
from splitdesk.core.files.scenarios import Scenario, ScenarioError, builtin_scenarios
from splitdesk.core.run.run_state import RunState
from splitdesk.ui.common.tasks import spawn
from splitdesk.ui.common.theme import (
    MAX_STEPS,
    Theme,
    present_scale,
    present_theme,
)
from splitdesk.ui.stage.playback import StagePlayer

if TYPE_CHECKING:
    from splitdesk.ui.port import Port

log = logging.getLogger(__name__)

#: What the empty stage says while presenting (there is no Run button to press).
IDLE_TEXT = "Press Space to send the questions both ways."


class Presentation(QObject):
    """Presentation mode of the window behind ``port`` (module docstring).

    Signals:
        activeChanged(bool): presentation mode entered (True) or left (False).
        scenarioChanged(object): the :class:`~splitdesk.core.files.scenarios.Scenario` now
            shown.
    """

    activeChanged = Signal(bool)
    scenarioChanged = Signal(object)

    def __init__(self, port: Port) -> None:
        super().__init__(port.widget)
        self.port = port
        self.active = False
        self.scenarios: list[Scenario] = []
        try:
            self.scenarios = list(builtin_scenarios().values())
        except ScenarioError as exc:  # a broken install: said, never a crash
            log.error("scenarios not loaded: %s", exc)
        self.index = -1  #: the scenario shown (-1: none, the window's own questions)
        self.steps = 0  #: presses of + (positive) or − (negative)
        #: Presentation mode's own player: a scenario's recording, or a result shown again.
        self.player: StagePlayer | None = None
        #: What the player plays: "recording" (the scenario's own) or "result" (a run of
        #: this session shown again).
        self.playing_what = ""
        #: Each scenario's last result this session (scenario name → its recording), shown
        #: again when the talk comes back to it.
        self.results: dict[str, Recording] = {}
        #: The recordings scenarios replay, once read (path → recording).
        self._loaded: dict[str, Recording] = {}
        self._own: tuple[Theme, float, str] | None = None
        self.action = QAction("▣ Present", port.widget)  # ⛶ (U+26F6) is in no font we ship
        self.action.setToolTip("Presentation mode: full screen, large type, captions (F11)")
        self.action.setCheckable(True)
        self.action.triggered.connect(self.set_active)
        port.add_toolbar_action(self.action, "▣")
        QShortcut(QKeySequence("F11"), port.widget, self.toggle)
        self._keys: list[QShortcut] = []
        for keys, slot in (
            ("Space", self.space),
            ("Escape", self.escape),
            ("R", self.replay_last),
            ("T", self.toggle_chart),
            ("A", self.toggle_answers),
            ("Left", self.previous),
            ("Right", self.next),
            ("+", self.bigger),
            ("=", self.bigger),
            ("-", self.smaller),
            *((str(k), lambda k=k: self.jump(k - 1)) for k in range(1, 10)),
        ):
            shortcut = QShortcut(QKeySequence(keys), port.widget, slot)
            shortcut.setEnabled(False)
            self._keys.append(shortcut)
        port.on_run_shown(self._finished)
        port.stage.claimed.connect(self._claimed)
        port.runs.runPlanned.connect(lambda *_: self._measured(""))
        port.runs.busyChanged.connect(lambda _b: self._show_caption())

    @property
    def caption_bar(self) -> Any:
        """The stage's caption bar (shown in the presentation look)."""
        return self.port.stage.caption

    # -- entering and leaving ---------------------------------------------------------------------
    def toggle(self) -> None:
        """F11: enter or leave presentation mode."""
        self.set_active(not self.active)

    def set_active(self, on: bool) -> None:
        """Enter (``on``) or leave presentation mode. Refused with a status message while a
        live run is in progress (the stage's views are rebuilt)."""
        port = self.port
        if on == self.active:
            self.action.setChecked(on)
            return
        if port.runs.busy:
            self.action.setChecked(self.active)
            port.say("Stop the run first (Esc), then switch presentation mode.")
            return
        if on:
            self._own = (port.theme, port.scale, port.stage.idle_text)
            port.set_chrome_shown(False)
            self.active = True
            port.set_full_screen(True)
            port.stage.set_idle_text(IDLE_TEXT)
            self.restyle()
            for shortcut in self._keys:
                shortcut.setEnabled(True)
            self._show_caption()
        else:
            for shortcut in self._keys:
                shortcut.setEnabled(False)
            self.active = False
            if self.player is not None:
                self.player.pause()
            port.set_chrome_shown(True)
            port.set_full_screen(False)
            port.restore_inputs()
            port.set_run_title(None)
            theme, scale, idle = self._own or (port.theme, port.scale, port.stage.idle_text)
            port.stage.set_idle_text(idle)
            port.restyle(theme, scale, "window")
        self.action.setChecked(self.active)
        self.activeChanged.emit(self.active)

    # -- look -------------------------------------------------------------------------------------
    def presentation_theme(self) -> Theme:
        """The high-contrast palette: light when the window's own look is light."""
        return present_theme(self._own[0] if self._own is not None else self.port.theme)

    def presentation_scale(self) -> float:
        """The type scale for the window's size and the +/− steps."""
        w = self.port.widget
        screen = w.screen()
        if QGuiApplication.platformName() != "offscreen" and screen is not None:
            size = screen.geometry().size()
            width, height = size.width(), size.height()
        else:
            width, height = w.width(), w.height()
        return present_scale(width, height, self.steps)

    def restyle(self) -> None:
        """The window and its stage in the presentation look (palette, type scale); the
        run on show is shown again in it."""
        self.port.restyle(self.presentation_theme(), self.presentation_scale(), "present")
        self.caption_bar.restyle(self.port.theme, self.port.scale)
        self._show_caption()

    def bigger(self) -> None:
        """+: larger type."""
        self._step(1)

    def smaller(self) -> None:
        """−: smaller type."""
        self._step(-1)

    def _step(self, delta: int) -> None:
        steps = max(-MAX_STEPS, min(MAX_STEPS, self.steps + delta))
        if steps == self.steps or self.port.runs.busy:
            return
        self.steps = steps
        self.restyle()

    # -- scenarios --------------------------------------------------------------------------------
    def scenario(self) -> Scenario | None:
        """The scenario shown, if any."""
        return self.scenarios[self.index] if 0 <= self.index < len(self.scenarios) else None

    def select(self, name: str) -> None:
        """Show the scenario called ``name``. Raises ``KeyError`` naming the known ones."""
        names = [s.name for s in self.scenarios]
        if name not in names:
            raise KeyError(f"unknown scenario {name!r}; known: {', '.join(names)}")
        self.jump(names.index(name))

    def open_scenario(self, scenario: Scenario) -> None:
        """Show ``scenario`` (a shipped one, or one read from a file, which joins the list)."""
        names = [s.name for s in self.scenarios]
        if scenario.name in names and self.scenarios[names.index(scenario.name)] == scenario:
            self.jump(names.index(scenario.name))
            return
        self.scenarios.append(scenario)
        self.jump(len(self.scenarios) - 1)

    def jump(self, index: int) -> None:
        """Show scenario ``index`` (0-based; ignored out of range or during a live run):
        its inputs (questions, built-in endpoint, mode) and its own state on the stage —
        its last result this session at its end, else its recording at its start, else an
        empty stage saying what Space will do. Never another scenario's result."""
        port = self.port
        if not 0 <= index < len(self.scenarios) or port.runs.busy:
            return
        self.index = index
        s = self.scenarios[index]
        port.set_run_title(s.title)  # its runs' recordings are named after it
        self._drop_player()
        self._measured("")
        if s.recording is None:
            ep = s.spec.endpoint
            settings = port.endpoint_settings().model_copy(
                update={
                    "preset": "builtin",
                    "api": "openai-chat",
                    "model": "splitdesk-sim",
                    "profile": ep.profile,
                    "max_tokens": s.spec.run.max_tokens or 100_000,
                    "retry_429": s.spec.run.retry_429,
                }
            )
            overrides = {k: v for k, v in ep.params.items() if k != "speed"}
            port.use_inputs(s.question_set, settings, s.spec.run.mode, overrides)
        kept = self.results.get(s.name)
        if kept is not None:
            self._play(kept, "result", end=True)
        elif s.recording is not None:
            port.stage.claim(self)
            port.stage.clear(f"Opening the recording of “{s.title}”…")
            spawn(self._open_recording(s, index, play=False))
        else:
            port.stage.claim(self)
            port.stage.clear(f"Press Space to run “{s.title}”.")
        self._show_caption()
        self.scenarioChanged.emit(s)

    async def _open_recording(self, s: Scenario, index: int, play: bool) -> None:
        """Read scenario ``s``'s recording off the GUI thread and show it at its start
        (``play``: playing) — unless the talk moved on meanwhile."""
        path = s.recording
        assert path is not None
        recording = self._loaded.get(str(path))
        if recording is None:
            try:
                recording = await asyncio.to_thread(load_recording, path)
            except RecordingError as exc:
                if self.index == index:
                    self.port.stage.clear(f"The recording of “{s.title}” cannot be opened.")
                    self.port.say(str(exc))
                return
            self._loaded[str(path)] = recording
        if self.index != index or self.port.runs.busy:
            return
        self._play(recording, "recording", end=False, playing=play)
        self._show_caption()

    def previous(self) -> None:
        """←: the previous scenario."""
        self.jump(max(0, self.index - 1))

    def next(self) -> None:
        """→: the next scenario."""
        self.jump(min(len(self.scenarios) - 1, self.index + 1))

    # -- what the stage plays -----------------------------------------------------------------------
    def _play(self, recording: Recording, what: str, end: bool, playing: bool = True) -> None:
        """Show ``recording`` on the stage with this mode's own player: at its end
        (``end``), or from its start, playing or paused."""
        self._drop_player()
        player = StagePlayer(self.port.stage, recording, 0, 1.0, self)
        self.player, self.playing_what = player, what
        player.playingChanged.connect(lambda _p: self._show_caption())
        if end:
            player.show_end()
        elif playing:
            player.start()
        else:
            player.start_paused()

    def _drop_player(self) -> None:
        if self.player is not None:
            self.player.stop()
            self.player.deleteLater()
            self.player = None
            self.playing_what = ""

    def _claimed(self, driver: object) -> None:
        """Another driver took the stage (a live run, a recording dropped on the window):
        this mode's player lets go; the keys follow what plays now."""
        if self.player is not None and driver is not self.player:
            self._drop_player()
        if isinstance(driver, StagePlayer) and driver is not self.player:
            driver.playingChanged.connect(lambda _p: self._show_caption())
        self._show_caption()

    # -- captions ---------------------------------------------------------------------------------
    def _measured(self, text: str, kind: VerdictKind = "no-verdict") -> None:
        self.caption_bar.show_measured(text, kind)

    def keys_text(self) -> str:
        """The keys that do something now, as the caption bar names them."""
        s = self.scenario()
        busy = self.port.runs.busy
        player, what = self.player, self.playing_what
        other = self._other_player()
        if player is None and other is not None:
            player, what = other, "recording"
        if busy:
            space = ""
        elif player is not None and (what == "recording" or player.playing):
            space = "Space pause" if player.playing else "Space play"
        elif s is not None and s.recording is not None:
            space = "Space play"
        else:
            space = "Space run"
        parts = [space] if space else []
        shown = self.results.get(s.name) if s is not None else None
        if not busy and (shown is not None or self.port.current_recording() is not None):
            parts.append("R replay")
        parts += ["T chart", "A answers", "←/→ scenario", "+/− size"]
        if busy:
            parts.append("Esc stop")
        elif player is not None and player.playing:
            parts.append("Esc pause")
        else:
            parts.append("Esc leave")
        return " · ".join(parts)

    def _show_caption(self) -> None:
        s = self.scenario()
        bar = self.caption_bar
        if s is None:
            bar.where.setText("splitdesk")
            bar.caption.setText(
                "One combined request or N parallel requests: which finishes first?"
            )
        else:
            bar.where.setText(f"{self.index + 1} / {len(self.scenarios)} · {s.title}")
            bar.caption.setText(s.caption)
        bar.keys.setText(self.keys_text())

    def _finished(self, state: RunState) -> None:
        """A run's or replay's end is on the stage: the measured line beside the caption,
        and — a live run of the scenario shown — that scenario's result this session."""
        if state.ended is not None and state.ended.stopped:
            self._measured("Stopped: nothing measured.")
        else:
            v = measured_verdict(state, diagnose_state(state))
            self._measured(f"Measured: {v.text}", v.kind)
        s = self.scenario()
        if s is not None and self.port.stage.driver is self.port.runs:
            recording = self.port.current_recording()
            if recording is not None:
                self.results[s.name] = recording
        self._show_caption()

    # -- keys -------------------------------------------------------------------------------------
    def _other_player(self) -> StagePlayer | None:
        """A player other than this mode's that drives the stage now (a recording opened
        while presenting, dropped on the window)."""
        driver = self.port.stage.driver
        if isinstance(driver, StagePlayer) and driver is not self.player:
            return driver
        return None

    def space(self) -> None:
        """Space: what the scenario says — run it (its questions, endpoint and mode), or
        play and pause its recording (or whatever recording the stage plays now)."""
        port, player = self.port, self.player
        if port.runs.busy:
            return
        other = self._other_player()
        if other is not None:
            if other.done:
                other.restart()
            else:
                other.toggle()
            return
        s = self.scenario()
        if s is not None and s.recording is not None:
            if player is not None and self.playing_what == "recording":
                if player.done:
                    player.restart()
                else:
                    player.toggle()
            else:
                spawn(self._open_recording(s, self.index, play=True))
            return
        if player is not None and self.playing_what == "result" and not player.done:
            player.toggle()
            return
        port.start_run()

    def play(self) -> None:
        """Play the scenario shown as it says (``splitdesk --scenario NAME --run``): its
        recording from the start, or a run of its questions, endpoint and mode; nothing
        while a run is in progress."""
        s = self.scenario()
        if s is not None and s.recording is not None and not self.port.runs.busy:
            spawn(self._open_recording(s, self.index, play=True))
        else:
            self.space()

    def escape(self) -> None:
        """Esc: stop a live run (or pause a playing replay), else leave presentation mode."""
        port = self.port
        playing = [p for p in (self.player, self._other_player()) if p is not None and p.playing]
        if port.runs.busy:
            port.runs.stop()
        elif playing:
            playing[0].pause()
        else:
            self.set_active(False)

    def toggle_chart(self) -> None:
        """T: show or hide the tokens chart beside the timeline."""
        stage = self.port.stage
        stage.show_chart(stage.chart.isHidden())

    def toggle_answers(self) -> None:
        """A: the run on show's answers side by side (again: closes them)."""
        stage = self.port.stage
        if stage.answers is not None and stage.answers.isVisible():
            stage.answers.close()
            stage.answers = None
        elif stage.show_answers() is None:
            self.port.say("Nothing to compare yet: press Space to run.")

    def replay_last(self) -> None:
        """R: the scenario's last result (or the recording on show) again from its start."""
        port = self.port
        s = self.scenario()
        recording = self.results.get(s.name) if s is not None else None
        recording = recording or port.current_recording()
        if recording is None or port.runs.busy:
            port.say("Nothing to replay yet: press Space to run.")
            return
        self._play(recording, "result", end=False)
        self._show_caption()
