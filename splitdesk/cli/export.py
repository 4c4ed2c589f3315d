"""``splitdesk export RECORDING --png/--svg/--window-png/--csv/--json/--trace/--gif/--mp4/
--webp OUT``.

Writes the same files as the window's File → Export menu, with no window on screen: the
figures (CSV, bench JSON), the Perfetto / Chrome trace, the timeline (PNG at 2× by
default, SVG) and the whole window (PNG) as they look at the run's end, and the run as an
animation (GIF, MP4, animated WebP) rendered offscreen at ``--size`` and ``--fps``.
Several outputs may be asked at once. Qt is loaded only for pictures and animations, on
the ``offscreen`` platform unless ``QT_QPA_PLATFORM`` says otherwise. A terminal gets a
progress bar for animations (stderr). Exit status: 0 written, 1 an export failed, 2 a
bad file or option.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from splitdesk.core.files.atomic import output_problem, same_file, write_atomic

_TEXT_KINDS = ("csv", "json", "trace")
_PICTURE_KINDS = ("png", "svg", "window_png")
_ANIMATION_KINDS = ("gif", "mp4", "webp")


def _size(text: str) -> tuple[int, int]:
    w, sep, h = text.lower().partition("x")
    if not (sep and w.isdigit() and h.isdigit()):
        raise argparse.ArgumentTypeError(f"{text!r}: expected WIDTHxHEIGHT, e.g. 1280x720")
    size = (int(w), int(h))
    if not all(160 <= v <= 3840 for v in size):
        raise argparse.ArgumentTypeError(f"{text!r}: each side must be 160-3840 pixels")
    return size


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a number") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text}: must be a positive number")
    return value


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Options of ``splitdesk export``."""
    p.add_argument("file", metavar="RECORDING", help="a recording (.splitdesk.json or .json.gz)")
    out = p.add_argument_group("outputs (one or more)")
    out.add_argument("--png", metavar="OUT", help="the timeline as PNG (at --scale, default 2×)")
    out.add_argument("--svg", metavar="OUT", help="the timeline as SVG")
    out.add_argument(
        "--stage-png",
        "--window-png",
        dest="window_png",
        metavar="OUT",
        help="the stage (panes, timeline, summary: what the audience sees) as PNG (--size)",
    )
    out.add_argument("--csv", metavar="OUT", help="the figures, one row per request")
    out.add_argument("--json", metavar="OUT", help="the figures as the bench JSON document")
    out.add_argument(
        "--trace", metavar="OUT", help="Perfetto / Chrome trace JSON (open in ui.perfetto.dev)"
    )
    out.add_argument("--gif", metavar="OUT", help="the run as an animated GIF")
    out.add_argument("--mp4", metavar="OUT", help="the run as an MP4 video (H.264)")
    out.add_argument(
        "--webp", metavar="OUT", help="the run as an animated WebP (lossless, loops; for the web)"
    )
    p.add_argument(
        "--size",
        type=_size,
        default=(1280, 720),
        metavar="WxH",
        help="window and animation size in pixels (default 1280x720)",
    )
    p.add_argument(
        "--fps", type=_positive, default=30.0, help="animation frames per second (default 30)"
    )
    p.add_argument(
        "--scale",
        type=_positive,
        default=2.0,
        help="PNG scale: 2 (default) draws at twice the size for slides",
    )
    p.add_argument(
        "--run",
        type=int,
        default=1,
        metavar="K",
        help="which run of a recording holding several, for pictures and animations",
    )
    p.add_argument("--theme", choices=["dark", "light"], default="dark", help="colour theme")


class ProgressBar:
    """A one-line progress bar on a terminal (nothing when ``stream`` is not one)."""

    def __init__(self, label: str, stream: TextIO, width: int = 30) -> None:
        self.label, self.stream, self.width = label, stream, width
        self.tty = stream.isatty()
        self.start = time.monotonic()
        self._shown = -1

    def __call__(self, done: int, total: int) -> bool:
        if self.tty and total:
            pct = 100 * done // total
            if pct != self._shown or done == total:
                self._shown = pct
                fill = self.width * done // total
                bar = "█" * fill + "░" * (self.width - fill)
                elapsed = time.monotonic() - self.start
                self.stream.write(
                    f"\r{self.label} {bar} {pct:3d}% {done}/{total} frames {elapsed:5.1f} s"
                )
                if done == total:
                    self.stream.write("\n")
                self.stream.flush()
        return True


def _fail(message: str, status: int = 2) -> int:
    print(f"splitdesk export: error: {message}", file=sys.stderr)
    return status


def _write_text(path: Path, text: str) -> None:
    write_atomic(path, text)


def _check_target(flag: str, target: str) -> str | None:
    if problem := output_problem(Path(target)):
        return f"--{flag} {target}: {problem}"
    return None


def _same_targets(asked: dict[str, str], source: Path) -> str | None:
    """Two outputs naming one file (or one naming the recording itself), or ``None``."""
    seen: list[tuple[str, Path]] = [("the recording", source)]
    for kind, target in asked.items():
        path = Path(target)
        for other, earlier in seen:
            if same_file(path, earlier):
                which = other if other == "the recording" else f"--{other.replace('_', '-')}"
                return (
                    f"--{kind.replace('_', '-')} {target}: {which} names the same file; "
                    "give each output its own"
                )
        seen.append((kind, path))
    return None


