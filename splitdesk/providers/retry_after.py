"""How long a server asked the client to wait: ``Retry-After`` in both its forms, and the
cap every wait is held to.

``Retry-After`` (RFC 9110 §10.2.3, https://www.rfc-editor.org/rfc/rfc9110#section-10.2.3)
is either *delay-seconds* (a non-negative integer; decimals are read too, as servers send
them) or an *HTTP-date* (§5.6.7: IMF-fixdate ``Sun, 06 Nov 1994 08:49:37 GMT``, or the
obsolete RFC 850 and asctime forms a recipient must accept; ``email.utils`` parses all
three). Azure OpenAI also sends ``retry-after-ms``, which is more precise and wins.

Every wait is finite and at most :data:`MAX_RETRY_AFTER_S`: a header of ``inf``,
``1e999`` or a date a year away would otherwise put ``Infinity`` into the bench JSON (not
JSON) or make a retrying run sleep for ever. A capped wait says so in the message
(:func:`retry_hint`).
"""

from __future__ import annotations

import datetime
import email.utils
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

#: The longest wait splitdesk obeys (seconds). Hosted APIs ask for seconds to a minute;
#: longer requests (a daily quota's reset) are capped here so a run ends in time.
MAX_RETRY_AFTER_S = 600.0


@dataclass(frozen=True)
class RetryAfter:
    """A server's wait request. ``seconds``: what splitdesk waits (finite, 0 …
    :data:`MAX_RETRY_AFTER_S`); ``asked_s``: what the header said, in seconds (may be
    ``inf``); ``capped``: ``seconds`` is less than it."""

    seconds: float
    asked_s: float
    capped: bool = False


def capped_wait(asked_s: float) -> RetryAfter:
    """``asked_s`` held to 0 … :data:`MAX_RETRY_AFTER_S` (NaN counts as no wait)."""
    if math.isnan(asked_s) or asked_s <= 0:
        return RetryAfter(0.0, 0.0 if math.isnan(asked_s) else asked_s)
    if asked_s > MAX_RETRY_AFTER_S:
        return RetryAfter(MAX_RETRY_AFTER_S, asked_s, capped=True)
    return RetryAfter(asked_s, asked_s)


def parse_retry_after(
    headers: Mapping[str, str], now: Callable[[], float] = time.time
) -> RetryAfter | None:
    """The wait ``headers`` ask for (``retry-after-ms``, else ``Retry-After`` in seconds or
    as an HTTP-date, measured from ``now()``, Unix seconds), capped; ``None`` when neither
    header is there or readable. RFC 9110 §10.2.3 allows an HTTP-date or whole seconds;
    fractions and ``inf`` are read too (capped), but ``nan`` is no wait at all: it is
    unreadable, like ``soon``, and the client's own back-off applies (a NaN once made a
    retry go at once, hammering the server that asked it to wait)."""
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            seconds = float(ms) / 1000.0
        except ValueError:
            seconds = math.nan
        if not math.isnan(seconds):  # "nan" is no number of seconds: unreadable, as "soon"
            return capped_wait(seconds)
    value = headers.get("retry-after")
    if value is None:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not math.isnan(seconds):
        return capped_wait(seconds)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:  # asctime has no zone: HTTP dates are GMT (RFC 9110 §5.6.7)
        when = when.replace(tzinfo=datetime.UTC)
    return capped_wait(when.timestamp() - now())


def retry_hint(wait: RetryAfter | None) -> str:
    """The words a 429 message ends with: ``rate limited; retry after 2 s``, and when the
    wait was capped, what the server asked and the cap."""
    if wait is None:
        return "rate limited"
    if wait.capped:
        asked = "for ever" if math.isinf(wait.asked_s) else f"after {wait.asked_s:.0f} s"
        return (
            f"rate limited; the server asked to retry {asked}, "
            f"capped at {wait.seconds:g} s (splitdesk's longest wait)"
        )
    return f"rate limited; retry after {wait.seconds:g} s"
