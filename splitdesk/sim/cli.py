"""``splitdesk sim``: serve the built-in endpoint alone.

``splitdesk sim [--host H] [--port P] [--profile NAME] [--<param> V …] [--list-profiles]
[--fault NAME[:ARG][@SHARE] …] [--fault-seed N] [--chaos SEED]``
prints ``listening on http://HOST:PORT`` once it accepts connections and stops cleanly on
SIGINT/SIGTERM. Every :class:`~splitdesk.sim.params.SimParams` field is a flag
(``t_seq`` → ``--t-seq``). The fault options are described in :mod:`splitdesk.sim.faults`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import textwrap
import threading
import time
from typing import Any

from splitdesk.sim.faults import CATALOGUE, HEADER, FaultKind, FaultSchedule, Rule, parse_rule
from splitdesk.sim.params import DEFAULT_PROFILE, PROFILES, SimParams


def _port(text: str) -> int:
    """argparse type for a TCP port number 0–65535 (0: let the OS pick a free one)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{value} is not a port number (0-65535)")
    return value


class _HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, except that description lines starting with two spaces stay
    lines of their own (wrapped with a hanging indent): the fault catalogue is a list."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        out: list[str] = []
        for line in text.splitlines():
            if line.startswith("  "):
                out.append(
                    textwrap.fill(
                        line.strip(),
                        width,
                        initial_indent=indent + "  ",
                        subsequent_indent=indent + "      ",
                    )
                )
            else:
                out.append(super()._fill_text(line, width, indent))
        return "\n".join(out)


def _default(kind: FaultKind) -> str:
    if kind.default is None:
        return ""
    if kind.integer:
        return f" (default {int(kind.default)})"
    return f" (default {kind.default:g})"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``sim`` options to ``parser``."""
    parser.formatter_class = _HelpFormatter
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default: loopback only)"
    )
    parser.add_argument("--port", type=_port, default=0, help="port (default 0: a free port)")
    parser.add_argument(
        "--profile", default=DEFAULT_PROFILE, choices=list(PROFILES), help="named parameter set"
    )
    parser.add_argument(
        "--list-profiles", action="store_true", help="describe the profiles and exit"
    )
    group = parser.add_argument_group("cost model and text parameters (override the profile)")
    for name, info in SimParams.model_fields.items():
        kind = info.annotation if info.annotation in (int, float, str) else str
        group.add_argument(
            f"--{name.replace('_', '-')}",
            dest=f"param_{name}",
            type=kind,  # type: ignore[arg-type]
            default=None,
            metavar="V",
            help=f"{info.description} (default {info.default})",
        )
    faults = parser.add_argument_group(
        "injected faults (for testing clients; see docs/DESIGN.md)",
        "Each generation request draws once: a rule hits the given SHARE of requests (0-1, "
        "default 1; shares add up). A request's own header "
        f"'{HEADER}: NAME[:ARG]' (or 'none') overrides the rules. Faults:\n"
        + "\n".join(
            f"  {k.name}{':' + k.arg if k.arg else ''}: {k.summary}{_default(k)}"
            for k in CATALOGUE.values()
        ),
    )
    faults.add_argument(
        "--fault",
        action="append",
        type=_rule,
        default=[],
        metavar="NAME[:ARG][@SHARE]",
        help="inject a fault into a share of requests (repeatable), e.g. reset-mid:5@0.2; "
        "'chaos@SHARE' draws a random fault per hit request",
    )
    faults.add_argument(
        "--fault-seed", type=int, default=0, metavar="N", help="seed of the fault draws (default 0)"
    )
    faults.add_argument(
        "--chaos",
        type=int,
        default=None,
        metavar="SEED",
        help="the chaos profile: a random fault in 30%% of requests, drawn with SEED "
        "(same as --fault chaos@0.3 --fault-seed SEED)",
    )
    parser.add_argument("--parent-pid", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--watch-stdin", action="store_true", help=argparse.SUPPRESS)


def _rule(text: str) -> Rule:
    """argparse type for ``--fault``."""
    try:
        return parse_rule(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def fault_schedule(args: argparse.Namespace) -> FaultSchedule:
    """The fault schedule of the ``--fault``/``--fault-seed``/``--chaos`` options. Raises
    ``ValueError`` when the shares add up to more than 1."""
    rules: list[Rule] = list(args.fault)
    seed: int = args.fault_seed
    if args.chaos is not None:
        rules.append(Rule(None, 0.3))
        seed = args.chaos
    return FaultSchedule(rules, seed)


def param_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The ``--<param>`` values given on the command line."""
    return {
        name: getattr(args, f"param_{name}")
        for name in SimParams.model_fields
        if getattr(args, f"param_{name}", None) is not None
    }


def describe_profiles() -> str:
    """Human listing of the profiles and their overrides."""
    lines = []
    for p in PROFILES.values():
        over = ", ".join(f"{k}={v}" for k, v in p.overrides.items()) or "defaults"
        lines.append(f"{p.name:14} {p.summary}\n{'':14} ({over})")
    return "\n".join(lines)


def _exit_when_orphaned(parent_pid: int | None, watch_stdin: bool) -> None:
    """Terminate this process when the parent goes away (see ``sim/launcher.py``)."""

    def shutdown() -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(3.0)
        os._exit(1)  # graceful shutdown hung

    if watch_stdin:

        def read_stdin() -> None:
            try:
                while sys.stdin.buffer.read(4096):
                    pass
            except (OSError, ValueError):
                pass
            shutdown()

        threading.Thread(target=read_stdin, daemon=True, name="stdin-watch").start()
    if parent_pid is not None:

        def poll_parent() -> None:
            while os.getppid() == parent_pid:
                time.sleep(0.5)
            shutdown()

        threading.Thread(target=poll_parent, daemon=True, name="parent-watch").start()


def run(args: argparse.Namespace) -> int:
    """Run the ``sim`` command; returns the exit status."""
    if args.list_profiles:
        print(describe_profiles())
        return 0
    try:
        params = SimParams.checked(args.profile, param_overrides(args))
    except ValueError as exc:
        print(f"splitdesk sim: error: --{str(exc).replace('_', '-')}", file=sys.stderr)
        return 2
    try:
        schedule = fault_schedule(args)
    except ValueError as exc:
        print(f"splitdesk sim: error: --fault: {exc}", file=sys.stderr)
        return 2
    if schedule.active:
        rules = ", ".join(r.label for r in schedule.rules)
        print(f"injecting faults: {rules} (seed {schedule.seed})", file=sys.stderr, flush=True)
    _exit_when_orphaned(args.parent_pid, args.watch_stdin)
    # Imported here: every `splitdesk` process builds this command's parser, and the
    # window's process never serves (uvicorn and Starlette cost it ~70 ms of start-up).
    from splitdesk.sim.server import serve

    def ready(url: str) -> None:
        print(f"listening on {url}", flush=True)

    try:
        asyncio.run(
            serve(
                params, args.host, args.port, args.profile, on_ready=ready, fault_schedule=schedule
            )
        )
    except OSError as exc:
        print(
            f"splitdesk sim: error: cannot listen on {args.host}:{args.port}: "
            f"{exc.strerror or exc}",
            file=sys.stderr,
        )
        return 1
    except KeyboardInterrupt:
        pass
    return 0