def run(args: argparse.Namespace) -> int:
    """Check the file and options, write every asked output. Returns the exit status."""
    from splitdesk.core.files.recording import RecordingError, load_recording

    asked = {
        k: getattr(args, k)
        for k in (*_TEXT_KINDS, *_PICTURE_KINDS, *_ANIMATION_KINDS)
        if getattr(args, k)
    }
    if not asked:
        return _fail("nothing to export: give one or more of --png --svg --window-png --csv "
                     "--json --trace --gif --mp4 --webp")  # fmt: skip
    for kind, target in asked.items():
        if problem := _check_target(kind.replace("_", "-"), target):
            return _fail(problem)
    path = Path(args.file)
    if problem := _same_targets(asked, path):
        return _fail(problem)
    try:
        recording = load_recording(path)
    except RecordingError as exc:
        return _fail(str(exc))
    if recording.read_only_note:  # a newer splitdesk's file: one line, then it exports
        print(f"splitdesk export: note: {recording.read_only_note}", file=sys.stderr)
    if not 1 <= args.run <= len(recording.runs):
        return _fail(f"--run {args.run}: {path} holds {len(recording.runs)} run(s)")
    if any(k in asked for k in _ANIMATION_KINDS) and args.fps > 60:
        return _fail(f"--fps {args.fps:g}: at most 60 frames per second")
    if "gif" in asked and args.fps > 50:
        return _fail(f"--fps {args.fps:g}: a GIF plays right at 50 frames per second at most")
    if "mp4" in asked and (args.size[0] % 2 or args.size[1] % 2):
        return _fail(f"--size {args.size[0]}x{args.size[1]}: an MP4 needs even sides")
    status = 0
    try:
        status = _text_exports(recording, asked)
    except RecordingError as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(f"could not write: {exc}", 1)
    if any(k in asked for k in (*_PICTURE_KINDS, *_ANIMATION_KINDS)):
        status = max(status, _qt_exports(recording, asked, args))
    return status


def _text_exports(recording: Any, asked: dict[str, str]) -> int:
    from splitdesk.core.files.figures_export import figures_csv, figures_json
    from splitdesk.core.files.trace_events import trace_document

    writers: dict[str, Callable[[], str]] = {
        "csv": lambda: figures_csv(recording),
        "json": lambda: json.dumps(figures_json(recording), indent=2, ensure_ascii=False) + "\n",
        "trace": lambda: json.dumps(trace_document(recording), ensure_ascii=False) + "\n",
    }
    for kind, make in writers.items():
        if kind in asked:
            _write_text(Path(asked[kind]), make())
            print(f"{kind}: wrote {asked[kind]}")
    return 0


def animation_line(
    kind: str, target: Path, frames: int, fps: float, plays_s: float, size_mb: float, took_s: float
) -> str:
    """What the export prints for a written animation: how long it plays (``plays_s``,
    :func:`splitdesk.ui.render.encoders.animation_seconds`), its size and, apart, how long it took
    to render (``took_s``), so the render time does not read as the animation's length."""
    return (
        f"{kind}: wrote {target} ({frames} frames at {fps:g} fps, plays {plays_s:.1f} s, "
        f"{size_mb:.1f} MB; rendered in {took_s:.1f} s)"
    )


def _qt_exports(recording: Any, asked: dict[str, str], args: argparse.Namespace) -> int:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    import asyncio

    import qasync
    from PySide6.QtCore import qInstallMessageHandler
    from PySide6.QtWidgets import QApplication

    from splitdesk.app import qt_message_handler
    from splitdesk.ui.common.theme import THEMES, apply_theme
    from splitdesk.ui.render.encoders import EncodeError, animation_seconds
    from splitdesk.ui.render.exports import (
        AnimationOptions,
        ReplayFrames,
        render_animation,
        timeline_png,
        timeline_svg,
        window_png,
    )

    qInstallMessageHandler(qt_message_handler)  # Qt's offscreen noise to the log only
    existing = QApplication.instance()
    app = existing if isinstance(existing, QApplication) else QApplication(sys.argv[:1])
    theme = THEMES[args.theme]
    apply_theme(app, theme, 1.0)
    run_index = args.run - 1
    result = {"status": 0}

    async def main() -> None:
        if any(k in asked for k in _PICTURE_KINDS):
            # the engineer's look, as the window shows the recording (prediction included)
            frames = ReplayFrames(recording, run_index, args.size, theme, 1.0, look="window")
            try:
                await frames.frame(frames.duration)
                if "png" in asked:
                    w, h = timeline_png(frames.stage.timeline, Path(asked["png"]), args.scale)
                    print(f"png: wrote {asked['png']} ({w}x{h})")
                if "svg" in asked:
                    timeline_svg(frames.stage.timeline, Path(asked["svg"]))
                    print(f"svg: wrote {asked['svg']}")
                if "window_png" in asked:
                    w, h = window_png(frames.stage, Path(asked["window_png"]), args.scale)
                    print(f"window-png: wrote {asked['window_png']} ({w}x{h})")
            finally:
                frames.dispose()
        for kind in _ANIMATION_KINDS:
            if kind not in asked:
                continue
            target = Path(asked[kind])
            started = time.monotonic()
            n = await render_animation(
                recording,
                target,
                AnimationOptions(kind, args.size, args.fps, run_index),
                theme,
                progress=ProgressBar(kind, sys.stderr),
            )
            took = time.monotonic() - started
            size_mb = (await asyncio.to_thread(target.stat)).st_size / 1e6
            plays_s = animation_seconds(n, args.fps, kind)
            print(animation_line(kind, target, n, args.fps, plays_s, size_mb, took))

    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    try:
        with loop:
            loop.run_until_complete(main())
    except (EncodeError, ValueError) as exc:
        result["status"] = _fail(str(exc))
    except OSError as exc:
        result["status"] = _fail(f"could not write: {exc}", 1)
    finally:
        asyncio.set_event_loop(None)
    return result["status"]
