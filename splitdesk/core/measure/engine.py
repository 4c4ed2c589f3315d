"""Run the measuring engine away from the GUI's event loop.

Painting dozens of panes on the GUI thread delays whatever else runs on that thread's
loop by milliseconds; timestamps taken there would carry that delay. Two ways out:

* :class:`EngineProcess` (what the window uses): the engine in its own process, events
  back as JSON lines (a few milliseconds of text events in one), typed and validated
  (:mod:`splitdesk.core.measure.engine_protocol`).
  Nothing the window does can delay a stamp: own interpreter, own GIL.
* :class:`EngineThread`: a daemon thread with its own asyncio loop. Enough when the
  process has little else to do (benchmarks, tests); under heavy painting the GUI thread
  holds the GIL in long Qt calls and the engine thread waits (``benchmarks/ui_load.py``).

Either way events reach the GUI through a ``collections.deque`` (appends and pops are
atomic) drained on a timer — no Qt signal crosses threads (PySide6 signals emitted from
foreign threads have crashed in 6.8+).
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import itertools
import logging
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from splitdesk.childproc import child_env, failure_line, module_command
from splitdesk.core.measure.engine_protocol import (
    CancelCommand,
    EndLine,
    ProtocolError,
    Ready,
    ReleaseCommand,
    RunCommand,
    TextsLine,
    decode_line,
    encode,
)
from splitdesk.core.measure.raw_reads import decode_raw
from splitdesk.core.measure.runner import RunConfig, Runner
from splitdesk.core.run.events import RunEvent
from splitdesk.core.run.plans import RunPlan

log = logging.getLogger(__name__)

#: The longest command line the engine process reads (bytes): its stdin reader's limit
#: (``engine_worker.serve``). A run's command holds its questions, prompts and plan.
MAX_COMMAND_BYTES = 64 * 1024 * 1024

T = TypeVar("T")

#: GIL switch interval while an engine thread runs (s): the engine thread waits at most
#: this long for the GUI thread's Python code to let it stamp an arrival (default 5 ms).
SWITCH_INTERVAL_S = 0.0005


class EngineThread:
    """A daemon thread running a private asyncio loop. Thread-safe API."""

    def __init__(self, name: str = "splitdesk-engine") -> None:
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._previous_interval = sys.getswitchinterval()
        self._thread.start()
        self._ready.wait()
        sys.setswitchinterval(SWITCH_INTERVAL_S)

    def _main(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.call_soon(self._ready.set)
        self._loop.run_forever()
        # Stopped: finish what is pending, then close.
        pending = asyncio.all_tasks(self._loop)
        for task in pending:
            task.cancel()
        if pending:
            self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        self._loop.run_until_complete(self._loop.shutdown_asyncgens())
        self._loop.close()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run ``coro`` on the engine loop; returns a thread-safe future of its result."""
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    def call(self, fn: Callable[[], Any]) -> None:
        """Call ``fn()`` on the engine loop's thread, soon."""
        self._loop.call_soon_threadsafe(fn)

    def stop(self, timeout: float = 2.0) -> None:
        """Cancel everything still running and end the thread (waits up to ``timeout`` s).
        Idempotent."""
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout)
        sys.setswitchinterval(self._previous_interval)


