"""The engine process: runs the measuring engine for a window, away from its GIL.

A window paints dozens of panes; in one Python process, painting holds the GIL in long
Qt calls and the engine could not stamp arrivals on time (measured: 10–20 ms errors at 64
streams). So the window starts this process (``python -m splitdesk.core.engine_worker``)
and talks to it over its standard streams, one JSON document per line:

* stdin, commands: ``{"cmd": "run", "run": 1, "config": …, "questions": […], "plan": …,
  "gated": true}``, ``{"cmd": "release", "run": 1}``, ``{"cmd": "cancel", "run": 1}``.
  End of input (the window closed or died) stops every run and the process.
* stdout: ``{"ready": true}`` once, then ``{"run": 1, "event": …}`` per run event
  (:func:`splitdesk.core.events.event_to_json`) and ``{"run": 1, "end": true,
  "error": null}`` when a run is over.

Times inside events come from ``time.perf_counter_ns`` (``CLOCK_MONOTONIC``), the same
clock as the window's. The API key travels in the ``run`` command only: never in
arguments, environment or files.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import sys
from dataclasses import asdict
from typing import Any

from splitdesk.core.events import RunEvent, event_to_json
from splitdesk.core.plans import Phase, RequestSpec, RunPlan
from splitdesk.core.runner import RunConfig, Runner, Timeouts
from splitdesk.providers.base import EndpointConfig


def config_to_json(config: RunConfig) -> dict[str, Any]:
    """A :class:`RunConfig` as JSON (the API key included: for the pipe only)."""
    data = asdict(config)
    data["endpoint"]["api_key"] = config.endpoint.api_key
    return data


def config_from_json(data: dict[str, Any]) -> RunConfig:
    """Inverse of :func:`config_to_json`."""
    data = dict(data)
    data["endpoint"] = EndpointConfig(**data["endpoint"])
    data["timeouts"] = Timeouts(**data["timeouts"])
    return RunConfig(**data)


def plan_to_json(plan: RunPlan) -> dict[str, Any]:
    """A :class:`RunPlan` as JSON."""
    return asdict(plan)


def plan_from_json(data: dict[str, Any]) -> RunPlan:
    """Inverse of :func:`plan_to_json`."""
    phases = tuple(
        Phase(
            p["name"],
            tuple(
                RequestSpec(r["group"], tuple(r["questions"]), r["prompt"], r["max_tokens"])
                for r in p["requests"]
            ),
            p["sequential"],
        )
        for p in data["phases"]
    )
    return RunPlan(data["mode"], phases)


class Worker:
    """The command loop of the engine process."""

    def __init__(self, out: asyncio.WriteTransport) -> None:
        self.out = out
        self.runners: dict[int, Runner] = {}
        self.gates: dict[int, asyncio.Event] = {}
        self.tasks: set[asyncio.Task[None]] = set()
        self._lines: list[str] = []
        self._encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode

    def write(self, doc: dict[str, Any]) -> None:
        """One line out, never blocking the loop. Lines written in one turn of the event
        loop leave in one pipe write at its end (one syscall per turn, not per event; the
        timestamps are already taken)."""
        if not self._lines:
            asyncio.get_running_loop().call_soon(self.flush)
        self._lines.append(self._encode(doc))

    def flush(self) -> None:
        """Hand the buffered lines to the pipe."""
        if self._lines:
            self.out.write(("\n".join(self._lines) + "\n").encode())
            self._lines.clear()

    def handle(self, command: dict[str, Any]) -> None:
        """Carry out one command (see module docstring)."""
        cmd, run_id = command.get("cmd"), command.get("run")
        if not isinstance(run_id, int):
            return
        if cmd == "run":
            self.start(run_id, command)
        elif cmd == "release" and run_id in self.gates:
            self.gates[run_id].set()
        elif cmd == "cancel" and run_id in self.runners:
            self.runners[run_id].cancel()

    def start(self, run_id: int, command: dict[str, Any]) -> None:
        gate = asyncio.Event() if command.get("gated") else None
        if gate is not None:
            self.gates[run_id] = gate

        def emit(event: RunEvent) -> None:
            self.write({"run": run_id, "event": event_to_json(event)})

        runner = Runner(config_from_json(command["config"]), emit, start_gate=gate)
        self.runners[run_id] = runner

        async def go() -> None:
            error = None
            try:
                await runner.run(list(command["questions"]), plan_from_json(command["plan"]))
            except Exception as exc:  # reported to the window, which shows it
                error = f"{type(exc).__name__}: {exc}"
            finally:
                self.runners.pop(run_id, None)
                self.gates.pop(run_id, None)
                self.write({"run": run_id, "end": True, "error": error})

        task = asyncio.ensure_future(go())
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def stop(self) -> None:
        """Stop every run (each ends as ``stopped``) and wait for them."""
        for runner in list(self.runners.values()):
            runner.cancel()
        if self.tasks:
            await asyncio.wait(self.tasks, timeout=2.0)


async def serve() -> None:
    """Read commands from stdin until it closes; write events to stdout."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=64 * 1024 * 1024)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    out, _ = await loop.connect_write_pipe(asyncio.Protocol, sys.stdout)
    worker = Worker(out)
    # Everything alive now lives as long as the process: keep it out of the collector's
    # scans, so a collection during a run stays short.
    gc.collect()
    gc.freeze()
    worker.write({"ready": True})
    while True:
        line = await reader.readline()
        if not line:
            break
        try:
            command = json.loads(line)
        except ValueError:
            continue
        if isinstance(command, dict):
            worker.handle(command)
    await worker.stop()
    worker.flush()
    out.close()


def main() -> None:
    """Entry point of ``python -m splitdesk.core.engine_worker``."""
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve())


if __name__ == "__main__":
    main()
