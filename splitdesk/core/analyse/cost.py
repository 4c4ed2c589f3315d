"""Tokens and cost per side, from the servers' own usage counts.

The one definition of a side's tokens and cost (views, bench and exports read these):

* **prompt tokens** of a side: the sum of ``usage.prompt_tokens`` (or the dialect's
  equivalent, ``RequestTrace.usage_prompt_tokens``) over its requests. The combined prompt
  carries the template once; the N parallel prompts each carry any system prompt, so the
  parallel side may use more prompt tokens;
* **cached prompt tokens**: the part of the prompt tokens the server read from its prefix
  cache (``RequestTrace.usage_cached_prompt_tokens``; 0 for a request that reported none);
* **output tokens**: the side's output tokens as the figure set counts them
  (:func:`splitdesk.core.analyse.metrics.group_metrics`: each request's reported usage, an
  event count standing in where none was reported): one count per side, the same in the
  bench table's tokens column, the summary and the cost lines;
* **cost** (in the price's currency): ``(prompt − cached) × input_price / 1e6 + cached ×
  cached_input_price / 1e6 + output × output_price / 1e6``, prices being per million
  tokens as providers list them (cached input is billed at its own, lower price:
  OpenAI's "cached input", Anthropic's cache reads; without a cached price, cached tokens
  cost the input price). There are no default prices: a cost exists only when the user
  entered both prices for the endpoint. Anthropic also bills cache *writes* above the
  input price; that surcharge is not modelled.

A side whose requests did not all report usage has ``complete = False`` and no cost: the
figure would be a guess. The trade-off line (:func:`tradeoff_line`) compares the speed-up
with the parallel side's total tokens over the combined side's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from splitdesk.core.analyse.metrics import group_metrics
from splitdesk.core.run.run_state import RequestTrace


class Prices(BaseModel):
    """Prices per million tokens, entered by the user for one endpoint (any currency)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    input_per_m: float = Field(ge=0, description="price of one million prompt tokens")
    output_per_m: float = Field(ge=0, description="price of one million output tokens")
    cached_input_per_m: float | None = Field(
        None, ge=0, description="price of one million prompt tokens read from the cache"
    )

    @property
    def cached_price(self) -> float:
        """The price of a million cached prompt tokens (the input price when none given)."""
        return self.input_per_m if self.cached_input_per_m is None else self.cached_input_per_m


@dataclass(frozen=True)
class SideTokens:
    """Usage of one side (``"combined"``, ``"parallel"`` or ``"sequential"``): ``prompt``
    tokens summed over the ``requests`` that reported usage and their ``cached`` part,
    ``output`` tokens as the figure set counts them (module docstring; ``estimated`` when
    an event count stood in for some request's usage); ``complete`` when every request of
    the side reported usage."""

    group: str
    prompt: int
    output: int
    requests: int
    reported: int
    cached: int = 0
    estimated: bool = False

    @property
    def complete(self) -> bool:
        return self.requests > 0 and self.reported == self.requests

    @property
    def total(self) -> int:
        """Prompt + output tokens."""
        return self.prompt + self.output

    def cost(self, prices: Prices | None) -> float | None:
        """The side's cost at ``prices`` (module docstring); ``None`` without prices or
        when some request reported no usage."""
        if prices is None or not self.complete:
            return None
        fresh = self.prompt - self.cached
        return (
            fresh * prices.input_per_m / 1e6
            + self.cached * prices.cached_price / 1e6
            + self.output * prices.output_per_m / 1e6
        )


def side_tokens(requests: Sequence[RequestTrace], group: str) -> SideTokens:
    """The :class:`SideTokens` of ``group`` among ``requests`` (a run's traces)."""
    mine = [t for t in requests if t.group == group]
    reported = [
        t for t in mine if t.usage_prompt_tokens is not None and t.usage_output_tokens is not None
    ]
    n = len({q for t in mine for q in t.questions})
    g = group_metrics(mine, group, n)  # the one output-token count of a side
    return SideTokens(
        group,
        sum(t.usage_prompt_tokens or 0 for t in reported),
        g.output_tokens,
        len(mine),
        len(reported),
        sum(t.usage_cached_prompt_tokens or 0 for t in reported),
        g.tokens_estimated,
    )


