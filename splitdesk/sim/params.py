"""Parameters and named profiles of the built-in endpoint.

Every number the simulated server uses lives in :class:`SimParams`, so a profile is just a
set of overrides and every parameter can be changed from the command line
(``splitdesk sim --t-seq 0.002``) or from Python (``SimParams.for_profile("batching",
speed=4)``).

Times are seconds, lengths are tokens. The cost model these feed is documented in
:mod:`splitdesk.sim.costmodel`.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from splitdesk.builtin_endpoint import DEFAULT_PROFILE as DEFAULT_PROFILE


class SimParams(BaseModel):
    """Everything that shapes the built-in endpoint's timing and text.

    Every number is finite (``allow_inf_nan=False``) and bounded on both sides; the upper
    bounds keep the endpoint a model of a real server (a decode step of 10 s, a round trip
    of a minute) and a run within minutes, so ``rtt=inf`` or ``retry_after=1e9`` are
    refused at once instead of hanging a run. The bounds live here and only here: the
    command line (``splitdesk sim``, ``bench --sim-param``) and the window read them.
    Raises ``pydantic.ValidationError`` for a value out of range.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    # -- continuous-batching cost model (seconds) ---------------------------------------
    t_base: float = Field(
        0.0172, ge=0, le=10, description="fixed cost of one decode step (s, at most 10)"
    )
    t_seq: float = Field(
        0.0002, ge=0, le=1, description="added step cost per running sequence (s, at most 1)"
    )
    t_ctx: float = Field(
        2e-7,
        ge=0,
        le=1e-3,
        description="added step cost per context token held by running sequences (s, at most "
        "0.001)",
    )
    t_prefill: float = Field(
        4e-5,
        ge=0,
        le=0.1,
        description="prefill cost per prompt token, paid in the step a sequence joins (s, at "
        "most 0.1)",
    )
    max_num_seqs: int = Field(
        64, ge=1, le=4096, description="most sequences decoded in one step; the rest queue FIFO"
    )
    max_num_batched_tokens: int = Field(
        2048,
        ge=0,
        description=(
            "most tokens one step processes, decodes first, then prefill chunks (vLLM's and "
            "SGLang's chunked prefill); a longer prefill is split over steps (0: no limit)"
        ),
    )
    prefix_cache: bool = Field(
        False,
        description=(
            "keep prompt blocks for later requests (vLLM's automatic prefix caching, "
            "SGLang's RadixAttention): on/off"
        ),
    )
    prefix_cache_tokens: int = Field(
        1_048_576, ge=16, description="most prompt tokens the prefix cache holds (LRU)"
    )
    jitter: float = Field(
        0.02, ge=0, le=0.5, description="relative standard deviation of each step's time (seeded)"
    )
    seed: int = Field(0, ge=0, le=2**32 - 1, description="seed of the step-time jitter")
    tokens_per_step: int = Field(
        1,
        ge=1,
        le=16,
        description="tokens emitted per sequence per step, in one event (speculative decoding)",
    )
    speed: float = Field(
        1.0,
        ge=0.01,
        le=100,
        description="time scale: 2 makes every duration half as long (0.01-100)",
    )
    # -- network and API limits -------------------------------------------------------
    rtt: float = Field(
        0.0, ge=0, le=60, description="added network round trip per request (s, at most 60)"
    )
    rate_limit_concurrency: int = Field(
        0,
        ge=0,
        le=100_000,
        description="answer HTTP 429 above this many concurrent requests (0: no limit)",
    )
    retry_after: float = Field(
        1.0,
        ge=0,
        le=600,
        description="Retry-After sent with a 429 (s, at most 600: the longest wait "
        "splitdesk's client obeys)",
    )
    # -- text ------------------------------------------------------------------------------
    answer_tokens: int = Field(
        120, ge=1, le=20000, description="mean answer length per question (tokens)"
    )
    answer_spread: float = Field(
        0.3, ge=0, le=0.9, description="answer length varies by ± this fraction, per question"
    )
    combined_compression: float = Field(
        1.0, gt=0, le=1, description="each answer inside a combined reply is this fraction as long"
    )
    model: str = Field(
        "splitdesk-sim", min_length=1, max_length=200, description="model name served"
    )

    @classmethod
    def for_profile(cls, name: str, **overrides: Any) -> SimParams:
        """The parameters of profile ``name`` with ``overrides`` applied.

        Raises ``KeyError`` for an unknown profile name and ``pydantic.ValidationError`` for a
        bad override.
        """
        if name not in PROFILES:
            raise KeyError(f"unknown profile {name!r}; known: {', '.join(PROFILES)}")
        values: dict[str, Any] = dict(PROFILES[name].overrides)
        values.update(overrides)
        return cls(**values)

    @classmethod
    def checked(cls, profile: str, overrides: dict[str, Any]) -> SimParams:
        """Like :meth:`for_profile`, but every problem is a one-line ``ValueError``
        (``unknown simulator parameter 'x'``, ``t_base: Input should be ≥ 0``)."""
        for name in overrides:
            if name not in cls.model_fields:
                raise ValueError(f"unknown simulator parameter {name!r}")
        try:
            return cls.for_profile(profile, **overrides)
        except KeyError as exc:
            raise ValueError(str(exc.args[0])) from None
        except ValidationError as exc:
            err = exc.errors()[0]
            name = str(err["loc"][0]) if err["loc"] else "?"
            field = cls.model_fields.get(name)
            what = f" — {field.description}" if field is not None and field.description else ""
            got = overrides.get(name, err.get("input"))
            raise ValueError(f"{name}: {err['msg']} (got {got!r}){what}") from None

    def scaled(self, seconds: float) -> float:
        """``seconds`` of model time as wall-clock seconds under :attr:`speed`."""
        return seconds / self.speed


