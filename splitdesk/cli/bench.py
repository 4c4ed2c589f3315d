"""``splitdesk bench``: validate the options, run the comparison headless, print the table
and write the JSON document."""

from __future__ import annotations

import argparse
import math
import os
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
    from splitdesk.core.measure.client_pattern import ClientPattern
    from splitdesk.core.measure.runner import Timeouts
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
        from splitdesk.core.measure.runner import check_url, redact

        try:
            check_url(endpoint)
        except ValueError as exc:
            shown = redact(endpoint, None)
            return fail(f"--endpoint {shown!r}: {exc} (expected 'builtin' or an http(s):// URL)")
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
    if args.warmup < 0:
        return fail("--warmup must be >= 0")
    if not (math.isfinite(args.pause) and 0 <= args.pause <= 3600):
        return fail("--pause must be 0-3600 seconds")
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
