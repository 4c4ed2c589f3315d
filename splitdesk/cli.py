"""The ``splitdesk`` command: the window (default), ``bench``, ``sim``.

Heavy imports (Qt, httpx) happen inside each command so ``splitdesk sim`` and
``splitdesk bench`` start fast and never load Qt.
"""

from __future__ import annotations

import argparse
import difflib
import math
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from splitdesk.core.bench import BenchOptions


def _window_size(text: str) -> tuple[int, int]:
    """argparse type for ``WxH`` (pixels, each 320–10000)."""
    w, sep, h = text.lower().partition("x")
    if not (sep and w.isdigit() and h.isdigit()):
        raise argparse.ArgumentTypeError(f"{text!r}: expected WIDTHxHEIGHT, e.g. 1280x720")
    size = (int(w), int(h))
    if not all(320 <= v <= 10000 for v in size):
        raise argparse.ArgumentTypeError(f"{text!r}: each side must be 320-10000 pixels")
    return size


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit status 2) instead of usage dumps."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _options_of(parser: argparse.ArgumentParser) -> list[str]:
    return [o for action in parser._actions for o in action.option_strings if o.startswith("--")]


def unknown_options_message(parser: argparse.ArgumentParser, unknown: list[str]) -> str:
    """The one-line error for options ``parser`` does not know, suggesting the closest
    known option for each (``difflib``), e.g. ``--max-token`` → ``--max-tokens``."""
    known = _options_of(parser)
    parts = []
    for arg in unknown:
        name = arg.split("=", 1)[0]
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
        parts.append(f"{arg} (did you mean {close[0]}?)" if close else arg)
    return f"unrecognized arguments: {' '.join(parts)}"


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found = action.choices.get(name)
            return found if isinstance(found, argparse.ArgumentParser) else None
    return None


def build_parser() -> argparse.ArgumentParser:
    """The full command-line parser."""
    from splitdesk.sim import cli as sim_cli

    parser = _Parser(
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
        type=_window_size,
        metavar="WxH",
        help="window size in pixels for this session, e.g. 1280x720 (a projector, a slide)",
    )
    gui.add_argument(
        "--questions",
        dest="gui_questions",
        metavar="FILE",
        help="open this question set (TOML, or one question per line) in the window",
    )
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
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
    from splitdesk import replay_cli

    replay_cli.add_arguments(
        sub.add_parser(
            "replay",
            help="replay a recorded run in the window (no network)",
            description="Replay a recording (.splitdesk.json[.gz]) on its recorded times: the "
            "same panes, timeline and summary as live, with no network and no endpoint.",
        )
    )
    from splitdesk import sweep_cli

    sweep_cli.register(sub)  # splitdesk sweep
    from splitdesk import scenarios_cli

    scenarios_cli.register(sub)  # splitdesk scenarios
    from splitdesk import export_cli

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


APIS = (
    "openai-chat",
    "openai-completions",
    "openai-responses",
    "azure-openai",
    "anthropic",
    "ollama-chat",
    "ollama-generate",
    "tgi",
)


