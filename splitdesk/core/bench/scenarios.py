"""A scenario (:mod:`splitdesk.core.files.scenarios`) as ``splitdesk bench`` options."""

from __future__ import annotations

from typing import Any

from splitdesk.core.bench.options import BenchOptions
from splitdesk.core.files.scenarios import Scenario, ScenarioError
from splitdesk.core.run.template import CombinedTemplate


def bench_options(scenario: Scenario, **sim_overrides: Any) -> BenchOptions:
    """The ``splitdesk bench`` options that run ``scenario`` on the built-in endpoint
    (its profile, parameters with ``sim_overrides`` on top — e.g. ``speed=4`` — mode, cap
    and 429 retries). Raises :class:`ScenarioError` for a scenario that replays a
    recording (nothing to send)."""
    if scenario.recording is not None:
        raise ScenarioError(f"{scenario.name}: replays a recording; it has no endpoint to run")
    ep = scenario.spec.endpoint
    run = scenario.spec.run
    return BenchOptions(
        questions=scenario.questions,
        titles=[q.title for q in scenario.question_set.questions],
        profile=ep.profile,
        sim_params={**ep.params, **sim_overrides},
        max_tokens=scenario.max_tokens,
        mode=run.mode,
        retry_429=run.retry_429,
        template=scenario.question_set.template or CombinedTemplate(),
        context=scenario.question_set.context,
    )
