"""The ``splitdesk`` command: the window (default) and the subcommands (``bench``, ``sim``,
``sweep``, ``scenarios``, ``replay``, ``export``, ``doctor``), each in a module of its own.

Heavy imports (Qt, httpx) happen inside each command so ``splitdesk sim`` and
``splitdesk bench`` start fast and never load Qt.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from splitdesk.cli.args import (
    Parser,
    add_bench_arguments,
    add_endpoint_arguments,
    subparser,
    unknown_options_message,
    window_size,
)

if TYPE_CHECKING:
    from splitdesk.app import WindowEndpoint


def build_parser() -> argparse.ArgumentParser:
    """The full command-line parser."""
    from splitdesk.sim import cli as sim_cli

    parser = Parser(
        prog="splitdesk",
        description="See, live and measured, why N questions sent as N parallel LLM requests "
        "finish sooner than one combined request. Without a command: the window.",
    )
    parser.add_argument(
        "--debug",
        action="store_true",
        help="verbose log (DEBUG) in the log file and on stderr; splitdesk --debug bench … "
        "for the bench",
    )
    gui = parser.add_argument_group("window options (when no command is given)")
    gui.add_argument("--run", action="store_true", help="press Run once the window is up")
    gui.add_argument(
        "--screenshot", metavar="PATH", help="save the window as PNG when that run has finished"
    )
    gui.add_argument(
        "--quit", action="store_true", help="close the app after the run (and screenshot)"
    )
    gui.add_argument("--theme", choices=["dark", "light"], help="colour theme")
    gui.add_argument("--scale", type=float, help="text size factor, e.g. 1.5 for a projector")
    gui.add_argument(
        "--profile",
        dest="gui_profile",
        metavar="NAME",
        help="use the built-in endpoint with this profile (see: splitdesk sim --list-profiles)",
    )
    gui.add_argument("--speed", type=float, help="built-in endpoint speed factor")
    add_endpoint_arguments(gui)  # --endpoint, --api, --model, --api-key-env: bench's words
    gui.add_argument(
        "--present",
        action="store_true",
        help="presentation mode: full screen, large type, captions (F11 in the window)",
    )
    gui.add_argument(
        "--scenario",
        metavar="NAME",
        help="open this scenario (see: splitdesk scenarios), or a scenario .toml file",
    )
    gui.add_argument(
        "--size",
        type=window_size,
        metavar="WxH",
        help="window size in pixels for this session, e.g. 1280x720 (a projector, a slide)",
    )
    gui.add_argument(
        "--questions",
        dest="gui_questions",
        metavar="FILE",
        help="open this question set (TOML, or one question per line) in the window",
    )
    sub = parser.add_subparsers(dest="command", parser_class=Parser)
    sim = sub.add_parser(
        "sim",
        help="serve the built-in endpoint alone",
        description="Serve the built-in simulated LLM endpoint (OpenAI, Anthropic, Ollama, TGI "
        "routes) until Ctrl-C; prints 'listening on URL' once it accepts connections.",
    )
    sim_cli.add_arguments(sim)
    bench = sub.add_parser(
        "bench",
        help="measure combined vs parallel without a window",
        description="Send the questions combined, in parallel and one after another; print the "
        "latencies and the speed-up (and a JSON document with --json).",
    )
    add_bench_arguments(bench)
    from splitdesk.cli import replay as replay_cli

    replay_cli.add_arguments(
        sub.add_parser(
            "replay",
            help="replay a recorded run in the window (no network)",
            description="Replay a recording (.splitdesk.json[.gz]) on its recorded times: the "
            "same panes, timeline and summary as live, with no network and no endpoint.",
        )
    )
    from splitdesk.cli import sweep as sweep_cli

    sweep_cli.register(sub)  # splitdesk sweep
    from splitdesk.cli import scenarios as scenarios_cli

    scenarios_cli.register(sub)  # splitdesk scenarios
    from splitdesk.cli import export as export_cli

    export_cli.add_arguments(
        sub.add_parser(
            "export",
            help="write a recording's figures, trace, pictures or animation (no window)",
            description="Export a recording: figures as CSV or bench JSON, a Perfetto / "
            "Chrome trace, the timeline as PNG or SVG, the window as PNG, the run as GIF or MP4.",
        )
    )
    from splitdesk import doctor

    doctor.register(parser, sub)  # --version, --install-desktop-entry, doctor
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the process exit status."""
    from splitdesk.childproc import ENGINE_COMMAND
    from splitdesk.heap import limit_malloc_arenas

    limit_malloc_arenas()  # every splitdesk process, before any thread starts (splitdesk.heap)
    if (sys.argv[1:] if argv is None else argv)[:1] == [ENGINE_COMMAND]:  # frozen bundle's child
        from splitdesk.core.measure.engine_worker import main as engine_main

        engine_main()
        return 0
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # name the command's own --help and the closest option
        where = subparser(parser, args.command) if args.command else None
        (where or parser).error(unknown_options_message(where or parser, unknown))
    if args.debug:
        from splitdesk import logs

        logs.setup_logging(debug=True, console=True)
    if args.command == "sim":
        from splitdesk.sim import cli as sim_cli

        return sim_cli.run(args)
    if args.command == "bench":
        from splitdesk.cli.bench import run_bench_command

        return run_bench_command(args, parser)
    if args.command == "sweep":
        from splitdesk.cli import sweep as sweep_cli

        return sweep_cli.run(args, parser)
    if args.command == "scenarios":
        from splitdesk.cli import scenarios as scenarios_cli

        return scenarios_cli.run(args)
    if args.command == "replay":
        from splitdesk.cli import replay as replay_cli

        return replay_cli.run(args)
    if args.command == "export":
        from splitdesk.cli import export as export_cli

        return export_cli.run(args)
    from splitdesk import doctor

    if (status := doctor.dispatch(args)) is not None:
        return status
    return run_gui_command(args, parser)


