"""``splitdesk replay FILE [--speed X] [--run K] [--screenshot PATH --quit]``.

Opens the window on a recording and replays it on its recorded times, with no network and
no endpoint. The file is read and checked before any window opens: a bad file is one line
on stderr naming what is wrong (exit status 2). ``--screenshot`` saves the window as PNG
when the replay has finished; ``--quit`` then closes it (for docs and automated checks).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path


def _speed(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a number, e.g. 2") from None
    if not (math.isfinite(value) and 0.25 <= value <= 4):
        raise argparse.ArgumentTypeError(f"{text}: the replay speed must be 0.25-4")
    return value


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Options of ``splitdesk replay``."""
    p.add_argument("file", metavar="FILE", help="a recording (.splitdesk.json or .json.gz)")
    p.add_argument(
        "--speed", type=_speed, default=1.0, metavar="X", help="replay speed, 0.25-4 (default 1)"
    )
    p.add_argument(
        "--run",
        type=int,
        default=1,
        metavar="K",
        help="which run of a recording holding several (bench: one per mode and repeat)",
    )
    p.add_argument(
        "--screenshot", metavar="PATH", help="save the window as PNG when the replay has finished"
    )
    p.add_argument("--quit", action="store_true", help="close the window after the replay")
    p.add_argument("--theme", choices=["dark", "light"], help="colour theme")
    p.add_argument("--scale", type=float, help="text size factor, e.g. 1.5 for a projector")
    from splitdesk.cli.args import window_size

    p.add_argument(
        "--size",
        type=window_size,
        metavar="WxH",
        help="window size in pixels for this session, e.g. 1280x720 (a projector, a slide)",
    )


def run(args: argparse.Namespace) -> int:
    """Check the file, then replay it in the window. Returns the exit status (2 for a file
    that cannot be replayed)."""
    from splitdesk.core.files.atomic import output_problem
    from splitdesk.core.files.recording import RecordingError, load_recording

    path = Path(args.file)
    try:
        recording = load_recording(path)
    except RecordingError as exc:
        print(f"splitdesk replay: error: {exc}", file=sys.stderr)
        return 2
    if recording.read_only_note:  # a newer splitdesk's file: one line, then it replays
        print(f"splitdesk replay: note: {recording.read_only_note}", file=sys.stderr)
    if not 1 <= args.run <= len(recording.runs):
        print(
            f"splitdesk replay: error: --run {args.run}: {path} holds {len(recording.runs)} run(s)",
            file=sys.stderr,
        )
        return 2
    if args.scale is not None and not 0.6 <= args.scale <= 3.0:
        print("splitdesk replay: error: --scale must be between 0.6 and 3", file=sys.stderr)
        return 2
    if args.screenshot and (problem := output_problem(Path(args.screenshot))):
        print(
            f"splitdesk replay: error: --screenshot {args.screenshot}: {problem}", file=sys.stderr
        )
        return 2
    from splitdesk.app import GuiOptions, run_gui

    return run_gui(
        GuiOptions(
            screenshot=Path(args.screenshot) if args.screenshot else None,
            quit=args.quit,
            theme=args.theme,
            scale=args.scale,
            size=args.size,
            replay=path,
            replay_speed=args.speed,
            replay_run=args.run - 1,
        )
    )
