"""The ``splitdesk bench --json`` contract of DESIGN.md as a pydantic schema: the keys
outside scripts rely on must be there with these types (more keys may be added)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)


class Endpoint(_Open):
    url: str
    api: str
    model: str


class Section(_Open):
    question: int
    start_s: float
    end_s: float | None


class Error(_Open):
    kind: Literal["http", "timeout", "connect", "protocol", "server"]
    status: int | None
    message: str


class Request(_Open):
    questions: list[int]
    t_send_s: float | None
    ttfb_s: float | None
    ttft_s: float | None
    e2e_s: float | None
    output_tokens: int
    tokens_source: Literal["usage", "events"]
    text: str
    reasoning_text: str
    event_times_s: list[float]
    sections: list[Section]
    error: Error | None


class Run(_Open):
    mode: Literal["combined", "parallel", "sequential", "chain"]
    repeat: int
    wall_s: float | None
    requests: list[Request]


class Diagnosis(_Open):
    code: Literal[
        "batching",
        "one-at-a-time",
        "rate-limited",
        "network-bound",
        "compute-bound",
        "shortened-answers",
        "no-markers",
        "failed",
        "chained",
        "unclear",
    ]
    text: str
    evidence: dict[str, float | int | str | None]


class Summary(_Open):
    speedup: float | None
    combined_wall_s: float | None = None
    parallel_wall_s: float | None = None
    diagnosis: Diagnosis
    prompt_shape_factor: float | None = None
    concurrency_factor: float | None = None


class BenchDocument(_Open):
    version: str
    endpoint: Endpoint
    questions: list[str]
    runs: list[Run]
    summary: Summary
