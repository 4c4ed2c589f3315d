"""Checks of the URLs a user types (base URLs of endpoints), before anything is sent."""

from __future__ import annotations

from urllib.parse import urlsplit


def check_url(url: str) -> None:
    """Raise ``ValueError`` naming the problem when ``url`` is not a usable http(s) URL
    (no scheme, no host, a port outside 1–65535, a broken IPv6 literal)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise ValueError("the URL must start with http:// or https://")
    if not parts.hostname:
        raise ValueError("the URL has no host")
    port = parts.port  # raises ValueError when out of range
    if port == 0:
        raise ValueError("port 0 is not a server port")
