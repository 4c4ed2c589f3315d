"""``splitdesk sweep``: the speed-up for N = 1 … ``--max-n`` questions, headless.

Takes every endpoint option of ``splitdesk bench`` (the same parser function and the same
validation, :func:`splitdesk.cli.bench.run_bench_command`); the sweep itself is
:mod:`splitdesk.core.bench.sweep`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``sweep`` subcommand to the ``splitdesk`` subparsers."""
    from splitdesk.cli.args import add_bench_arguments

    p = sub.add_parser(
        "sweep",
        help="the speed-up for N = 1…max-n questions, without a window",
        description="For N = 1…MAX_N questions (the set's first N, generated when the set is "
        "shorter) send them combined, then in parallel, each on an idle endpoint; print the "
        "speed-up per N beside the ideal (N) and, on the built-in endpoint, the cost model's "
        "prediction (and a JSON document with --json).",
    )
    # checked in run(), not by argparse: its required-argument error would come before the
    # unknown options are named (splitdesk.cli.main.main names those first, as for bench)
    p.add_argument(
        "--max-n",
        type=int,
        metavar="N",
        help="largest number of questions (1-64; required unless --context-tokens)",
    )
    p.add_argument(
        "--context-tokens",
        metavar="L,L,…",
        help="sweep the length of a shared context instead, at a fixed N (the questions "
        "given, or the first --max-n): e.g. 0,1000,4000,16000 tokens of --context FILE, the "
        "set's context or the shipped document",
    )
    add_bench_arguments(p)
    for action in p._actions:  # bench options that mean nothing to a sweep
        if {"--mode", "--record"} & set(action.option_strings):
            action.help = argparse.SUPPRESS


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Validate (as bench does, plus ``--max-n``) and run the sweep; the exit status."""
    from splitdesk.cli.bench import run_bench_command
    from splitdesk.core.bench.options import BenchOptions
    from splitdesk.core.bench.sweep import run_sweep
    from splitdesk.sim.launcher import start_sim

    def fail(message: str) -> int:
        print(f"splitdesk sweep: error: {message}", file=sys.stderr)
        return 2

    if args.context_tokens is not None:
        return _context_sweep(args, parser, fail)
    if args.max_n is None:
        return fail("the following arguments are required: --max-n (see splitdesk sweep --help)")
    if not 1 <= args.max_n <= 64:
        return fail(f"--max-n must be between 1 and 64 (got {args.max_n})")
    if args.mode != "all":
        return fail("--mode is not a sweep option: a sweep sends combined, then parallel")
    if args.record_path:
        return fail("--record is not a sweep option (yet): use splitdesk bench --record")
    args.mode = "parallel"  # a sweep starts at N = 1: bench's "combine needs two" is moot

    def sweep(opts: BenchOptions) -> int:
        from dataclasses import replace

        from splitdesk.core.bench.size import session_size, size_problem

        # its size before anything is sent: every N combined then parallel, at most max_n
        # questions each (an over-estimate; core/bench/size.py)
        both = replace(opts, mode="one-after-another", questions=opts.questions[:1])
        size = session_size(both, rounds_per_mode=args.max_n * opts.repeat, questions=args.max_n)
        if problem := size_problem(size):
            print(f"splitdesk sweep: error: {problem}", file=sys.stderr)
            return 2
        return run_sweep(
            opts, args.max_n, launch=start_sim
        )  # N ≤ 64: splitdesk/cpus.py MANY_STREAMS

    return run_bench_command(args, parser, command="sweep", run=sweep)


def _context_sweep(
    args: argparse.Namespace, parser: argparse.ArgumentParser, fail: Callable[[str], int]
) -> int:
    """``--context-tokens``: validate and run the context-length sweep
    (:mod:`splitdesk.core.bench.context_sweep`) at a fixed N."""
    from splitdesk.cli.bench import run_bench_command
    from splitdesk.core.bench.context_sweep import parse_lengths, run_context_sweep
    from splitdesk.core.bench.options import BenchOptions
    from splitdesk.sim.launcher import start_sim

    try:
        lengths = parse_lengths(args.context_tokens)
    except ValueError as exc:
        return fail(f"--context-tokens {args.context_tokens}: {exc}")
    if args.max_n is not None and not 2 <= args.max_n <= 64:
        return fail(f"--max-n must be between 2 and 64 with --context-tokens (got {args.max_n})")
    if args.mode != "all":
        return fail("--mode is not a sweep option: a sweep sends combined, then parallel")
    if args.record_path:
        return fail("--record is not a sweep option (yet): use splitdesk bench --record")
    args.mode = "all"  # combined needs two questions: checked as bench checks it

    def sweep(opts: BenchOptions) -> int:
        if args.max_n is not None:
            if len(opts.questions) < args.max_n:
                return fail(f"--max-n {args.max_n}: only {len(opts.questions)} questions given")
            opts.questions = opts.questions[: args.max_n]
        return run_context_sweep(opts, lengths, launch=start_sim)

    return run_bench_command(args, parser, command="sweep", run=sweep)