def add_bench_arguments(p: argparse.ArgumentParser) -> None:
    """Options of ``splitdesk bench`` (DESIGN.md, "The headless contract")."""
    from splitdesk.sim.params import DEFAULT_PROFILE, PROFILES

    p.add_argument(
        "--endpoint",
        default="builtin",
        help="'builtin' (default) or the base URL the dialect's client takes",
    )
    p.add_argument(
        "--api", default="openai-chat", choices=APIS, help="API dialect (default openai-chat)"
    )
    p.add_argument("--model", help="model name (default: the endpoint's only model)")
    p.add_argument(
        "--profile",
        default=DEFAULT_PROFILE,
        choices=list(PROFILES),
        help="built-in endpoint profile",
    )
    p.add_argument(
        "--sim-param",
        action="append",
        default=[],
        metavar="NAME=V",
        help="override a built-in endpoint parameter, e.g. speed=4 "
        "(repeatable; see splitdesk sim --help)",
    )
    p.add_argument(
        "-q",
        "--question",
        action="append",
        dest="questions",
        default=[],
        metavar="TEXT",
        help="a question (repeat for several; default: five everyday questions)",
    )
    p.add_argument(
        "--questions",
        dest="questions_file",
        metavar="FILE",
        help="question-set file (TOML or one per line)",
    )
    p.add_argument(
        "--max-tokens",
        type=int,
        default=512,
        metavar="N",
        help="cap per answer (the combined request gets N × questions)",
    )
    p.add_argument(
        "--mode",
        default="all",
        choices=["combined", "parallel", "sequential", "all", "dependent"],
        help="which way(s) to send the questions (default all: one after another; "
        "dependent: combined, then the chain where each request carries the previous answer)",
    )
    p.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="K",
        help="run every mode K times (medians reported)",
    )
    p.add_argument(
        "--json", dest="json_path", metavar="PATH|-", help="write the JSON document (- for stdout)"
    )
    p.add_argument(
        "--record",
        dest="record_path",
        metavar="FILE",
        help="save every run as a recording (replay it with: splitdesk replay FILE; "
        "gzip-compressed when FILE ends in .gz)",
    )
    p.add_argument("--api-key-env", metavar="NAME", help="environment variable holding the API key")
    p.add_argument("--temperature", type=float, help="sampling temperature (default: the server's)")
    p.add_argument("--seed", type=int, help="sampling seed sent with every request")
    p.add_argument(
        "--read-timeout",
        type=float,
        default=300.0,
        metavar="S",
        help="longest silence between reads (s)",
    )
    p.add_argument(
        "--connect-timeout", type=float, default=10.0, metavar="S", help="connect timeout (s)"
    )
    p.add_argument(
        "--retry-429", type=int, default=0, metavar="N", help="retry a 429 up to N times"
    )
    p.add_argument(
        "--cold",
        action="store_true",
        help="open connections inside the timed phase, as a plain script does (default: "
        "warm every connection before a phase)",
    )
    p.add_argument(
        "--release",
        default="barrier",
        choices=["barrier", "as-scheduled"],
        help="send a phase's requests together from one barrier (default) or each as the "
        "event loop schedules it, as a plain script does",
    )
    p.add_argument(
        "--warmup",
        type=int,
        default=0,
        metavar="W",
        help="run W discarded warm-up rounds first (default 0)",
    )
    p.add_argument(
        "--pause", type=float, default=0.0, metavar="S", help="wait S seconds between runs"
    )
    nonce = p.add_mutually_exclusive_group()
    nonce.add_argument(
        "--nonce",
        dest="nonce",
        action="store_true",
        default=None,
        help="open every run's prompts with a fresh nonce (default: on when --repeat > 1)",
    )
    nonce.add_argument(
        "--no-nonce",
        dest="nonce",
        action="store_false",
        help="send identical prompts every run (the server's prefix cache may serve them)",
    )
    p.add_argument(
        "--price-in",
        type=float,
        metavar="P",
        help="price per million prompt tokens (with --price-out: each side's cost from usage)",
    )
    p.add_argument("--price-out", type=float, metavar="P", help="price per million output tokens")
    tls = p.add_mutually_exclusive_group()
    tls.add_argument("--ca-bundle", metavar="FILE", help="verify TLS with this CA bundle")
    tls.add_argument(
        "--insecure", action="store_true", help="do not verify TLS certificates (unsafe)"
    )


