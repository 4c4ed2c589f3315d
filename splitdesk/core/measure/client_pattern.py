"""How the client sends a phase's requests: splitdesk's measuring pattern or a plain script's.

By default splitdesk opens every connection before a phase (``RunConfig.warm_connections``)
and releases the phase's N requests from one barrier, so TTFT measures the server. A plain
script opens its connections inside the timed phase and sends each request when its event
loop gets to it. On a real continuous-batching server the two differed by up to ~20 % on
the parallel side (issue 12), so the pattern is a visible, recorded choice:

* ``cold``: connections opened inside the timed phase (each request's ``connect_s`` then
  counts in its TTFT and makespan); warm otherwise;
* ``release``: ``"barrier"`` — every request is built first, then all are sent together;
  ``"as-scheduled"`` — each request task builds and sends its request as soon as the event
  loop runs it (one after another within microseconds to milliseconds, as a script's
  ``asyncio.gather`` does).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Release = Literal["barrier", "as-scheduled"]
RELEASES: tuple[Release, ...] = ("barrier", "as-scheduled")


@dataclass(frozen=True)
class ClientPattern:
    """The client's pattern (module docstring)."""

    cold: bool = False
    release: Release = "barrier"

    def to_json(self) -> dict[str, str]:
        """``{"connections": "warm"|"cold", "release": "barrier"|"as-scheduled"}`` (bench
        JSON ``client``, sweep JSON ``client``)."""
        return {"connections": "cold" if self.cold else "warm", "release": self.release}

    def short(self) -> str:
        """``"warm · barrier"``, ``"cold · as scheduled"`` … (the window's summary line)."""
        conn = "cold" if self.cold else "warm"
        return f"{conn} · {self.release.replace('-', ' ')}"

    def describe(self) -> str:
        """One line for tables and the summary, e.g. ``"client: warm connections, released
        together from one barrier (splitdesk's default)"``."""
        conn = (
            "cold connections (opened inside the timed phase)" if self.cold else "warm connections"
        )
        rel = (
            "released together from one barrier"
            if self.release == "barrier"
            else "sent as the event loop schedules them"
        )
        if self == ClientPattern():
            return f"client: {conn}, {rel} (splitdesk's default)"
        if self == ClientPattern(cold=True, release="as-scheduled"):
            return f"client: {conn}, {rel} (like a plain script)"
        return f"client: {conn}, {rel}"
