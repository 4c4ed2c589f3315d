"""Checks of the URLs a user types (base URLs of endpoints), before anything is sent."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

import httpx

from splitdesk.providers import get_provider
from splitdesk.providers.base import EndpointConfig, GenParams


def check_url(url: str) -> None:
    """Raise ``ValueError`` naming the problem when ``url`` is not a usable http(s) URL
    (no scheme, no host, a port outside 1–65535, a broken IPv6 literal, or anything else
    httpx cannot send to, such as a space in the host)."""
    parts = urlsplit(url)  # raises ValueError for a broken IPv6 literal ("[::1/v1")
    if parts.scheme not in ("http", "https"):
        raise ValueError("the URL must start with http:// or https://")
    if not parts.hostname:
        raise ValueError("the URL has no host")
    port = parts.port  # raises ValueError when out of range
    if port == 0:
        raise ValueError("port 0 is not a server port")
    try:
        httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise ValueError(str(exc)) from None


def _tail(url: str, base_path: str) -> str:
    path = urlsplit(url).path
    return path[len(base_path) :] if path.startswith(base_path) else path


def base_url_fix(base_url: str, api: str) -> str | None:
    """The base URL to use instead of ``base_url`` when it already holds a path the
    ``api`` dialect's client appends itself — a URL pasted with its full path
    (``…/v1/chat/completions``, ``…/api/chat``, ``…/v1/models``) or doubling ``/v1``
    (``…/v1/v1``, or Anthropic's ``…/v1`` before its own ``/v1/messages``) — else
    ``None``. Only such doubled paths are named, which no server serves, so a base URL
    with an unusual but real path is never refused. Raises ``ValueError`` for an unknown
    dialect or a URL :func:`check_url` refuses."""
    provider = get_provider(api)
    parts = urlsplit(base_url)
    path = parts.path.rstrip("/")
    root = urlunsplit(parts._replace(path=path, query="", fragment=""))
    endpoint = EndpointConfig(root, api, "m")
    appended = [
        _tail(provider.build_request(endpoint, "x", GenParams()).url, path),
        _tail(provider.models_request(endpoint).url, path),
    ]
    fixed = path
    for suffix in sorted({a for a in appended if a.strip("/")}, key=len, reverse=True):
        if fixed.lower().endswith(suffix.lower()):
            fixed = fixed[: -len(suffix)]
            break
    adds_v1 = appended[0].startswith("/v1/")
    while fixed.lower().endswith("/v1/v1") or (adds_v1 and fixed.lower().endswith("/v1")):
        fixed = fixed[:-3]
    if fixed == path:
        return None
    return urlunsplit(parts._replace(path=fixed))


def base_url_problem(base_url: str, api: str) -> str | None:
    """One line naming the fix when :func:`base_url_fix` finds one (``the base URL ends
    in /chat/completions, which the openai-chat client adds itself: use
    http://host:8000/v1``), else ``None``."""
    try:
        fixed = base_url_fix(base_url, api)
    except ValueError:
        return None
    if fixed is None:
        return None
    path = urlsplit(base_url).path.rstrip("/")
    extra = path[len(urlsplit(fixed).path) :]
    if extra.lower() == "/v1" and path.lower().endswith("/v1/v1"):
        return f"the base URL repeats /v1: use {fixed} as the base URL"
    return (
        f"the base URL ends in {extra}, which the {api} client adds itself: use {fixed} "
        "as the base URL"
    )
