"""Soak: does splitdesk keep working, lose nothing and leak nothing under sustained load?

Three phases, each on the built-in endpoint's ``batching`` profile:

1. the headless engine (the runner ``splitdesk bench`` uses): runs of ``--engine-streams``
   (128) parallel streams back to back for ``--seconds`` (60);
2. the window, offscreen (real widgets, controller, engine process): runs of
   ``--window-streams`` (64) parallel streams back to back for ``--seconds``;
3. ``--runs`` (20) back-to-back runs of the default questions, side by side, pressing Run
   in the window.

Per phase it prints: tokens received (the client's ``output_tokens``, one definition in
``core/metrics.py``) vs emitted (the endpoint's emission log, ``sent_tokens``) and the
requests where they differ; RSS at the start and at the end; open file descriptors and
threads at the end vs the start (after the phase's last run has settled); for the window
phases the GUI loop lag (how late ``asyncio.sleep(0.01)`` wakes) p50/p99/max, as measured
on the wall clock and without the time the process's threads waited for a CPU (the machine
may be shared; see ``tests/ui/run/test_faults_window.py``).

Goals: tokens received = emitted; RSS growth ≤ 10 %; fds and threads at the end = start.

What "start" includes: each phase's start is taken after one warm-up run of that phase in
the same process (the window phases: after the window was shown and ran once), so imports,
fonts and glyph caches, pyqtgraph's first items, the first connections and the endpoint
child are in it and do not count as growth; the growth is start → end of the phase, as the
issue defines it. Also printed, as a second figure: the growth from after the phase's first
measured run to its end (what a long session adds run after run). The window phases run
with the window process's malloc arena limit (:func:`splitdesk.heap.limit_malloc_arenas`,
called by ``splitdesk`` at start); it is set at this process's start, so the headless phase
runs with it too.

    .venv/bin/python benchmarks/soak.py [--seconds 60] [--runs 20] [--speed 1]
    .venv/bin/python benchmarks/soak.py --seconds 5 --runs 3      # a short smoke run
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("QT_LOGGING_RULES", "qt.qpa.*=false")  # offscreen's size-hint notes

import httpx

from common import describe, rss_mb
from splitdesk.core.analyse.metrics import request_figures
from splitdesk.core.measure.runner import RunConfig, Runner
from splitdesk.core.run.plans import make_plan
from splitdesk.core.run.run_state import RunState
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.heap import limit_malloc_arenas
from splitdesk.providers.base import EndpointConfig
from splitdesk.sim.launcher import start_sim


def open_fds() -> int:
    """Open file descriptors of this process (Linux /proc)."""
    return len(os.listdir("/proc/self/fd"))


def run_queue_wait_s() -> float:
    """Seconds this process's threads have waited for a CPU (Linux schedstat run_delay)."""
    total = 0
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/schedstat", encoding="ascii") as f:
                total += int(f.read().split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return total / 1e9


@dataclass
class Tally:
    """Tokens and requests of a phase, and the process's resources at its start."""

    name: str
    runs: int = 0
    requests: int = 0
    received: int = 0
    emitted: int = 0
    failed: int = 0
    mismatched: list[str] = field(default_factory=list)
    rss_start: float = 0.0
    fds_start: int = 0
    threads_start: int = 0
    lags: list[float] = field(default_factory=list)
    own_lags: list[float] = field(default_factory=list)
    started: float = 0.0
    rss_after_run: list[float] = field(default_factory=list)

    def mark_start(self) -> None:
        self.rss_start, self.fds_start = rss_mb(), open_fds()
        self.threads_start = threading.active_count()
        self.started = time.perf_counter()

    async def count(self, root: str, state: RunState) -> None:
        """Add a finished run: the client's tokens per request vs the endpoint's log."""
        self.runs += 1
        self.rss_after_run.append(rss_mb())
        async with httpx.AsyncClient(base_url=root, timeout=30) as client:
            for r in state.requests:
                self.requests += 1
                got = request_figures(r).output_tokens
                self.received += got
                if r.outcome != "done":
                    self.failed += 1
                if r.request_id is None:
                    self.mismatched.append(f"run {self.runs} request {r.req}: no request id")
                    continue
                record = (await client.get(f"/_splitdesk/trace/{r.request_id}")).json()
                self.emitted += record["sent_tokens"]
                if got != record["sent_tokens"] or r.text != record["sent_text"]:
                    self.mismatched.append(
                        f"run {self.runs} request {r.req}: {got} tokens received, "
                        f"{record['sent_tokens']} emitted"
                    )

    def report(self) -> bool:
        """Print the phase's figures; True when every goal is met."""
        took = time.perf_counter() - self.started
        rss_end, fds_end, threads_end = rss_mb(), open_fds(), threading.active_count()
        growth = (rss_end - self.rss_start) / self.rss_start
        print(f"{self.name}: {self.runs} runs, {self.requests} requests in {took:.0f} s")
        print(
            f"  tokens received {self.received}, emitted {self.emitted}; "
            f"requests not done: {self.failed}; mismatched requests: {len(self.mismatched)}"
        )
        for line in self.mismatched[:5]:
            print(f"    {line}")
        print(f"  RSS {self.rss_start:.0f} MB → {rss_end:.0f} MB ({growth:+.1%})")
        if len(self.rss_after_run) >= 2:
            per_run = (self.rss_after_run[-1] - self.rss_after_run[0]) / (
                len(self.rss_after_run) - 1
            )
            shown = " ".join(f"{v:.0f}" for v in self.rss_after_run[:12])
            more = " …" if len(self.rss_after_run) > 12 else ""
            print(f"  RSS after each run (MB): {shown}{more}; {per_run:+.2f} MB per run")
            first = self.rss_after_run[0]
            print(
                f"  RSS after the first run → end: {first:.0f} MB → {rss_end:.0f} MB "
                f"({(rss_end - first) / first:+.1%})"
            )
        print(
            f"  open fds {self.fds_start} → {fds_end}; threads {self.threads_start} → {threads_end}"
        )
        if self.lags:
            print("  " + describe("GUI loop lag, wall clock", self.lags, scale=1000))
            print("  " + describe("GUI loop lag, without CPU waits", self.own_lags, scale=1000))
        checks = [
            ("tokens received = emitted", self.received == self.emitted and not self.mismatched),
            ("every request done", self.failed == 0),
            ("RSS growth ≤ 10 %", growth <= 0.10),
            ("fds end = start", fds_end == self.fds_start),
            ("threads end = start", threads_end == self.threads_start),
        ]
        print("  " + "; ".join(f"{name}: {'yes' if ok else 'NO'}" for name, ok in checks))
        return all(ok for _, ok in checks)


async def settle() -> None:
    """Let closed connections and finished threads go before counting resources."""
    for _ in range(50):
        await asyncio.sleep(0.02)


# -- phase 1: the headless engine ---------------------------------------------------------------


async def engine_phase(streams: int, seconds: float, speed: float) -> bool:
    sim = await asyncio.to_thread(start_sim, "batching", {"speed": speed})
    try:
        endpoint = EndpointConfig(sim.openai_base_url, "openai-chat", "splitdesk-sim")
        questions = [f"Question {i + 1}: what makes {i + 1} interesting?" for i in range(streams)]
        plan = make_plan("parallel", questions, CombinedTemplate(), 512)
        tally = Tally(f"headless engine, {streams} parallel streams")

        async def one_run() -> RunState:
            state = RunState()
            await Runner(RunConfig(endpoint), state.apply).run(questions, plan)
            return state

        await one_run()  # warm-up: imports, caches, first connections
        await settle()
        tally.mark_start()
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            await tally.count(sim.url, await one_run())
        await settle()
        return tally.report()
    finally:
        await asyncio.to_thread(sim.stop)


# -- phases 2 and 3: the window -------------------------------------------------------------------


class LagProbe:
    """Samples how late ``asyncio.sleep(0.01)`` wakes on the GUI loop (see the module doc)."""

    def __init__(self, tally: Tally) -> None:
        self.tally = tally
        self._task = asyncio.ensure_future(self._sample())

    async def _sample(self) -> None:
        while True:
            t, waited = time.perf_counter(), run_queue_wait_s()
            await asyncio.sleep(0.01)
            lag = time.perf_counter() - t - 0.01
            self.tally.lags.append(lag)
            self.tally.own_lags.append(max(0.0, lag - (run_queue_wait_s() - waited)))

    async def stop(self) -> None:
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)