def run_bench_command(
    args: argparse.Namespace,
    parser: argparse.ArgumentParser,
    command: str = "bench",
    run: Callable[[BenchOptions], int] | None = None,
) -> int:
    """Validate the bench options, run it, return the exit status. ``command`` names the
    command in errors; ``run`` runs the validated options instead of the bench (``splitdesk
    sweep`` shares every bench option this way) and may raise ``BenchError``."""
    from splitdesk.core.bench import BenchError, BenchOptions, run_bench
    from splitdesk.core.client_pattern import ClientPattern
    from splitdesk.core.questions import (
        DEFAULT_SET,
        QuestionFileError,
        builtin_sets,
        load_question_set,
        question_text,
    )
    from splitdesk.core.runner import Timeouts
    from splitdesk.providers import PROVIDERS

    def fail(message: str) -> int:
        print(f"splitdesk {command}: error: {message}", file=sys.stderr)
        return 2

    if args.api not in PROVIDERS:
        return fail(f"--api {args.api} is not available yet (available: {', '.join(PROVIDERS)})")
    for q in args.questions:
        if not question_text(q):  # empty, spaces, or only invisible characters
            shown = f" ({q!a} shows nothing)" if q.strip() else ""
            return fail(f"-q/--question needs a non-empty question{shown}")
    for q in args.questions:
        try:
            q.encode("utf-8")
        except UnicodeEncodeError:
            # argv bytes that are not UTF-8 arrive as lone surrogates (PEP 383)
            return fail(f"-q {q.encode('utf-8', 'replace').decode()!r} is not valid UTF-8 text")
    questions = [question_text(q) for q in args.questions]
    template = None
    if args.questions_file:
        try:
            qs = load_question_set(Path(args.questions_file))
        except QuestionFileError as exc:
            return fail(str(exc))
        if not qs.texts:
            return fail(f"{Path(args.questions_file).name}: the file holds no questions")
        questions += qs.texts
        template = qs.template
    if not questions:
        questions = builtin_sets()[DEFAULT_SET].texts
    if len(questions) < 2 and args.mode in ("combined", "all", "dependent"):
        return fail(
            f"--mode {args.mode} needs at least 2 questions to combine (got {len(questions)}); "
            "use --mode parallel for one"
        )
    if args.repeat < 1:
        return fail("--repeat must be >= 1")
    if args.max_tokens < 1:
        return fail("--max-tokens must be >= 1")
    for flag, value in (
        ("--read-timeout", args.read_timeout),
        ("--connect-timeout", args.connect_timeout),
    ):
        if not (math.isfinite(value) and value > 0):
            return fail(f"{flag} must be a positive number of seconds (got {value})")
    if args.retry_429 < 0:
        return fail("--retry-429 must be >= 0")
    if args.temperature is not None and not (
        math.isfinite(args.temperature) and args.temperature >= 0
    ):
        return fail(f"--temperature must be >= 0 (got {args.temperature})")
    if args.json_path and args.json_path != "-":
        target = Path(args.json_path)
        folder = target.parent if str(target.parent) else Path(".")
        if target.is_dir():
            return fail(f"--json {args.json_path}: is a folder; give a file name")
        if not folder.is_dir():
            return fail(f"--json {args.json_path}: folder {folder} does not exist")
        if not os.access(folder, os.W_OK):
            return fail(f"--json {args.json_path}: folder {folder} is not writable")
    sim_params: dict[str, str] = {}
    for item in args.sim_param:
        name, sep, value = item.partition("=")
        if not sep:
            return fail(f"--sim-param {item!r}: expected NAME=VALUE")
        sim_params[name.strip().replace("-", "_")] = value.strip()
    endpoint = args.endpoint
    if endpoint != "builtin":
        from splitdesk.core.runner import check_url, redact

        try:
            check_url(endpoint)
        except ValueError as exc:
            shown = redact(endpoint, None)
            return fail(f"--endpoint {shown!r}: {exc} (expected 'builtin' or an http(s):// URL)")
    opts = BenchOptions(
        questions=questions,
        endpoint=endpoint,
        api=args.api,
        model=args.model,
        profile=args.profile,
        sim_params=sim_params,
        max_tokens=args.max_tokens,
        mode=args.mode,
        repeat=args.repeat,
        json_path=args.json_path,
        record_path=args.record_path,
        api_key_env=args.api_key_env,
        temperature=args.temperature,
        seed=args.seed,
        timeouts=Timeouts(connect=args.connect_timeout, read=args.read_timeout),
        retry_429=args.retry_429,
        verify=False if args.insecure else (args.ca_bundle or True),
        client=ClientPattern(cold=args.cold, release=args.release),
    )
    if args.warmup < 0:
        return fail("--warmup must be >= 0")
    if not (math.isfinite(args.pause) and 0 <= args.pause <= 3600):
        return fail("--pause must be 0-3600 seconds")
    opts.warmup, opts.pause_s, opts.nonce = args.warmup, args.pause, args.nonce
    if (args.price_in is None) != (args.price_out is None):
        return fail("--price-in and --price-out go together (prices per million tokens)")
    if args.price_in is not None:
        if not all(math.isfinite(v) and v >= 0 for v in (args.price_in, args.price_out)):
            return fail("--price-in/--price-out must be numbers >= 0")
        from splitdesk.core.cost import Prices

        opts.prices = Prices(input_per_m=args.price_in, output_per_m=args.price_out)
    if template is not None:
        opts.template = template
    try:
        from splitdesk.cpus import MANY_STREAMS
        from splitdesk.sim.launcher import start_sim, start_sim_beside_me

        # many streams at once: the endpoint on a CPU of its own, this thread off it
        many = len(opts.questions) >= MANY_STREAMS
        launch = start_sim_beside_me if many else start_sim
        return run(opts) if run is not None else run_bench(opts, launch=launch)
    except BenchError as exc:
        return fail(str(exc))


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the process exit status."""
    from splitdesk.childproc import ENGINE_COMMAND
    from splitdesk.heap import limit_malloc_arenas

    limit_malloc_arenas()  # every splitdesk process, before any thread starts (splitdesk.heap)
    if (sys.argv[1:] if argv is None else argv)[:1] == [ENGINE_COMMAND]:  # frozen bundle's child
        from splitdesk.core.engine_worker import main as engine_main

        engine_main()
        return 0
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # name the command's own --help and the closest option
        where = _subparser(parser, args.command) if args.command else None
        (where or parser).error(unknown_options_message(where or parser, unknown))
    if args.debug:
        from splitdesk import logs

        logs.setup_logging(debug=True, console=True)
    if args.command == "sim":
        from splitdesk.sim import cli as sim_cli

        return sim_cli.run(args)
    if args.command == "bench":
        return run_bench_command(args, parser)
    if args.command == "sweep":
        from splitdesk import sweep_cli

        return sweep_cli.run(args, parser)
    if args.command == "scenarios":
        from splitdesk import scenarios_cli

        return scenarios_cli.run(args)
    if args.command == "replay":
        from splitdesk import replay_cli

        return replay_cli.run(args)
    if args.command == "export":
        from splitdesk import export_cli

        return export_cli.run(args)
    from splitdesk import doctor

    if (status := doctor.dispatch(args)) is not None:
        return status
    return run_gui_command(args, parser)


def run_gui_command(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Open the window (imports Qt only now)."""
    from splitdesk.sim.params import PROFILES

    if args.gui_profile and args.gui_profile not in PROFILES:
        parser.error(f"--profile {args.gui_profile}: unknown (known: {', '.join(PROFILES)})")
    if args.scale is not None and not 0.6 <= args.scale <= 3.0:
        parser.error("--scale must be between 0.6 and 3")
    if args.speed is not None and not 0 < args.speed <= 100:
        parser.error("--speed must be in (0, 100]")
    question_set = None
    if args.gui_questions:
        from splitdesk.core.questions import QuestionFileError, load_question_set

        try:
            question_set = load_question_set(Path(args.gui_questions))
        except QuestionFileError as exc:
            parser.error(f"--questions: {exc}")
    scenario = None
    if args.scenario:
        from splitdesk import scenarios_cli

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
        )
    )


if __name__ == "__main__":
    sys.exit(main())
