"""``splitdesk scenarios [--check FILE] [--export DIR]``: list the ready-made demos with
their captions, check a scenario file someone wrote (format:
:mod:`splitdesk.core.files.scenarios`), or export every scenario of a talk as clips for a
slide deck (:mod:`splitdesk.ui.render.clips`: an MP4, a GIF and a poster PNG per scene, in
the presentation look with its caption)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from splitdesk.core.files.scenarios import Scenario


def resolve(text: str, parser: argparse.ArgumentParser) -> Scenario:
    """The scenario ``--scenario`` names: a shipped one by name, or a ``.toml`` file.
    Exits through ``parser.error`` (status 2, one line) when it is unknown or invalid."""
    from splitdesk.core.files.scenarios import (
        ScenarioError,
        builtin_scenarios,
        check_builtin,
        load_scenario,
    )
    from splitdesk.sim.params import SimParams

    try:
        if text.endswith(".toml"):
            scenario = load_scenario(Path(text))
            check_builtin(scenario, SimParams.checked)
            return scenario
        shipped = builtin_scenarios()
        if text not in shipped:
            parser.error(f"--scenario {text}: unknown (known: {', '.join(shipped)})")
        return shipped[text]
    except ScenarioError as exc:
        parser.error(f"--scenario: {exc}")


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``scenarios`` subcommand to the ``splitdesk`` subparsers."""
    p = sub.add_parser(
        "scenarios",
        help="list the ready-made demos (scenarios) with their captions",
        description="List the scenarios shipped with splitdesk: name, title, what it runs "
        "and the caption that says what to notice. Open one with `splitdesk --present "
        "--scenario NAME`. With --check FILE, validate a scenario file of your own (TOML: "
        "version, title, caption, questions, [run] mode/max_tokens/retry_429, [endpoint] "
        "profile/params or recording).",
    )
    p.add_argument("--check", metavar="FILE", help="validate this scenario file and describe it")
    p.add_argument(
        "--export",
        metavar="DIR",
        help="write every scenario of the talk as clips into DIR: NN-name.mp4, .gif and a "
        "poster .png each, in the presentation look (scenarios that run are run on the "
        "built-in endpoint first, at their own pace)",
    )
    p.add_argument(
        "--talk",
        metavar="PATH",
        help="with --export: a scenario .toml file or a folder of them (default: the "
        "built-in talk)",
    )
    p.add_argument(
        "--only", metavar="NAMES", help="with --export: only these scenarios (comma-separated)"
    )
    from splitdesk.cli.export import _positive, _size

    p.add_argument(
        "--size", type=_size, default=(1280, 720), metavar="WxH", help="clip size (1280x720)"
    )
    p.add_argument("--fps", type=_positive, default=30.0, help="clip frame rate (30)")
    p.add_argument(
        "--formats",
        default="mp4,gif,png",
        metavar="LIST",
        help="which files per scene, comma-separated: mp4, gif, webp (animated, lossless), "
        "png (default mp4,gif,png)",
    )
    p.add_argument("--theme", choices=["dark", "light"], default="dark", help="colour theme")


def _describe(out: TextIO, k: int, name: str, scenario: object) -> None:
    from splitdesk.core.files.scenarios import Scenario

    assert isinstance(scenario, Scenario)
    ep = scenario.spec.endpoint
    where = (
        f"replays {scenario.recording.name}"
        if scenario.recording is not None
        else f"builtin:{ep.profile}"
        + (f" ({', '.join(f'{k}={v}' for k, v in ep.params.items())})" if ep.params else "")
    )
    print(f"{k}. {name} — {scenario.title}", file=out)
    print(f"   {len(scenario.questions)} questions, {scenario.spec.run.mode}, {where}", file=out)
    print(f"   {scenario.caption}", file=out)


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """List the shipped scenarios (exit 0) or check ``--check FILE`` (exit 0 when valid, 2
    with one line naming the field when not)."""
    from splitdesk.core.files.scenarios import (
        ScenarioError,
        builtin_scenarios,
        check_builtin,
        load_scenario,
    )
    from splitdesk.sim.params import SimParams

    out = out or sys.stdout
    err = err or sys.stderr
    if getattr(args, "export", None):
        return export_talk(args, out, err)
    try:
        if args.check:
            scenario = load_scenario(Path(args.check))
            check_builtin(scenario, SimParams.checked)
            _describe(out, 1, scenario.name, scenario)
            return 0
        for k, (name, scenario) in enumerate(builtin_scenarios().items(), start=1):
            _describe(out, k, name, scenario)
    except ScenarioError as exc:
        print(f"splitdesk scenarios: error: {exc}", file=err)
        return 2
    return 0


