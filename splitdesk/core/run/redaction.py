"""Redaction: API keys and credentials out of every text a user, a log or a file sees.

Error messages, URLs shown in the window and recordings' endpoint URLs pass through
:func:`redact` before they leave the engine. Hand-written (regular expressions over the
message text) because the texts are free-form error messages from several libraries, not
a format a parser could read.
"""

from __future__ import annotations

from collections.abc import Iterable

from splitdesk.logs import scrub_url_credentials

#: Shortest start of a secret that :func:`redact` removes where a message was clipped.
_MIN_SECRET_PREFIX = 6


def redact(text: str, secret: str | Iterable[str] | None) -> str:
    """``text`` with ``secret`` (one, or several: an endpoint's
    :attr:`~splitdesk.providers.base.EndpointConfig.secrets`), credential-looking URL query
    values and passwords in URLs (``http://user:pass@host``) replaced by ``***``.

    Error messages are clipped (to 120 or 300 characters) before they reach here, so a key
    a server echoed can end up cut in two: its start, at the end of the text or just before
    the clip's ``…``, is replaced too. So is the key as ``repr`` writes it (``\n`` escaped),
    as some library errors quote header values.
    """
    text = scrub_url_credentials(text)
    if secret is not None and not isinstance(secret, str):
        for one in sorted(secret, key=len, reverse=True):  # a longer one holding a shorter
            text = _redact_one(text, one)
    else:
        text = _redact_one(text, secret)
    return text


def _redact_one(text: str, secret: str | None) -> str:
    """``text`` with ``secret``, whole or clipped (:func:`redact`), replaced by ``***``."""
    if secret:
        for form in {secret, secret.strip(), repr(secret)[1:-1]}:
            if form:
                text = text.replace(form, "***")
        secret = secret.strip()
        for n in range(len(secret) - 1, _MIN_SECRET_PREFIX - 1, -1):
            head = secret[:n]
            if head + "…" in text:
                text = text.replace(head + "…", "***…")
            if text.endswith(head):
                text = text[: len(text) - n] + "***"
    return text