def run_gui_command(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Open the window (imports Qt only now)."""
    from splitdesk.core.files.atomic import output_problem
    from splitdesk.sim.params import PROFILES

    if args.gui_profile and args.gui_profile not in PROFILES:
        parser.error(f"--profile {args.gui_profile}: unknown (known: {', '.join(PROFILES)})")
    if args.scale is not None and not 0.6 <= args.scale <= 3.0:
        parser.error("--scale must be between 0.6 and 3")
    if args.speed is not None and not 0 < args.speed <= 100:
        parser.error("--speed must be in (0, 100]")
    if args.quit and not (args.run or args.screenshot):
        # nothing would ever end: the window would wait for a run that is never started
        parser.error("--quit closes the app after a run: add --run (or --screenshot PATH)")
    endpoint = window_endpoint(args, parser)
    if args.screenshot and (problem := output_problem(Path(args.screenshot))):
        parser.error(f"--screenshot {args.screenshot}: {problem}")  # before the run, exit 2
    question_set = None
    if args.gui_questions:
        from splitdesk.core.run.questions import QuestionFileError, load_question_set

        try:
            question_set = load_question_set(Path(args.gui_questions))
        except QuestionFileError as exc:
            parser.error(f"--questions: {exc}")
    scenario = None
    if args.scenario:
        from splitdesk.cli import scenarios as scenarios_cli

        scenario = scenarios_cli.resolve(args.scenario, parser)
    from splitdesk.app import GuiOptions, run_gui

    return run_gui(
        GuiOptions(
            run=args.run or args.screenshot is not None,
            screenshot=Path(args.screenshot) if args.screenshot else None,
            quit=args.quit,
            theme=args.theme,
            scale=args.scale,
            profile=args.gui_profile,
            speed=args.speed,
            size=args.size,
            debug=args.debug,
            questions=question_set,
            present=args.present,
            scenario=scenario,
            endpoint=endpoint,
        )
    )


def window_endpoint(
    args: argparse.Namespace, parser: argparse.ArgumentParser
) -> WindowEndpoint | None:
    """The endpoint ``--endpoint URL --api … --model … --api-key-env …`` chose for the
    window (``None``: the saved one). One-line errors (exit status 2) for an option
    without ``--endpoint``, a URL that is not one, ``--profile``/``--speed`` with a URL, or
    an ``--api-key-env`` variable that is not set."""
    import os

    from splitdesk.app import WindowEndpoint
    from splitdesk.core.measure.urls import check_url

    given = [
        f"--{name}"
        for name, value in (
            ("api", args.gui_api),
            ("model", args.gui_model),
            ("api-key-env", args.gui_api_key_env),
        )
        if value
    ]
    if args.gui_endpoint is None:
        if given:
            verb = "goes" if len(given) == 1 else "go"
            parser.error(f"{', '.join(given)} {verb} with --endpoint URL (or --endpoint builtin)")
        return None
    url = args.gui_endpoint.strip()
    if url == "builtin":
        if args.gui_api_key_env:
            parser.error("--api-key-env: the built-in endpoint takes no key")
        return WindowEndpoint("builtin", args.gui_api, args.gui_model, None)
    if args.gui_profile or args.speed is not None:
        parser.error("--profile and --speed are for the built-in endpoint, not --endpoint URL")
    try:
        check_url(url)
    except ValueError as exc:
        parser.error(f"--endpoint {url!r}: {exc}")
    if args.gui_api_key_env and args.gui_api_key_env not in os.environ:
        parser.error(f"--api-key-env {args.gui_api_key_env}: that environment variable is not set")
    return WindowEndpoint(url, args.gui_api, args.gui_model, args.gui_api_key_env)


if __name__ == "__main__":
    sys.exit(main())