def _talk(args: argparse.Namespace) -> list[Scenario]:
    """The scenarios ``--talk`` names (a file, or a folder's ``*.toml`` in name order; the
    built-in talk by default), ``--only`` applied. Raises ``ScenarioError``."""
    from splitdesk.core.files.scenarios import (
        ScenarioError,
        builtin_scenarios,
        check_builtin,
        load_scenario,
    )
    from splitdesk.sim.params import SimParams

    if args.talk:
        where = Path(args.talk)
        if where.is_dir():
            scenarios = [load_scenario(f) for f in sorted(where.glob("*.toml"))]
            if not scenarios:
                raise ScenarioError(f"{where}: holds no scenario (.toml) file")
        else:
            scenarios = [load_scenario(where)]
        for scenario in scenarios:
            check_builtin(scenario, SimParams.checked)
    else:
        scenarios = list(builtin_scenarios().values())
    return scenarios


def _only(args: argparse.Namespace, scenarios: list[Scenario]) -> list[int]:
    """The 0-based places in the talk of the scenarios ``--only`` keeps (all without it).
    Raises ``ScenarioError`` naming an unknown one."""
    from splitdesk.core.files.scenarios import ScenarioError

    if args.only:
        wanted = [n.strip() for n in args.only.split(",") if n.strip()]
        known = {s.name for s in scenarios}
        unknown = [n for n in wanted if n not in known]
        if unknown:
            raise ScenarioError(f"--only {', '.join(unknown)}: unknown (known: {', '.join(known)})")
        return [k for k, s in enumerate(scenarios) if s.name in wanted]
    return list(range(len(scenarios)))


class _Stop:
    """SIGTERM (the window's Cancel) and SIGINT (Ctrl-C) during ``--export``: the clip being
    rendered ends at its next frame, its writer aborted (ffmpeg killed, no partial file),
    and no further scene starts; files already written stay. A scene's run on the built-in
    endpoint stops through the bench's own handling (:mod:`splitdesk.core.bench.interrupt`,
    exit status 130), which hands the signals back to Python's defaults when it ends: so
    :meth:`install` is called again after each run. Only in the main thread (a test calling
    :func:`export_talk` from another keeps Python's defaults)."""

    def __init__(self) -> None:
        self._asked = False

    def asked(self) -> bool:
        """A stop was asked (a method: it changes while a caller runs)."""
        return self._asked

    def install(self) -> None:
        import signal
        import threading

        if threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._handle)

    def uninstall(self) -> None:
        import signal
        import threading

        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.default_int_handler)

    def _handle(self, signum: int, frame: object) -> None:
        self._asked = True


#: Exit status of an export stopped by SIGTERM or Ctrl-C (128 + SIGINT, as the bench's).
STOPPED = 130


