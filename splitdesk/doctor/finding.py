"""One finding of ``splitdesk doctor``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Status = Literal["ok", "note", "problem"]


@dataclass(frozen=True)
class Finding:
    """One checked thing: ``area`` (short label), ``status``, what was found, and for a
    note or a problem the fix a user can apply."""

    area: str
    status: Status
    detail: str
    fix: str | None = None
