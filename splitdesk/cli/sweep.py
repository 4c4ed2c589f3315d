"""``splitdesk sweep``: the speed-up for N = 1 … ``--max-n`` questions, headless.

Takes every endpoint option of ``splitdesk bench`` (the same parser function and the same
validation, :func:`splitdesk.cli.bench.run_bench_command`); the sweep itself is
:mod:`splitdesk.core.bench.sweep`.
"""

from __future__ import annotations

import argparse
import sys


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
        "--max-n", type=int, metavar="N", help="largest number of questions (1-64; required)"
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
