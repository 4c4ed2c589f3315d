"""Export a 12 s batching run as MP4, GIF and animated WebP at 1280×720 and 1920×1080,
30 fps: wall time over the clip's length, CPU time, file sizes (issue 22).

The run is the shipped demo ``resources/demos/batching.splitdesk.json`` (12.1 s on the
built-in endpoint, 1 combined + 5 parallel requests). Each format is rendered exactly as
``splitdesk export --mp4/--gif/--webp`` and ``splitdesk scenarios --export`` do (a bare
stage offscreen in the presentation look, one replay frame at a time,
:func:`splitdesk.ui.render.exports.render_animation`), and the script prints per size
and format:

* wall seconds and wall / clip length (goal: < 1, faster than real time on 2 cores);
* CPU seconds of this process and of its children (ffmpeg for MP4 and WebP) — less
  sensitive than wall time to other work on a shared machine: CPU / clip length < 2 means
  two idle cores could keep up;
* frames written and the file size (goals at 1280×720: MP4 ≤ 2 MB, GIF ≤ 6 MB; WebP has
  none: it is offered for web pages, lossless).

The machine's load average is printed too: on a shared machine wall times vary a lot.

    .venv/bin/python benchmarks/export_bench.py [--recording FILE]
        [--sizes 1280x720,1920x1080] [--fps 30] [--formats mp4,gif,webp]
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
#: File-size goals (MB) at 1280×720 (issue 22).
GOAL_MB = {"mp4": 2.0, "gif": 6.0}


def _cpu() -> tuple[float, float]:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--recording", type=Path, default=DEMO)
    p.add_argument("--sizes", default="1280x720,1920x1080")
    p.add_argument("--fps", type=float, default=30.0)
    p.add_argument("--formats", default="mp4,gif,webp")
    args = p.parse_args()
    sizes = [tuple(int(v) for v in size.lower().split("x")) for size in args.sizes.split(",")]

    import qasync
    from PySide6.QtCore import qInstallMessageHandler
    from PySide6.QtWidgets import QApplication

    from splitdesk.app import qt_message_handler
    from splitdesk.core.files.recording import load_recording
    from splitdesk.ui.common.theme import DARK, apply_theme
    from splitdesk.ui.render.encoders import animation_seconds
    from splitdesk.ui.render.exports import AnimationOptions, frame_count, render_animation

    qInstallMessageHandler(qt_message_handler)  # as the CLI: Qt's offscreen noise to the log
    app = QApplication(sys.argv[:1])
    apply_theme(app, DARK, 1.0)
    recording = load_recording(args.recording)
    real = recording.runs[0].duration_s
    print(f"recording: {args.recording.name}, run of {real:.2f} s at {args.fps:g} fps")
    print(f"expected frames: {frame_count(real, args.fps)}")
    print(f"load average at start: {os.getloadavg()[0]:.1f} (2 cores; other work shares them)")
    results: list[str] = []

    async def run_all() -> None:
        with tempfile.TemporaryDirectory() as tmp:
            for w, h in sizes:
                for kind in args.formats.split(","):
                    path = Path(tmp) / f"run.{kind}"
                    cpu0, kids0 = _cpu()
                    t0 = time.perf_counter()
                    n = await render_animation(
                        recording, path, AnimationOptions(kind, (w, h), args.fps), DARK
                    )
                    wall = time.perf_counter() - t0
                    cpu1, kids1 = _cpu()
                    clip = animation_seconds(n, args.fps, kind)
                    mb = path.stat().st_size / 1e6
                    goal = GOAL_MB.get(kind) if (w, h) == (1280, 720) else None
                    said = (
                        ""
                        if goal is None
                        else (f" (goal <= {goal:g} MB: {'met' if mb <= goal else 'NOT met'})")
                    )
                    results.append(
                        f"{w}x{h} {kind}: {n} frames, plays {clip:.1f} s; wall {wall:.1f} s "
                        f"= {wall / clip:.2f}x the clip (goal < 1: "
                        f"{'met' if wall < clip else 'NOT met'}), CPU {cpu1 - cpu0:.1f} s + "
                        f"children {kids1 - kids0:.1f} s = "
                        f"{(cpu1 - cpu0 + kids1 - kids0) / clip:.2f} CPU-s per clip s, "
                        f"{mb:.1f} MB{said}, {wall / n * 1000:.0f} ms a frame; "
                        f"load {os.getloadavg()[0]:.1f}"
                    )
                    print(results[-1], flush=True)

    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    with loop:
        loop.run_until_complete(run_all())
    return 0


if __name__ == "__main__":
    sys.exit(main())
