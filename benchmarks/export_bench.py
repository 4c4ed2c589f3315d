"""Export a 12 s batching run as MP4 and GIF at 1280×720, 30 fps: wall time against the
run's real time, CPU time, file sizes.

The run is the shipped demo ``resources/demos/batching.splitdesk.json`` (12.1 s on the
built-in endpoint, 1 combined + 5 parallel requests). Each format is rendered exactly as
``splitdesk export --gif/--mp4`` does (offscreen window, one replay frame at a time,
:func:`splitdesk.ui.render.exports.render_animation`), and the script prints per format:

* wall seconds and wall / real time (goal: < 1, faster than real time on 2 cores);
* CPU seconds of this process and of its children (ffmpeg for MP4) — less sensitive than
  wall time to other work on a shared machine: CPU / real time < 2 means two idle cores
  could keep up;
* frames written and the file size (goals: GIF ≤ 15 MB, MP4 ≤ 5 MB).

The machine's load average is printed too: on a shared machine wall times vary a lot.

    .venv/bin/python benchmarks/export_bench.py [--recording FILE] [--size 1280x720] [--fps 30]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "resources" / "demos" / "batching.splitdesk.json"
GOAL_MB = {"gif": 15.0, "mp4": 5.0}


def _cpu() -> tuple[float, float]:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--recording", type=Path, default=DEMO)
    p.add_argument("--size", default="1280x720")
    p.add_argument("--fps", type=float, default=30.0)
    p.add_argument("--formats", default="mp4,gif")
    args = p.parse_args()
    w, h = (int(v) for v in args.size.lower().split("x"))

    import qasync
    from PySide6.QtWidgets import QApplication

    from splitdesk.core.files.recording import load_recording
    from splitdesk.ui.common.theme import DARK, apply_theme
    from splitdesk.ui.render.exports import AnimationOptions, frame_count, render_animation

    app = QApplication(sys.argv[:1])
    apply_theme(app, DARK, 1.0)
    recording = load_recording(args.recording)
    real = recording.runs[0].duration_s
    print(f"recording: {args.recording.name}, run of {real:.2f} s; {w}x{h} at {args.fps:g} fps")
    print(f"expected frames: {frame_count(real, args.fps)}")
    print(f"load average at start: {os.getloadavg()[0]:.1f} (2 cores; other work shares them)")
    results: list[str] = []

    async def run_all() -> None:
        with tempfile.TemporaryDirectory() as tmp:
            for kind in args.formats.split(","):
                path = Path(tmp) / f"run.{kind}"
                cpu0, kids0 = _cpu()
                t0 = time.perf_counter()
                n = await render_animation(
                    recording, path, AnimationOptions(kind, (w, h), args.fps), DARK
                )
                wall = time.perf_counter() - t0
                cpu1, kids1 = _cpu()
                mb = path.stat().st_size / 1e6
                goal = GOAL_MB[kind]
                results.append(
                    f"{kind}: {n} frames, wall {wall:.1f} s = {wall / real:.2f}x real time "
                    f"(goal < 1), CPU {cpu1 - cpu0:.1f} s + children {kids1 - kids0:.1f} s "
                    f"= {(cpu1 - cpu0 + kids1 - kids0) / real:.2f} CPU-s per real s, "
                    f"{mb:.1f} MB (goal <= {goal:g} MB: {'met' if mb <= goal else 'NOT met'}), "
                    f"{wall / n * 1000:.0f} ms a frame; load {os.getloadavg()[0]:.1f}"
                )
                print(results[-1], flush=True)

    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    with loop:
        loop.run_until_complete(run_all())
    return 0


if __name__ == "__main__":
    sys.exit(main())
