"""``splitdesk bench``: validate the options, run the comparison headless, print the table
and write the JSON document."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from splitdesk.core.bench.options import BenchOptions


def run_bench_command(
    args: argparse.Namespace,
    parser: argparse.ArgumentParser,
    command: str = "bench",
    run: Callable[[BenchOptions], int] | None = None,
) -> int:
    """Validate the bench options, run it, return the exit status. ``command`` names the
    command in errors; ``run`` runs the validated options instead of the bench (``splitdesk
    sweep`` shares every bench option this way) and may raise ``BenchError``."""
    from splitdesk.core.bench.compare import BenchError, run_bench
    from splitdesk.core.bench.options import BenchOptions
    from splitdesk.core.bench.size import session_size, size_problem
    from splitdesk.core.files.atomic import input_problem, output_problem, same_file
    from splitdesk.core.measure.client_pattern import ClientPattern
    from splitdesk.core.measure.netenv import ca_bundle_problem
    from splitdesk.core.measure.runner import Timeouts
    from splitdesk.core.run import limits
    from splitdesk.core.run.limits import questions_problem
    from splitdesk.core.run.questions import (
        DEFAULT_SET,
        QuestionFileError,
        builtin_sets,
        load_question_set,
        question_text,
        read_context_file,
    )
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
    titles = [""] * len(questions)  # the set's short labels, kept in a --record recording
    template = None
    context = ""
    if args.questions_file:
        try:
            qs = load_question_set(Path(args.questions_file))
        except QuestionFileError as exc:
            return fail(str(exc))
        if not qs.texts:
            return fail(f"{Path(args.questions_file).name}: the file holds no questions")
        questions += qs.texts
        titles += [q.title for q in qs.questions]
        template = qs.template
        context = qs.context
    if getattr(args, "context_file", None):
        try:
            context = read_context_file(args.context_file, None)
        except QuestionFileError as exc:
            return fail(str(exc).replace("context_file", "--context", 1))
        if not context.strip():
            return fail(f"--context {args.context_file}: the file is empty")
    if not questions:
        default = builtin_sets()[DEFAULT_SET]
        questions = default.texts
        titles = [q.title for q in default.questions]
    if len(questions) < 2 and args.mode in ("combined", "all", "dependent"):
        return fail(
            f"--mode {args.mode} needs at least 2 questions to combine (got {len(questions)}); "
            "use --mode parallel for one"
        )
    if problem := questions_problem(questions):
        return fail(problem)
    sim_params: dict[str, str] = {}
    for item in args.sim_param:
        name, sep, value = item.partition("=")
        if not sep:
            return fail(f"--sim-param {item!r}: expected NAME=VALUE")
        sim_params[name.strip().replace("-", "_")] = value.strip()
    builtin_params = None
    if args.endpoint == "builtin":
        from splitdesk.sim.params import SimParams

        try:  # every simulator parameter's bound, before anything starts
            builtin_params = SimParams.checked(args.profile, sim_params)
        except ValueError as exc:
            return fail(f"--sim-param {exc}")
    # One bound per kind of number, with its reason (core/run/limits.py).
    for flag, value, bound in (
        ("--max-tokens", args.max_tokens, limits.MAX_TOKENS),
        ("--warmup", args.warmup, limits.WARMUP),
        ("--retry-429", args.retry_429, limits.RETRY_429),
        ("--read-timeout", args.read_timeout, limits.TIMEOUT_S),
        ("--connect-timeout", args.connect_timeout, limits.TIMEOUT_S),
        ("--pause", args.pause, limits.PAUSE_S),
        ("--temperature", args.temperature, limits.TEMPERATURE),
        ("--seed", args.seed, limits.SEED),
    ):
        if value is not None and (problem := bound.problem(value)):
            return fail(f"{flag} {value:g}: {problem}" if isinstance(value, float) else
                        f"{flag} {value}: {problem}")  # fmt: skip
    if run is None and args.repeat >= 1:
        # bench: its size, estimated before anything is sent (core/bench/size.py); before
        # --repeat's bound, so that --repeat 1000000000 says how large it would be
        step = answer = None
        if builtin_params is not None:
            step = builtin_params.t_base / builtin_params.speed
            answer = builtin_params.answer_tokens
        planned = BenchOptions(questions, mode=args.mode, max_tokens=args.max_tokens)
        planned.repeat, planned.warmup = args.repeat, args.warmup
        if problem := size_problem(session_size(planned, step_s=step, answer_tokens=answer)):
            return fail(problem)
    if problem := limits.REPEAT.problem(args.repeat):
        return fail(f"--repeat {args.repeat}: {problem}")
    # Every path an option names, checked before anything is sent: a run of minutes must
    # not end in a file it cannot write (core/files/atomic.py).
    if getattr(args, "record_path", None) == "-":  # not stdout, as for --json: a file
        return fail(
            "--record -: a recording is a file (.splitdesk.json or .json.gz): give its path"
        )
    outputs = {"--json": args.json_path if args.json_path != "-" else None}
    outputs["--record"] = getattr(args, "record_path", None)
    for flag, target in outputs.items():
        if target and (problem := output_problem(Path(target))):
            return fail(f"{flag} {target}: {problem}")
    named = [(flag, Path(target)) for flag, target in outputs.items() if target]
    if len(named) == 2 and same_file(named[0][1], named[1][1]):
        return fail(f"--json and --record name one file ({named[0][1]}): give each its own")
    if args.ca_bundle and (
        problem := input_problem(Path(args.ca_bundle), "CA bundle")
        or ca_bundle_problem(args.ca_bundle)  # loaded as every request's client loads it
    ):
        return fail(f"--ca-bundle {args.ca_bundle}: {problem}")
    endpoint = args.endpoint
    if endpoint != "builtin":
        from splitdesk.core.measure.runner import check_url, redact
        from splitdesk.core.measure.urls import base_url_problem

        shown = redact(endpoint, None)
        try:
            check_url(endpoint)
        except ValueError as exc:
            return fail(f"--endpoint {shown!r}: {exc} (expected 'builtin' or an http(s):// URL)")
        wrong_path = base_url_problem(endpoint, args.api)
        if wrong_path is not None:
            return fail(f"--endpoint {shown!r}: {wrong_path}")
    opts = BenchOptions(
        questions=questions,
        titles=titles,
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
    opts.warmup, opts.pause_s, opts.nonce = args.warmup, args.pause, args.nonce
    if (args.price_in is None) != (args.price_out is None):
        return fail("--price-in and --price-out go together (prices per million tokens)")
    if args.price_cached is not None and args.price_in is None:
        return fail("--price-cached goes with --price-in and --price-out")
    if args.price_in is not None:
        prices = (args.price_in, args.price_out, args.price_cached)
        if not all(v is None or (math.isfinite(v) and v >= 0) for v in prices):
            return fail("--price-in/--price-out/--price-cached must be numbers >= 0")
        from splitdesk.core.analyse.cost import Prices

        opts.prices = Prices(
            input_per_m=args.price_in,
            output_per_m=args.price_out,
            cached_input_per_m=args.price_cached,
        )
    if template is not None:
        opts.template = template
    changes: dict[str, object] = {}
    if getattr(args, "context_as", None):
        changes["context_as"] = args.context_as
    if getattr(args, "cache_control", None):
        changes["cache_control"] = True
    if changes:
        opts.template = opts.template.model_copy(update=changes)
    opts.context = context
    try:
        from splitdesk.cpus import MANY_STREAMS
        from splitdesk.sim.launcher import start_sim, start_sim_beside_me

        # many streams at once: the endpoint on a CPU of its own, this thread off it
        many = len(opts.questions) >= MANY_STREAMS
        launch = start_sim_beside_me if many else start_sim
        return run(opts) if run is not None else run_bench(opts, launch=launch)
    except BenchError as exc:
        return fail(str(exc))
