"""The engine process: runs the measuring engine for a window, away from its GIL.

A window paints dozens of panes; in one Python process, painting holds the GIL in long
Qt calls and the engine could not stamp arrivals on time (measured: 10–20 ms errors at 64
streams). So the window starts this process (``python -m splitdesk.core.measure.engine_worker``)
and talks to it over its standard streams, one JSON document per line:

* stdin, commands: ``{"cmd": "run", "run": 1, "config": …, "questions": […], "plan": …,
  "gated": true}``, ``{"cmd": "release", "run": 1}``, ``{"cmd": "cancel", "run": 1}``.
  End of input (the window closed or died) stops every run and the process.
* stdout: ``{"ready": true}`` once, then ``{"run": 1, "event": …}`` per run event — the
  text events of up to :data:`TEXT_FLUSH_S` in one ``{"run": 1, "texts": [[t, req, text,
  reasoning], …]}`` line — and ``{"run": 1, "end": true, "error": null}`` when a run is
  over.

Every line is a typed message of :mod:`splitdesk.core.measure.engine_protocol`, validated on
arrival; a command that does not validate is reported on stderr and skipped.

Times inside events come from ``time.perf_counter_ns`` (``CLOCK_MONOTONIC``), the same
clock as the window's. The API key travels in the ``run`` command only: never in
arguments, environment or files.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import sys
from collections.abc import AsyncIterator

from splitdesk.core.measure.arrivals import keep_kernel_stamps
from splitdesk.core.measure.engine import MAX_COMMAND_BYTES
from splitdesk.core.measure.engine_protocol import (
    CancelCommand,
    Command,
    EndLine,
    EventLine,
    ProtocolError,
    Ready,
    ReleaseCommand,
    RunCommand,
    decode_command,
    encode,
    encode_event,
    encode_text_row,
    texts_line,
)
from splitdesk.core.measure.raw_reads import encode_raw
from splitdesk.core.measure.runner import Runner
from splitdesk.core.run.events import RunEvent
from splitdesk.heap import limit_malloc_arenas

#: Text events wait at most this long (s) before they leave in one line and one pipe
#: write (:meth:`Worker.emit_text`). Their times were taken when their bytes arrived;
#: the window takes events once per frame (100 ms), so this only saves writes: at 64
#: streams the engine wrote the pipe ~10 times per token step (a tenth of its CPU, and a
#: wake-up of the window's reader thread each), one write per step now. Every other
#: event leaves at the end of its event-loop turn, after the texts before it.
TEXT_FLUSH_S = 0.010


class Worker:
    """The command loop of the engine process."""

    def __init__(self, out: asyncio.WriteTransport) -> None:
        self.out = out
        self.runners: dict[int, Runner] = {}
        self.gates: dict[int, asyncio.Event] = {}
        self.tasks: set[asyncio.Task[None]] = set()
        self._lines: list[bytes] = []
        self._soon = False  #: a flush at the end of this turn is scheduled
        #: each run's text rows waiting for their line (:meth:`emit_text`), oldest first
        self._texts: dict[int, list[bytes]] = {}
        self._text_timer: asyncio.TimerHandle | None = None

    def write(self, message: Ready | EventLine | EndLine) -> None:
        """One line out, never blocking the loop (:meth:`write_line`)."""
        self.write_line(encode(message))

    def write_line(self, line: bytes, run: int | None = None) -> None:
        """An encoded line out. Lines written in one turn of the event loop leave in one
        pipe write at its end (one syscall per turn, not per event; the timestamps are
        already taken). A line of run ``run`` follows that run's waiting text rows."""
        if run is not None and run in self._texts:
            self._lines.append(texts_line(run, self._texts.pop(run)))
        if not self._soon:
            self._soon = True
            asyncio.get_running_loop().call_soon(self.flush)
        self._lines.append(line)

    def emit_text(self, run: int, row: bytes) -> None:
        """A text event's row (:func:`encode_text_row`) of run ``run``: it leaves with the
        others of the next :data:`TEXT_FLUSH_S`, in one line."""
        rows = self._texts.get(run)
        if rows is None:
            self._texts[run] = [row]
            if self._text_timer is None:
                self._text_timer = asyncio.get_running_loop().call_later(
                    TEXT_FLUSH_S, self.flush_texts
                )
        else:
            rows.append(row)

    def flush_texts(self) -> None:
        """Every run's waiting text rows out now, each run's as one line."""
        self._text_timer = None
        texts, self._texts = self._texts, {}
        self._lines.extend(texts_line(run, rows) for run, rows in texts.items())
        self.flush()

    def flush(self) -> None:
        """Hand the buffered lines to the pipe."""
        self._soon = False
        if self._lines:
            self.out.write(b"\n".join(self._lines) + b"\n")
            self._lines.clear()

    def handle(self, command: Command) -> None:
        """Carry out one command (see module docstring)."""
        run_id = command.run
        if isinstance(command, RunCommand):
            self.start(command)
        elif isinstance(command, ReleaseCommand) and run_id in self.gates:
            self.gates[run_id].set()
        elif isinstance(command, CancelCommand) and run_id in self.runners:
            self.runners[run_id].cancel()

    def start(self, command: RunCommand) -> None:
        """Start the run ``command`` asks for; its events and its end go to stdout."""
        run_id = command.run
        gate = asyncio.Event() if command.gated else None
        if gate is not None:
            self.gates[run_id] = gate

        write_line, emit_text = self.write_line, self.emit_text

        def emit(event: RunEvent) -> None:
            row = encode_text_row(event)  # a text event: a row of the next TextsLine
            if row is not None:
                emit_text(run_id, row)
            else:  # EventLine(run=run_id, event=event), after the run's texts before it
                write_line(encode_event(run_id, event), run_id)

        try:
            runner = Runner(command.config, emit, start_gate=gate)
        except Exception as exc:  # a run that cannot even be set up is reported, not fatal
            self.gates.pop(run_id, None)
            self.write(EndLine(run=run_id, error=f"{type(exc).__name__}: {exc}"))
            return
        self.runners[run_id] = runner

        async def go() -> None:
            error = None
            try:
                await runner.run(list(command.questions), command.plan)
            except Exception as exc:  # reported to the window, which shows it
                error = f"{type(exc).__name__}: {exc}"
            finally:
                self.runners.pop(run_id, None)
                self.gates.pop(run_id, None)
                raw = encode_raw(runner.raw) if runner.raw else None  # the stream inspector's
                self.write_line(encode(EndLine(run=run_id, error=error, raw=raw)), run_id)

        task = asyncio.ensure_future(go())
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def stop(self) -> None:
        """Stop every run (each ends as ``stopped``) and wait for them."""
        for runner in list(self.runners.values()):
            runner.cancel()
        if self.tasks:
            await asyncio.wait(self.tasks, timeout=2.0)


