"""A recorded run played on a stage: the same panes, timeline and summary as live.

:class:`ReplayPlayer` feeds a :class:`~splitdesk.core.files.recording.RunRecord`'s events to
a :class:`~splitdesk.core.run.run_state.RunState` on their recorded times (the
:func:`~splitdesk.core.files.recording.schedule`), scaled by a speed of 0.25×–4×. One frame
timer (16 ms) advances the playback position and applies every event now due in one
batch: never one timer per event. The state's clock (:attr:`RunState.clock`) is the
playback position, so views that draw a run in progress (the timeline's "now" line and
open bars) show recorded time, paused or not. Seeking forward applies the events up to
the new moment; seeking back rebuilds the state from the first event.

:class:`StagePlayer` binds a player to a :class:`~splitdesk.ui.stage.stage.Stage` through
the stage's own API (plan, bind, predictions, finish) with the recording's questions,
titles, predictions and server samples: the replay bar, presentation mode's scenarios and
the animation exports all play recordings this way. No network and no endpoint are used.
"""

from __future__ import annotations

import time

from PySide6.QtCore import QObject, QTimer, Signal

from splitdesk.core.files.recording import (
    Recording,
    RunRecord,
    plan_of,
    predictions_of,
    schedule,
)
from splitdesk.core.measure.client_cpu import observer_effect
from splitdesk.core.measure.server_metrics import series_of
from splitdesk.core.run.labels import question_label
from splitdesk.core.run.run_state import RunState
from splitdesk.ui.stage.stage import Stage

FRAME_MS = 16
SPEEDS = (0.25, 0.5, 1.0, 2.0, 4.0)
MIN_SPEED, MAX_SPEED = SPEEDS[0], SPEEDS[-1]
SCRUB_STEPS = 1000
#: Most wall-clock time one frame may advance the replay by (seconds).
MAX_STEP_S = 0.1