def token_ratio(combined: SideTokens, parallel: SideTokens) -> float | None:
    """Parallel total tokens / combined total tokens; ``None`` unless both are complete."""
    if not (combined.complete and parallel.complete) or combined.total == 0:
        return None
    return parallel.total / combined.total


def tradeoff_line(speedup: float | None, ratio: float | None) -> str | None:
    """``"4.5× faster, 1.3× the tokens"`` (parallel against combined), ``None`` when either
    figure is unknown. A speed-up below 1 reads ``"0.8× as fast"``."""
    if speedup is None or ratio is None:
        return None
    speed = f"{speedup:.1f}× faster" if speedup >= 1 else f"{speedup:.1f}× as fast"
    return f"{speed}, {ratio:.1f}× the tokens"


#: the most decimals a cost is printed with (a millionth of a cent still shows)
MAX_COST_DECIMALS = 10


def format_costs(costs: Sequence[float]) -> list[str]:
    """The costs of the sides, formatted alike: every view prints costs with this one
    function (the bench table, the window's summary). Enough decimals that the smallest
    cost shows three significant digits and that two costs that differ never print the
    same (0.000427 and 0.000405, not 0.0004 twice), at most :data:`MAX_COST_DECIMALS`;
    at least two (``12.50``). ``[]`` for no costs."""
    if not costs:
        return []
    small = min((abs(c) for c in costs if c), default=1.0)
    decimals = min(MAX_COST_DECIMALS, max(2, 2 - math.floor(math.log10(small))))

    def distinct(d: int) -> bool:
        shown = {f"{c:.{d}f}" for c in costs}
        return len(shown) == len(set(costs))

    while decimals < MAX_COST_DECIMALS and not distinct(decimals):
        decimals += 1
    return [f"{c:.{decimals}f}" for c in costs]


def cost_document(
    runs: Sequence[Sequence[RequestTrace]], prices: Prices | None, summary: dict[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    """The bench JSON's ``cost`` object and its table lines, from the first repeat's runs
    (``runs``: each run's traces; usage is the same work every repeat). ``summary``: the
    bench summary (its ``speedup`` makes the trade-off line).

    ``{"prices": {"input_per_m", "output_per_m", "cached_input_per_m"} | null, "sides":
    {group: {"prompt_tokens", "cached_prompt_tokens", "output_tokens", "complete",
    "cost"}}, "token_ratio", "tradeoff"}``.
    """
    requests = [t for run in runs for t in run]
    sides = {g: side_tokens(requests, g) for g in ("combined", "parallel", "sequential")}
    sides = {g: s for g, s in sides.items() if s.requests}
    ratio = (
        token_ratio(sides["combined"], sides["parallel"])
        if "combined" in sides and "parallel" in sides
        else None
    )
    tradeoff = tradeoff_line(summary.get("speedup"), ratio)
    doc = {
        "prices": prices.model_dump() if prices else None,
        "sides": {
            g: {
                "prompt_tokens": s.prompt,
                "cached_prompt_tokens": s.cached,
                "output_tokens": s.output,
                "complete": s.complete,
                "cost": s.cost(prices),
            }
            for g, s in sides.items()
        },
        "token_ratio": None if ratio is None else round(ratio, 4),
        "tradeoff": tradeoff,
    }
    lines = []
    costs = {g: c for g, s in sides.items() if (c := s.cost(prices)) is not None}
    shown = dict(zip(costs, format_costs(list(costs.values())), strict=True))
    for g, s in sides.items():
        cached = f" ({s.cached} cached)" if s.cached else ""
        output = f"{'~' if s.estimated else ''}{s.output}"
        usage = f"{s.prompt} prompt{cached} + {output} output tokens"
        if not s.complete:
            usage += f" (usage from {s.reported} of {s.requests} requests)"
        money = f" · cost {shown[g]}" if g in shown else ""
        lines.append(f"{'Tokens ' + g + ':':22}{usage}{money}")
    if tradeoff:
        lines.append(f"{'Trade-off:':22}{tradeoff}")
    return doc, lines