async def command_lines(
    reader: asyncio.StreamReader, limit: int = MAX_COMMAND_BYTES
) -> AsyncIterator[bytes | None]:
    """The command lines of ``reader`` (without their newline) until end of input; ``None``
    in place of a line longer than ``limit`` bytes, which is dropped whole, so one
    over-long command costs that command, never the process (asyncio's ``readline``
    raises on one and leaves the stream mid-line)."""
    line = bytearray()
    too_long = False
    while chunk := await reader.read(1 << 20):
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            if not too_long:
                line += chunk[start:end]
            yield None if too_long or len(line) > limit else bytes(line)
            line.clear()
            too_long = False
            start = end + 1
        if not too_long:
            line += chunk[start:]
            if len(line) > limit:
                too_long = True
                line.clear()
    if line and not too_long:
        yield bytes(line)


async def serve() -> None:
    """Read commands from stdin until it closes; write events to stdout."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    out, _ = await loop.connect_write_pipe(asyncio.Protocol, sys.stdout)
    worker = Worker(out)
    # Everything alive now lives as long as the process: keep it out of the collector's
    # scans, so a collection during a run stays short.
    gc.collect()
    gc.freeze()
    keep_kernel_stamps()  # before Ready: a run's first bytes are stamped (core/arrivals.py)
    worker.write(Ready())
    async for line in command_lines(reader):
        if line is None:
            print(
                f"splitdesk engine: a command over {MAX_COMMAND_BYTES} bytes was skipped",
                file=sys.stderr,
                flush=True,
            )
            continue
        try:
            command = decode_command(line)
        except ProtocolError as exc:  # a window of another version, or a bug: say so
            print(f"splitdesk engine: bad command skipped ({exc})", file=sys.stderr, flush=True)
            continue
        try:
            worker.handle(command)
        except Exception as exc:  # the engine outlives any one bad command
            print(f"splitdesk engine: command failed ({exc!r})", file=sys.stderr, flush=True)
    await worker.stop()
    worker.flush_texts()
    out.close()


def main() -> None:
    """Entry point of ``python -m splitdesk.core.measure.engine_worker``."""
    limit_malloc_arenas()  # before any thread starts (splitdesk.heap)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve())


if __name__ == "__main__":
    main()