def export_talk(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``--export DIR``: every scenario of the talk as clips (module docstring). Exit 0
    written, 1 a scene failed, 2 a bad option or file (said before anything runs), 130
    stopped by SIGTERM or Ctrl-C (:class:`_Stop`: what was written stays, nothing partial).
    Writes one line per scene to ``err`` as it starts (``scene 3/11 rate-limit: …``) and
    one per file to ``out`` (``mp4: wrote …``): the window's export reads them."""
    stop = _Stop()
    stop.install()
    try:
        return _export_talk(args, out, err, stop)
    finally:
        stop.uninstall()


def _export_talk(args: argparse.Namespace, out: TextIO, err: TextIO, stop: _Stop) -> int:
    import tempfile

    from splitdesk.core.files.recording import RecordingError, load_recording
    from splitdesk.core.files.scenarios import ScenarioError
    from splitdesk.ui.render.clips import CLIP_KINDS

    def fail(message: str, status: int = 2) -> int:
        print(f"splitdesk scenarios: error: {message}", file=err)
        return status

    kinds = tuple(k.strip() for k in args.formats.split(",") if k.strip())
    bad = [k for k in kinds if k not in CLIP_KINDS]
    if bad or not kinds:
        return fail(f"--formats {args.formats}: each of {', '.join(CLIP_KINDS)}")
    if "mp4" in kinds and (args.size[0] % 2 or args.size[1] % 2):
        return fail(f"--size {args.size[0]}x{args.size[1]}: an MP4 needs even sides")
    folder = Path(args.export)
    if folder.exists() and not folder.is_dir():
        return fail(f"--export {folder}: is a file; give a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return fail(f"--export {folder}: cannot create: {exc.strerror or exc}")
    if not os.access(folder, os.W_OK):
        return fail(f"--export {folder}: is not writable")
    try:
        scenarios = _talk(args)
        places = _only(args, scenarios)
    except ScenarioError as exc:
        return fail(str(exc))
    from splitdesk.ui.render.clips import Scene

    scenes: list[Scene] = []
    total = len(scenarios)  # numbered in the talk, as presentation mode says "3 / 11"
    with tempfile.TemporaryDirectory(prefix="splitdesk-talk-") as tmp:
        for place in places:
            k, scenario = place + 1, scenarios[place]
            if stop.asked():
                break
            try:
                if scenario.recording is not None:
                    recording = load_recording(scenario.recording)
                else:
                    print(
                        f"scene {k}/{total} {scenario.name}: running “{scenario.title}” on "
                        "the built-in endpoint…",
                        file=err,
                        flush=True,
                    )
                    recording = _run_scenario(scenario, Path(tmp) / f"{k}.splitdesk.json")
                    stop.install()  # the bench gave the signals back to the defaults
            except (RecordingError, ScenarioError) as exc:
                if stop.asked():
                    break
                return fail(f"{scenario.name}: {exc}", 1)
            if stop.asked():
                break
            title = scenario.title
            scenes.append(Scene(scenario.name, title, scenario.caption, k, total, recording))
    if stop.asked():
        print("splitdesk scenarios: stopped before any clip was rendered", file=err)
        return STOPPED
    return _render_scenes(scenes, folder, kinds, args, out, err, stop)


def _run_scenario(scenario: Scenario, path: Path) -> Any:
    """Run ``scenario`` with ``splitdesk bench`` on the built-in endpoint (its profile,
    parameters, mode; its own speed) and return the recording of the run. Raises
    ``RecordingError`` when no run produced events."""
    import io

    from splitdesk.core.bench.compare import run_bench
    from splitdesk.core.bench.scenarios import bench_options
    from splitdesk.core.files.recording import RecordingError, load_recording
    from splitdesk.sim.launcher import start_sim

    opts = bench_options(scenario)
    opts.record_path = str(path)
    status = run_bench(opts, out=io.StringIO(), err=io.StringIO(), launch=start_sim)
    if status == STOPPED:
        raise RecordingError("stopped (SIGTERM or Ctrl-C) while it ran")
    recording = load_recording(path)
    return recording.model_copy(update={"title": scenario.title})


def _render_scenes(
    scenes: list[Any],
    folder: Path,
    kinds: tuple[str, ...],
    args: argparse.Namespace,
    out: TextIO,
    err: TextIO,
    stop: _Stop,
) -> int:
    """Render ``scenes`` offscreen (Qt is loaded only now); one line per scene as it starts
    (``err``), one per file written (``out``). ``stop.asked()``: end at the next frame."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    import asyncio
    import time

    import qasync
    from PySide6.QtCore import qInstallMessageHandler
    from PySide6.QtWidgets import QApplication

    from splitdesk.app import qt_message_handler
    from splitdesk.cli.export import ProgressBar, animation_line
    from splitdesk.ui.common.theme import THEMES, apply_theme
    from splitdesk.ui.render.clips import render_scene
    from splitdesk.ui.render.encoders import EncodeError, animation_seconds
    from splitdesk.ui.render.exports import ExportCancelledError, frame_count

    # Qt's messages to the log, its harmless offscreen noise left out (one "does not support
    # propagateSizeHints()" per stage shown, 17 of them per export before)
    qInstallMessageHandler(qt_message_handler)
    existing = QApplication.instance()
    app = existing if isinstance(existing, QApplication) else QApplication(sys.argv[:1])
    theme = THEMES[args.theme]
    apply_theme(app, theme, 1.0)
    status = {"code": 0}

    async def main() -> None:
        for scene in scenes:
            if stop.asked():
                raise ExportCancelledError("stopped")
            print(
                f"scene {scene.index}/{scene.total} {scene.name}: rendering {', '.join(kinds)}…",
                file=err,
                flush=True,
            )
            started = time.monotonic()
            bars: dict[str, ProgressBar] = {}

            def progress(
                kind: str, done: int, total: int, scene: Any = scene, bars: Any = bars
            ) -> bool:
                bar = bars.setdefault(kind, ProgressBar(f"{scene.index:02d} {kind}", err))
                return bool(bar(done, total)) and not stop.asked()

            paths = await render_scene(
                scene, folder, theme, args.size, args.fps, kinds, progress=progress
            )
            took = time.monotonic() - started
            for path in paths:
                size_mb = path.stat().st_size / 1e6
                kind = path.suffix.lstrip(".")
                if kind == "png":
                    print(f"png: wrote {path} (poster, {size_mb:.2f} MB)", file=out)
                    continue
                frames = frame_count(scene.recording.runs[0].duration_s, args.fps)
                plays = animation_seconds(frames, args.fps, kind)
                print(animation_line(kind, path, frames, args.fps, plays, size_mb, took), file=out)
            out.flush()

    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    try:
        with loop:
            loop.run_until_complete(main())
    except ExportCancelledError:
        print("splitdesk scenarios: stopped; the clips written so far are kept", file=err)
        status["code"] = STOPPED
    except EncodeError as exc:
        print(f"splitdesk scenarios: error: {exc}", file=err)
        status["code"] = 1
    except OSError as exc:
        print(f"splitdesk scenarios: error: could not write: {exc}", file=err)
        status["code"] = 1
    finally:
        asyncio.set_event_loop(None)
    return status["code"]