class LiveRun:
    """One run executing on an :class:`EngineThread`.

    The runner appends each event to :attr:`events` on the engine thread; the owner calls
    :meth:`drain` from its own thread to take them in order. :meth:`cancel` is thread-safe.
    With ``gated``, the first request waits for :meth:`release` (the owner calls it once
    its views are built from the planned events, so building them does not hold the GIL
    while the engine stamps arrivals).
    """

    def __init__(
        self,
        engine: EngineThread,
        config: RunConfig,
        questions: list[str],
        plan: RunPlan,
        gated: bool = False,
    ) -> None:
        self.events: collections.deque[RunEvent] = collections.deque()
        self._gate = asyncio.Event() if gated else None
        self._released = False
        self.runner = Runner(config, self.events.append, start_gate=self._gate)
        self._engine = engine
        self.future = engine.submit(self.runner.run(questions, plan))

    def release(self) -> None:
        """Let a gated run send its first requests (thread-safe; idempotent)."""
        if self._gate is not None and not self._released:
            self._released = True
            self._engine.call(self._gate.set)

    def drain(self, limit: int | None = None) -> list[RunEvent]:
        """Events that arrived since the last call (at most ``limit``), oldest first."""
        out: list[RunEvent] = []
        pop = self.events.popleft
        try:
            while limit is None or len(out) < limit:
                out.append(pop())
        except IndexError:
            pass
        return out

    @property
    def done(self) -> bool:
        """True once the run has ended and every event is in :attr:`events`."""
        return self.future.done()

    def cancel(self) -> None:
        """Stop the run (its streams end as ``stopped``, partial text kept)."""
        self._engine.call(self.runner.cancel)


class EngineStartError(RuntimeError):
    """The engine process did not become ready; :attr:`cause` is the one line of its stderr
    that says why (:func:`splitdesk.childproc.failure_line`), ``""`` if it wrote none."""

    def __init__(self, message: str, cause: str = "") -> None:
        super().__init__(message)
        self.cause = cause