class Profile(BaseModel):
    """A named set of parameter overrides, with the story it tells."""

    model_config = ConfigDict(frozen=True)

    name: str
    summary: str
    overrides: dict[str, Any]


PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile(
            name="batching",
            summary=(
                "A vLLM-like GPU server with continuous batching: ~57 tok/s per stream, "
                "extra sequences in a step nearly free. N parallel requests finish ~N× sooner."
            ),
            overrides={},
        ),
        Profile(
            name="single-slot",
            summary=(
                "One sequence at a time (max_num_seqs 1, like llama.cpp with one slot): "
                "parallel requests queue behind each other, so there is no speed-up."
            ),
            overrides={"max_num_seqs": 1},
        ),
        Profile(
            name="rate-limited",
            summary=(
                "A hosted API that answers HTTP 429 with Retry-After above 2 concurrent "
                "requests: most of the parallel requests are refused."
            ),
            overrides={"rate_limit_concurrency": 2, "retry_after": 2.0},
        ),
        Profile(
            name="slow-network",
            summary=(
                "A far-away endpoint: 1.2 s added round trip and short answers, so network "
                "latency dominates generation time and the speed-up shrinks."
            ),
            overrides={"rtt": 1.2, "answer_tokens": 40},
        ),
        Profile(
            name="compute-bound",
            summary=(
                "Per-sequence cost dominates each step (a saturated or CPU-only server): "
                "batching buys little, the speed-up is small."
            ),
            # prefill is compute too: 0.3 ms a prompt token (~3,300 tok/s), 47× cheaper
            # than a decode row, as batched matrix products beat one token at a time
            overrides={"t_base": 0.003, "t_seq": 0.0142, "t_prefill": 0.0003},
        ),
    )
}

if DEFAULT_PROFILE not in PROFILES:  # the name lives in splitdesk.builtin_endpoint
    raise RuntimeError(f"the default profile {DEFAULT_PROFILE!r} is not defined")
