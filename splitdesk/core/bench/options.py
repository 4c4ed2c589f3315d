"""What ``splitdesk bench`` (and ``splitdesk sweep``) was asked to do: the options of one
session and the modes they run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from splitdesk.core.analyse.cost import Prices
from splitdesk.core.measure.client_pattern import ClientPattern
from splitdesk.core.measure.runner import RunConfig, Timeouts
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.providers.base import EndpointConfig

BUILTIN = "builtin"


@dataclass
class BenchOptions:
    """What ``splitdesk bench`` was asked to do (see ``splitdesk bench --help``)."""

    questions: list[str]
    #: Each question's short label (the set's ``title``; ``""``: derived when shown), kept
    #: in a ``--record`` recording so its replay names panes and lanes as the window does.
    titles: list[str] = field(default_factory=list)
    endpoint: str = BUILTIN
    api: str = "openai-chat"
    model: str | None = None
    profile: str = "batching"
    sim_params: dict[str, Any] = field(default_factory=dict)
    max_tokens: int | None = 512
    mode: str = "all"
    repeat: int = 1
    json_path: str | None = None
    record_path: str | None = None  #: ``--record FILE``: save every run as a recording
    api_key_env: str | None = None
    temperature: float | None = None
    seed: int | None = None
    timeouts: Timeouts = field(default_factory=Timeouts)
    retry_429: int = 0
    verify: bool | str = True
    template: CombinedTemplate = field(default_factory=CombinedTemplate)
    #: ``--cold`` / ``--release``: the client's pattern
    #: (:mod:`splitdesk.core.measure.client_pattern`)
    client: ClientPattern = field(default_factory=ClientPattern)
    #: ``--price-in``/``--price-out``: per million tokens (no default: no cost without them)
    prices: Prices | None = None
    #: ``--warmup``/``--pause``/``--nonce`` (:mod:`splitdesk.core.bench.repeats`); ``nonce``
    #: ``None``: on when ``repeat`` > 1
    warmup: int = 0
    pause_s: float = 0.0
    nonce: bool | None = None
    #: ``--context FILE`` or the question set's: the shared context (``""``: none)
    context: str = ""

    @property
    def nonce_on(self) -> bool:
        """Whether every run's prompts open with a nonce: by default when repeating, and
        whenever there is a shared context (each run, and each side, must prefill the
        document itself: :func:`splitdesk.core.bench.repeats.with_nonce`)."""
        if self.nonce is None:
            return self.repeat > 1 or bool(self.context.strip())
        return self.nonce

    def run_config(self, endpoint: EndpointConfig) -> RunConfig:
        """How every run of these options sends to ``endpoint`` (bench and sweep)."""
        return RunConfig(
            endpoint,
            temperature=self.temperature,
            seed=self.seed,
            timeouts=self.timeouts,
            marker=self.template.marker,
            retry_429=self.retry_429,
            warm_connections=not self.client.cold,
            release=self.client.release,
        )


def modes_of(mode: str) -> list[str]:
    """The single-group modes a ``--mode`` value runs, in order (``dependent``: the
    combined request, then the chain of :mod:`splitdesk.core.run.plans`)."""
    if mode == "dependent":
        return ["combined", "chain"]
    if mode == "one-after-another":
        return ["combined", "parallel"]
    return ["combined", "parallel", "sequential"] if mode == "all" else [mode]
