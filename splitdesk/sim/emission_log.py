"""The built-in endpoint's record of when it sent each token event: the ground truth that
measurement-fidelity tests and benchmarks compare a client's timestamps with.

Times are ``time.perf_counter_ns()`` (``CLOCK_MONOTONIC`` on Linux, comparable across
processes on one machine). The log keeps the newest ``capacity`` requests.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

#: How much of each prompt the log keeps (characters).
PROMPT_HEAD_CHARS = 80


@dataclass
class RequestRecord:
    """One request as the server saw it.

    ``events``: ``[scheduled_ns, emitted_ns, tokens]`` per token event delivered: when the
    cost model scheduled the step's end and when the bytes were handed to the socket.
    ``sent_text``: the text of those events, in order; ``sent_bytes``: the response body's
    bytes handed to the socket (before HTTP chunk framing). ``fault``: the injected fault
    (``NAME[:ARG]``, see :mod:`splitdesk.sim.faults`), or ``None``.
    """

    id: str
    api: str
    received_ns: int
    status: int = 200
    headers_ns: int | None = None
    prompt_tokens: int = 0
    output_tokens: int = 0
    finish_reason: str | None = None
    disconnected: bool = False
    events: list[list[int]] = field(default_factory=list)
    fault: str | None = None
    sent_text: list[str] = field(default_factory=list)
    sent_bytes: int = 0
    prompt_head: str = ""

    @property
    def sent_tokens(self) -> int:
        """Tokens of the events delivered so far."""
        return sum(n for _, _, n in self.events)

    def delivered(self, text: str, nbytes: int) -> None:
        """Note one token event written to the client: its ``text`` and ``nbytes`` bytes."""
        self.sent_text.append(text)
        self.sent_bytes += nbytes

    def to_json(self) -> dict[str, Any]:
        """JSON form served at ``GET /_splitdesk/trace/{id}``."""
        return {
            "id": self.id,
            "api": self.api,
            "status": self.status,
            "received_ns": self.received_ns,
            "headers_ns": self.headers_ns,
            "prompt_tokens": self.prompt_tokens,
            "output_tokens": self.output_tokens,
            "finish_reason": self.finish_reason,
            "disconnected": self.disconnected,
            "fault": self.fault,
            "sent_text": "".join(self.sent_text),
            "sent_tokens": self.sent_tokens,
            "sent_events": len(self.events),
            "sent_bytes": self.sent_bytes,
            "prompt_head": self.prompt_head,
            "events": [
                {"scheduled_ns": s, "emitted_ns": e, "tokens": n} for s, e, n in self.events
            ],
        }


class EmissionLog:
    """Bounded map of request id → :class:`RequestRecord` (oldest dropped first)."""

    def __init__(self, capacity: int = 4096) -> None:
        self.capacity = capacity
        self._records: OrderedDict[str, RequestRecord] = OrderedDict()

    def open(self, record: RequestRecord) -> RequestRecord:
        """Add ``record``; drops the oldest when full. Returns ``record``."""
        self._records[record.id] = record
        while len(self._records) > self.capacity:
            self._records.popitem(last=False)
        return record

    def get(self, request_id: str) -> RequestRecord | None:
        """The record of ``request_id``, or ``None`` when unknown or already dropped."""
        return self._records.get(request_id)

    def __len__(self) -> int:
        return len(self._records)