class EngineProcess:
    """The measuring engine in its own process (:mod:`splitdesk.core.measure.engine_worker`), so
    that a window's painting cannot delay its arrival stamps: two processes, two GILs.

    Start it early (:meth:`start` blocks ~0.5 s: call it from a worker thread), then
    :meth:`run` plans. The child exits when :meth:`stop` closes its stdin, or when this
    process dies (its stdin reaches end-of-file then, too). Thread-safe.
    """

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._runs: dict[int, ProcessRun] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=40)

    @property
    def pid(self) -> int | None:
        """The worker's process id while it runs, else None."""
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    def start(self, timeout: float = 20.0) -> None:
        """Spawn the worker and wait until it is ready (or has died). Raises
        :class:`EngineStartError` (a ``RuntimeError``)."""
        if self._proc is not None and self._proc.poll() is None:
            return
        self._ready.clear()
        proc = subprocess.Popen(
            module_command(
                "splitdesk.core.measure.engine_worker"
            ),  # `splitdesk _engine` when frozen
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=child_env(PYTHONUNBUFFERED="1"),
        )
        self._proc = proc
        threading.Thread(target=self._read, args=(proc,), name="engine-events", daemon=True).start()
        stderr = threading.Thread(
            target=self._read_stderr, args=(proc,), name="engine-stderr", daemon=True
        )
        stderr.start()
        deadline = time.monotonic() + timeout
        while not self._ready.wait(0.05):  # ready, or the process died: no need to wait on
            if proc.poll() is not None or time.monotonic() > deadline:
                break
        if not self._ready.is_set():
            if proc.poll() is not None:
                stderr.join(2.0)  # it ends at the pipe's end: the traceback's last lines read
            self.stop()
            tail = list(self.stderr_tail)
            if tail:  # the whole traceback to the log; its one telling line to the user
                log.warning("the engine process's stderr:\n%s", "\n".join(tail))
            line = failure_line(tail)
            raise EngineStartError(
                f"the engine process did not start{': ' + line if line else ''}", line
            )

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def _read(self, proc: subprocess.Popen[bytes]) -> None:
        """Reader thread: validate each line (:mod:`splitdesk.core.measure.engine_protocol`) and
        hand its event to its run; the GUI thread only pops typed events."""
        assert proc.stdout is not None
        for line in proc.stdout:
            try:
                message = decode_line(line)
            except ProtocolError as exc:
                self.stderr_tail.append(f"bad line from the engine skipped: {exc}")
                continue
            if isinstance(message, Ready):
                self._ready.set()
                continue
            run = self._runs.get(message.run)
            if run is None:
                continue
            if isinstance(message, TextsLine):  # a few milliseconds of text events
                run.events.extend(message.events())
            elif isinstance(message, EndLine):
                if message.raw:  # RunConfig.capture_raw: for the stream inspector
                    with contextlib.suppress(ValueError):
                        run.raw = decode_raw(message.raw)
                run.finish(message.error)
            else:
                run.events.append(message.event)
        # Its output ended: the process has exited or is exiting. Its runs end once it is
        # gone (at most 1 s), so whoever hears of their end (the window, at once) finds the
        # engine not alive and says it died, not "the run failed".
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=1.0)
        for run in list(self._runs.values()):  # the process died under its runs
            run.finish("the engine process stopped unexpectedly")

    def _read_stderr(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            self.stderr_tail.append(line.decode("utf-8", "replace").rstrip())

    def send(self, command: RunCommand | ReleaseCommand | CancelCommand) -> None:
        """Write one command line (:mod:`splitdesk.core.measure.engine_protocol`). Raises
        ``RuntimeError`` when the process is not running, ``ValueError`` for a command
        longer than :data:`MAX_COMMAND_BYTES` (sent, it would be refused by the worker)."""
        proc = self._proc
        if proc is None or proc.stdin is None or proc.poll() is not None:
            raise RuntimeError("the engine process is not running")
        data = encode(command) + b"\n"
        if len(data) > MAX_COMMAND_BYTES:
            raise ValueError(
                f"the run is {len(data) / 1e6:.0f} MB as one engine command; the engine takes "
                f"at most {MAX_COMMAND_BYTES / 1e6:.0f} MB (fewer or shorter questions)"
            )
        with self._lock:
            proc.stdin.write(data)
            proc.stdin.flush()

    def run(
        self, config: RunConfig, questions: list[str], plan: RunPlan, gated: bool = False
    ) -> ProcessRun:
        """Start a run in the worker; returns its handle."""
        run = ProcessRun(self, next(self._ids))
        self._runs[run.id] = run
        run.future.add_done_callback(lambda _f: self._runs.pop(run.id, None))
        self.send(
            RunCommand(run=run.id, config=config, questions=questions, plan=plan, gated=gated)
        )
        return run

    def stop(self, timeout: float = 2.0) -> None:
        """Close the worker's stdin (it stops its runs and exits); kill it after
        ``timeout`` s. Idempotent."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


class ProcessRun:
    """One run executing in an :class:`EngineProcess`; same interface as :class:`LiveRun`.

    The reader thread appends the run's validated events to :attr:`events`; :meth:`drain`
    takes them on the caller's thread. ``future`` completes when the run is over (with an
    exception if the worker reported an error).
    """

    def __init__(self, engine: EngineProcess, run_id: int) -> None:
        self.id = run_id
        self.events: collections.deque[RunEvent] = collections.deque()
        self.future: concurrent.futures.Future[None] = concurrent.futures.Future()
        #: ``RunConfig.capture_raw``: each request's raw reads, set when the run ends
        self.raw: dict[int, list[tuple[int, bytes]]] = {}
        self._engine = engine
        self._released = False

    def finish(self, error: str | None) -> None:
        if self.future.done():
            return
        if error:
            self.future.set_exception(RuntimeError(error))
        else:
            self.future.set_result(None)

    def drain(self, limit: int | None = None) -> list[RunEvent]:
        """Events that arrived since the last call (at most ``limit``), oldest first."""
        out: list[RunEvent] = []
        pop = self.events.popleft
        try:
            while limit is None or len(out) < limit:
                out.append(pop())
        except IndexError:
            pass
        return out

    @property
    def done(self) -> bool:
        return self.future.done()

    @property
    def released(self) -> bool:
        """A gated run was allowed to send its first requests (:meth:`release`)."""
        return self._released

    def cancel(self) -> None:
        """Stop the run (its streams end as ``stopped``, partial text kept)."""
        with contextlib.suppress(RuntimeError, OSError):  # the worker is gone: nothing to do
            self._engine.send(CancelCommand(run=self.id))

    def release(self) -> None:
        """Let a gated run send its first requests (idempotent)."""
        if not self._released:
            self._released = True
            with contextlib.suppress(RuntimeError, OSError):
                self._engine.send(ReleaseCommand(run=self.id))