class ReplayPlayer(QObject):
    """Plays one recorded run into fresh :class:`RunState` objects.

    Signals:
        stateReset(object): a new :class:`RunState` to bind (at the start, on restart and on
            a seek back); its events follow.
        positionChanged(float): the playback position, seconds of recorded time.
        playingChanged(bool): playing or paused.
        finished(object): the state, once the last event is applied.
    """

    stateReset = Signal(object)
    positionChanged = Signal(float)
    playingChanged = Signal(bool)
    finished = Signal(object)

    def __init__(self, run: RunRecord, speed: float = 1.0, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.run = run
        self.events = run.events
        self.due = schedule(run)
        self.duration = self.due[-1] if self.due else 0.0
        self.speed = self.clamp_speed(speed)
        self.position = 0.0
        self.state = RunState()
        self._next = 0
        self._playing = False
        self._last_tick = 0.0
        self._timer = QTimer(self)
        self._timer.setInterval(FRAME_MS)
        self._timer.timeout.connect(self._tick)
        #: Events applied per frame, for the GUI-loop benchmark (last frame's count).
        self.last_batch = 0

    @staticmethod
    def clamp_speed(speed: float) -> float:
        """``speed`` limited to 0.25×–4×."""
        return min(MAX_SPEED, max(MIN_SPEED, speed))

    @property
    def playing(self) -> bool:
        return self._playing

    @property
    def done(self) -> bool:
        """Every event has been applied."""
        return self._next >= len(self.events)

    def start(self) -> None:
        """Begin from the start (a fresh state) and play."""
        self._reset()
        self.play()

    def _reset(self) -> None:
        self.state = RunState()
        self.state.clock = lambda: self.position
        self._next = 0
        self.position = 0.0
        self.stateReset.emit(self.state)

    def play(self) -> None:
        """Resume (from the start again when it had finished)."""
        if self.done:
            self._reset()
        self._last_tick = time.monotonic()
        self._timer.start()
        if not self._playing:
            self._playing = True
            self.playingChanged.emit(True)

    def pause(self) -> None:
        """Hold the position; views keep showing the state at that moment."""
        self._timer.stop()
        if self._playing:
            self._playing = False
            self.playingChanged.emit(False)

    def toggle(self) -> None:
        """Pause when playing, else play."""
        if self._playing:
            self.pause()
        else:
            self.play()

    def restart(self) -> None:
        """Back to the start, playing."""
        self.pause()
        self.start()

    def set_speed(self, speed: float) -> None:
        """Playback speed (recorded seconds per wall second), clamped to 0.25×–4×."""
        self.speed = self.clamp_speed(speed)

    def seek(self, t: float) -> None:
        """Show the state at recorded time ``t`` (seconds, clamped to the run): later
        events are applied at once; an earlier moment rebuilds the state from the start."""
        t = min(max(t, 0.0), self.duration)
        if t < self.position or (t == 0.0 and self._next):
            self._reset()
        self.position = t
        self._last_tick = time.monotonic()
        self._apply_due()
        self.positionChanged.emit(self.position)

    def _tick(self) -> None:
        now = time.monotonic()
        # A frame that came late (the GUI was busy laying out 64 new panes) advances at
        # most MAX_STEP_S of wall time: the replay slows down for a moment instead of
        # applying seconds of events in one frame. Recorded times are unchanged.
        step = min(now - self._last_tick, MAX_STEP_S)
        self.position = min(self.duration, self.position + step * self.speed)
        self._last_tick = now
        self._apply_due()
        self.positionChanged.emit(self.position)

    def _apply_due(self) -> None:
        events, due, state = self.events, self.due, self.state
        i, n = self._next, len(events)
        start = i
        while i < n and due[i] <= self.position:
            state.apply(events[i])
            i += 1
        self._next = i
        self.last_batch = i - start
        if i >= n and i > start:
            self.position = self.duration
            self.pause()
            self.finished.emit(state)

    def stop(self) -> None:
        """Stop the timer for good (the replay is closed)."""
        self._timer.stop()
        self._playing = False


class StagePlayer(QObject):
    """Plays run ``run`` of ``recording`` on ``stage`` (module docstring); the stage's end
    is shown when the last event is applied.

    Signals:
        positionChanged(float): the playback position, seconds of recorded time.
        playingChanged(bool): playing or paused.
        finished(object): the state, once the stage shows its end.
    """

    positionChanged = Signal(float)
    playingChanged = Signal(bool)
    finished = Signal(object)

    def __init__(
        self,
        stage: Stage,
        recording: Recording,
        run: int = 0,
        speed: float = 1.0,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        if not 0 <= run < len(recording.runs):
            raise ValueError(f"the recording has {len(recording.runs)} run(s), not {run + 1}")
        self.stage = stage
        self.recording = recording
        self.index = run
        self.record = recording.runs[run]
        self.player = ReplayPlayer(self.record, speed, self)
        self.player.stateReset.connect(self._bind)
        self.player.positionChanged.connect(self.positionChanged)
        self.player.playingChanged.connect(self.playingChanged)
        self.player.finished.connect(self._finished)

    @property
    def run(self) -> RunRecord:
        """The recorded run played."""
        return self.record

    @property
    def speed(self) -> float:
        """Recorded seconds per wall second (0.25×–4×)."""
        return self.player.speed

    @property
    def duration(self) -> float:
        """The run's length in recorded seconds."""
        return self.player.duration

    @property
    def position(self) -> float:
        """Where the playback is, in recorded seconds."""
        return self.player.position

    @property
    def playing(self) -> bool:
        return self.player.playing

    @property
    def done(self) -> bool:
        """Every event has been applied."""
        return self.player.done

    @property
    def state(self) -> RunState:
        """The state the stage shows."""
        return self.player.state

    def start(self) -> None:
        """Take the stage and show the run from its start, playing."""
        self.stage.claim(self)
        self.player.start()

    def start_paused(self) -> None:
        """Take the stage and show the run at its start, paused (a slide waiting for
        Space)."""
        self.stage.claim(self)
        self.player.start()
        self.player.pause()

    def show_end(self) -> None:
        """Take the stage and show the run's end at once (its last picture)."""
        self.stage.claim(self)
        self.player.start()
        self.seek(self.duration)

    def play(self) -> None:
        self.player.play()

    def pause(self) -> None:
        self.player.pause()

    def toggle(self) -> None:
        self.player.toggle()

    def restart(self) -> None:
        self.player.restart()

    def set_speed(self, speed: float) -> None:
        self.player.set_speed(speed)

    def seek(self, t: float) -> None:
        """Show the run at recorded time ``t`` seconds (paused): the stage's views take
        the new moment at once (at the end: its final picture)."""
        player = self.player
        player.pause()
        player.seek(t)
        self.stage.server_lane.redraw()  # the samples up to the new moment
        if not player.done:
            self.stage.timeline.throttle.request()
            self.stage.timeline.throttle.flush()
            self.stage.summary.throttle.request()
            self.stage.summary.throttle.flush()
            for pane in self.stage.panes.values():
                pane.changed()
                pane.throttle.flush()

    def stop(self) -> None:
        """Stop for good (the stage keeps its last picture; one another driver took is
        left alone)."""
        self.player.stop()
        if self.stage.driver is self:
            self.stage.timeline.finish()
            self.stage.server_lane.stop()

    def _bind(self, state: RunState) -> None:
        if self.stage.driver is not self:
            self.stage.claim(self)
        rec, run = self.recording, self.record
        labels = [question_label(q.text, q.title) for q in rec.questions]  # recorded titles
        stage = self.stage
        # the server lane first, so the timeline's height is divided knowing whether it shows
        stage.plan(plan_of(run), rec.question_texts, labels)
        stage.show_recorded_server(state, series_of(run.server))
        stage.bind(state)
        predictions = predictions_of(run)
        if predictions is not None:
            stage.predictions(predictions)

    def _finished(self, state: RunState) -> None:
        cpu = self.record.client_cpu  # what the live run said of splitdesk's own CPU
        if cpu is not None:
            self.stage.observe(observer_effect(cpu.figures(), cpu.local_endpoint))
        self.stage.finish(state)
        self.stage.server_lane.redraw()  # every recorded sample, at once
        self.finished.emit(state)