async def window_phases(streams: int, seconds: float, runs: int, speed: float) -> bool:
    from ui_common import run_to_end, wait_for

    from splitdesk.core.files.settings import AppSettings
    from splitdesk.core.run.endpoints import EndpointSettings
    from splitdesk.core.run.questions import Question, QuestionSet
    from splitdesk.ui.common.gc import freeze_built_window
    from splitdesk.ui.common.theme import DARK
    from splitdesk.ui.run.controller import RunController, RunRequest
    from splitdesk.ui.shell.main_window import MainWindow

    settings = AppSettings(endpoint=EndpointSettings(speed=speed))
    controller = RunController()
    window = MainWindow(settings, controller, DARK, 1.0)
    window.resize(1600, 1000)
    window.show()
    freeze_built_window()  # as the app does
    ok = True
    try:
        sim = await controller.ensure_builtin("batching", speed)
        questions = [f"Question {i + 1}: what makes {i + 1} interesting?" for i in range(streams)]
        request = RunRequest(settings.endpoint, None, questions, CombinedTemplate(), "parallel")

        async def many() -> RunState:
            state: RunState = await run_to_end(controller, controller.start(request), 300)
            return state

        tally = Tally(f"window, {streams} parallel streams")
        await many()  # warm-up
        await settle()
        tally.mark_start()
        probe = LagProbe(tally)
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            await tally.count(sim.url, await many())
        await probe.stop()
        await settle()
        ok &= tally.report()

        default = window.questions.questions()
        tally = Tally(f"window, {runs} back-to-back runs of {len(default)} questions side by side")

        async def press_run() -> RunState:
            async def click() -> None:
                window.run_button.click()

            state: RunState = await run_to_end(window, click(), 300)
            return state

        window.questions.set_question_set(
            QuestionSet(title="soak", questions=[Question(text=q) for q in default])
        )
        await press_run()  # warm-up
        await settle()
        tally.mark_start()
        probe = LagProbe(tally)
        for _ in range(runs):
            state = await press_run()
            await tally.count(sim.url, state)
        await probe.stop()
        await settle()
        ok &= tally.report()
    finally:
        window.close()
        await wait_for(lambda: window._closed, 10)
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="length of phases 1 and 2")
    parser.add_argument("--runs", type=int, default=20, help="back-to-back runs of phase 3")
    parser.add_argument("--engine-streams", type=int, default=128)
    parser.add_argument("--window-streams", type=int, default=64)
    parser.add_argument("--speed", type=float, default=1.0, help="built-in endpoint speed")
    args = parser.parse_args()
    os.environ.setdefault("SPLITDESK_CONFIG_DIR", "/tmp/splitdesk-bench-config")
    # as ``splitdesk`` does at start: only a process's first threads can be kept to fewer
    # malloc arenas, and the window phases run in this process after the headless one
    limit_malloc_arenas()
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start")
    ok = asyncio.run(engine_phase(args.engine_streams, args.seconds, args.speed))

    import qasync
    from PySide6.QtCore import QtMsgType, qInstallMessageHandler
    from PySide6.QtWidgets import QApplication

    from splitdesk.ui.common.gc import GuiGarbageCollector
    from splitdesk.ui.common.theme import DARK, apply_theme

    def qt_message(kind: QtMsgType, context: object, message: str) -> None:
        if "propagateSizeHints" not in message:  # the offscreen platform's note, every window
            print(f"Qt: {message}", file=sys.stderr)

    qInstallMessageHandler(qt_message)
    app = QApplication(sys.argv[:1])
    apply_theme(app, DARK)
    app.setQuitOnLastWindowClosed(False)
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    collector = GuiGarbageCollector()
    with loop:
        ok &= loop.run_until_complete(
            window_phases(args.window_streams, args.seconds, args.runs, args.speed)
        )
    collector.stop()
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    print("all goals met" if ok else "some goals NOT met")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()
