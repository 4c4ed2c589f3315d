"""``splitdesk scenarios [--check FILE]``: list the ready-made demos with their captions,
or check a scenario file someone wrote (format: :mod:`splitdesk.core.files.scenarios`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

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
