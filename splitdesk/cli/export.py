"""``splitdesk export RECORDING --png/--svg/--stage-png/--csv/--json/--trace/--gif/--mp4/
--webp OUT``.

Writes the same files as the window's File → Export menu, with no window on screen: the
figures (CSV, bench JSON), the Perfetto / Chrome trace, the timeline (PNG at 2× by
default, SVG) and the whole window (PNG) as they look at the run's end, and the run as an
animation (GIF, MP4, animated WebP) rendered offscreen at ``--size`` and ``--fps``.
Several outputs may be asked at once. Qt is loaded only for pictures and animations, on
the ``offscreen`` platform unless ``QT_QPA_PLATFORM`` says otherwise. A terminal gets a
progress bar for animations (stderr). Exit status: 0 written, 1 an export failed, 2 a
bad file or option, 130 stopped by SIGTERM or Ctrl-C (:mod:`splitdesk.cli.stop`: the
outputs written so far are kept, nothing partial is left, a target not yet written keeps
its older file).
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
    out.add_argument(
        "--csv", metavar="OUT", help="the figures, one row per request (- : standard output)"
    )
    out.add_argument(
        "--json", metavar="OUT", help="the figures as the bench JSON document (- : standard output)"
    )
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


def flag_of(kind: str) -> str:
    """The option that asks for output ``kind`` (``window_png`` → ``--stage-png``, the
    documented name; ``--window-png`` is its older spelling)."""
    return "--stage-png" if kind == "window_png" else f"--{kind}"


def animation_problem(kinds: tuple[str, ...], size: tuple[int, int], fps: float) -> str | None:
    """Why animations of ``kinds`` (``mp4``, ``gif``, ``webp``; others are ignored) cannot
    be rendered at ``size`` (pixels) and ``fps``, naming the option, or ``None``: the caps
    of :mod:`splitdesk.ui.render.encoders` (which the renderer enforces again), checked
    before anything is run or written. ``splitdesk export`` and ``splitdesk scenarios
    --export`` share it."""
    from splitdesk.ui.render.encoders import KINDS, MAX_FPS, MAX_GIF_FPS, MAX_SIDE

    asked = [k for k in KINDS if k in kinds]
    if not asked:
        return None
    w, h = size
    if not (16 <= w <= MAX_SIDE and 16 <= h <= MAX_SIDE):
        return f"--size {w}x{h}: each side must be 16-{MAX_SIDE} pixels"
    if "gif" in asked and not 1 <= fps <= MAX_GIF_FPS:
        return (
            f"--fps {fps:g}: a GIF takes 1-{MAX_GIF_FPS} frames per second "
            f"(it plays right at {MAX_GIF_FPS} at most)"
        )
    if not 1 <= fps <= MAX_FPS:
        return f"--fps {fps:g}: an animation takes 1-{MAX_FPS} frames per second"
    if "mp4" in asked and (w % 2 or h % 2):
        return f"--size {w}x{h}: an MP4 (H.264) needs even sides"
    return None


#: The target that means standard output (``--json -``, as ``splitdesk bench --json -``).
STDOUT = "-"


def _stdout_problem(asked: dict[str, str]) -> str | None:
    """Why ``-`` (standard output) cannot be a target here, or ``None``: it takes one text
    output (CSV, JSON, trace) given alone, so nothing else is printed into it. A file
    named ``-`` had been written in the current folder instead (and one there replaced)."""
    to_stdout = [kind for kind, target in asked.items() if target == STDOUT]
    if not to_stdout:
        return None
    kind = to_stdout[0]
    if kind not in _TEXT_KINDS:
        return f"{flag_of(kind)} -: standard output takes only --csv, --json or --trace"
    if len(asked) > 1:
        return f"{flag_of(kind)} -: standard output takes one output given alone"
    return None


def _fail(message: str, status: int = 2) -> int:
    print(f"splitdesk export: error: {message}", file=sys.stderr)
    return status


def _write_text(path: Path, text: str) -> None:
    write_atomic(path, text)


def _check_target(kind: str, target: str) -> str | None:
    if problem := output_problem(Path(target)):
        return f"{flag_of(kind)} {target}: {problem}"
    return None


def _same_targets(asked: dict[str, str], source: Path) -> str | None:
    """Two outputs naming one file (or one naming the recording itself), or ``None``."""
    seen: list[tuple[str, Path]] = [("the recording", source)]
    for kind, target in asked.items():
        path = Path(target)
        for other, earlier in seen:
            if same_file(path, earlier):
                which = other if other == "the recording" else flag_of(other)
                return (
                    f"{flag_of(kind)} {target}: {which} names the same file; "
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
        return _fail("nothing to export: give one or more of --png --svg --stage-png --csv "
                     "--json --trace --gif --mp4 --webp")  # fmt: skip
    if problem := _stdout_problem(asked):
        return _fail(problem)
    for kind, target in asked.items():
        if target != STDOUT and (problem := _check_target(kind, target)):
            return _fail(problem)
    path = Path(args.file)
    if problem := _same_targets({k: t for k, t in asked.items() if t != STDOUT}, path):
        return _fail(problem)
    try:
        recording = load_recording(path)
    except RecordingError as exc:
        return _fail(str(exc))
    if recording.read_only_note:  # a newer splitdesk's file: one line, then it exports
        print(f"splitdesk export: note: {recording.read_only_note}", file=sys.stderr)
    if not 1 <= args.run <= len(recording.runs):
        return _fail(f"--run {args.run}: {path} holds {len(recording.runs)} run(s)")
    if problem := animation_problem(tuple(asked), args.size, args.fps):
        return _fail(problem)
    from splitdesk.cli.stop import STOPPED, Stop

    stop = Stop()
    stop.install()
    try:
        status = _text_exports(recording, asked, stop)
        if status == 0 and any(k in asked for k in (*_PICTURE_KINDS, *_ANIMATION_KINDS)):
            status = _qt_exports(recording, asked, args, stop)
        if stop.asked() and status in (0, STOPPED):
            print("splitdesk export: stopped; the files written so far are kept", file=sys.stderr)
            return STOPPED
        return status
    finally:
        stop.uninstall()


class _WriteError(Exception):
    """An output could not be written: the message names the option and the user's path
    (not the temporary file beside it)."""


def _could_not_write(kind: str, target: str | Path, exc: OSError) -> _WriteError:
    return _WriteError(f"{flag_of(kind)} {target}: could not write: {exc.strerror or exc}")


def _text_exports(recording: Any, asked: dict[str, str], stop: Any) -> int:
    from splitdesk.core.files.figures_export import figures_csv, figures_json
    from splitdesk.core.files.recording import RecordingError
    from splitdesk.core.files.trace_events import trace_document

    writers: dict[str, Callable[[], str]] = {
        "csv": lambda: figures_csv(recording),
        "json": lambda: json.dumps(figures_json(recording), indent=2, ensure_ascii=False) + "\n",
        "trace": lambda: json.dumps(trace_document(recording), ensure_ascii=False) + "\n",
    }
    for kind, make in writers.items():
        if kind not in asked or stop.asked():
            continue
        try:
            if asked[kind] == STDOUT:  # the only output (_stdout_problem)
                sys.stdout.write(make())
                sys.stdout.flush()
                print(f"{kind}: wrote standard output", file=sys.stderr, flush=True)
                continue
            _write_text(Path(asked[kind]), make())
        except RecordingError as exc:
            return _fail(str(exc))
        except OSError as exc:
            return _fail(str(_could_not_write(kind, asked[kind], exc)), 1)
        print(f"{kind}: wrote {asked[kind]}", flush=True)
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


def _qt_exports(recording: Any, asked: dict[str, str], args: argparse.Namespace, stop: Any) -> int:
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
        ExportCancelledError,
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

    def picture(kind: str, write: Callable[[Path], Any]) -> Any:
        try:
            return write(Path(asked[kind]))
        except OSError as exc:
            raise _could_not_write(kind, asked[kind], exc) from None

    async def main() -> None:
        if any(k in asked for k in _PICTURE_KINDS) and not stop.asked():
            # the engineer's look, as the window shows the recording (prediction included)
            frames = ReplayFrames(recording, run_index, args.size, theme, 1.0, look="window")
            try:
                await frames.frame(frames.duration)
                timeline = frames.stage.timeline
                if "png" in asked and not stop.asked():
                    w, h = picture("png", lambda p: timeline_png(timeline, p, args.scale))
                    print(f"png: wrote {asked['png']} ({w}x{h})", flush=True)
                if "svg" in asked and not stop.asked():
                    picture("svg", lambda p: timeline_svg(timeline, p))
                    print(f"svg: wrote {asked['svg']}", flush=True)
                if "window_png" in asked and not stop.asked():
                    w, h = picture("window_png", lambda p: window_png(frames.stage, p, args.scale))
                    print(f"stage-png: wrote {asked['window_png']} ({w}x{h})", flush=True)
            finally:
                frames.dispose()
        for kind in _ANIMATION_KINDS:
            if kind not in asked:
                continue
            if stop.asked():
                raise ExportCancelledError("stopped")
            target = Path(asked[kind])
            started = time.monotonic()
            bar = ProgressBar(kind, sys.stderr)

            def progress(done: int, total: int, bar: ProgressBar = bar) -> bool:
                return bar(done, total) and not stop.asked()

            try:
                n = await render_animation(
                    recording,
                    target,
                    AnimationOptions(kind, args.size, args.fps, run_index),
                    theme,
                    progress=progress,
                )
            except OSError as exc:
                raise _could_not_write(kind, target, exc) from None
            took = time.monotonic() - started
            size_mb = (await asyncio.to_thread(target.stat)).st_size / 1e6
            plays_s = animation_seconds(n, args.fps, kind)
            print(animation_line(kind, target, n, args.fps, plays_s, size_mb, took), flush=True)

    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    try:
        with loop:
            loop.run_until_complete(main())
    except ExportCancelledError:
        from splitdesk.cli.stop import STOPPED

        result["status"] = STOPPED
    except (EncodeError, ValueError) as exc:
        result["status"] = _fail(str(exc))
    except _WriteError as exc:
        result["status"] = _fail(str(exc), 1)
    except OSError as exc:
        result["status"] = _fail(f"could not write: {exc.strerror or exc}", 1)
    finally:
        asyncio.set_event_loop(None)
    return result["status"]
