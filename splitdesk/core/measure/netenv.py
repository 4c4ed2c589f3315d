"""The network settings a user's environment imposes — proxies and CA certificates — checked
before anything is sent, so that a broken one gives one clear sentence instead of an
``ImportError`` from deep inside httpx or a misleading "certificate verify failed".

The environment's rules are httpx's own (``trust_env``): ``HTTP_PROXY``, ``HTTPS_PROXY``,
``ALL_PROXY`` and ``NO_PROXY`` (read through ``urllib.request.getproxies``, matched with
httpx's URL patterns), and ``SSL_CERT_FILE`` before ``SSL_CERT_DIR`` for TLS verification.
What goes wrong in practice, and what this module says:

* a ``socks5://`` (or ``socks5h://``) proxy while the ``socksio`` package (``httpx[socks]``)
  is not installed: httpx refuses to build *any* client, even for a host the proxy does
  not concern;
* a proxy URL whose scheme httpx does not know;
* ``SSL_CERT_FILE`` naming a file that does not exist or is not a CA bundle (httpx raises
  ``FileNotFoundError``), ``SSL_CERT_DIR`` naming a folder that does not exist (every TLS
  handshake then fails "certificate verify failed").

:func:`client_settings` gives the ``verify``/``trust_env``/``proxy`` arguments for a client
that talks to one base URL: the environment's own when they work, the parts that concern
this URL when an unrelated part is broken (a plain-http loopback endpoint keeps working
under a broken ``SSL_CERT_FILE`` or a SOCKS ``HTTPS_PROXY``), and
:class:`NetworkSetupError` when a broken part concerns this URL.
"""

from __future__ import annotations

import importlib.util
import os
import ssl
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx

# httpx's own reading of the proxy variables and its pattern matching (httpx is pinned)
from httpx._utils import URLPattern, get_environment_proxies

_KNOWN_PROXY_SCHEMES = ("http", "https", "socks5", "socks5h")


class NetworkSetupError(ValueError):
    """The environment's proxy or CA settings cannot work for this URL; the message says
    which variable, what is wrong with it and what to do."""


@dataclass(frozen=True)
class ClientSettings:
    """Arguments for ``httpx.AsyncClient`` talking to one base URL (see module docstring)."""

    verify: ssl.SSLContext
    trust_env: bool
    proxy: str | None


def _variable(scheme_key: str) -> str:
    """The variable a proxy mount came from: ``https://`` → ``HTTPS_PROXY`` (or its
    lower-case spelling when that is the one set)."""
    name = f"{scheme_key.split(':')[0]}_proxy"
    return name if os.environ.get(name) else name.upper()


def _proxies() -> dict[str, tuple[str, str] | None]:
    """httpx's environment proxies: mount pattern → (proxy URL, variable), None where
    ``NO_PROXY`` excludes a host."""
    return {
        key: (value, _variable(key)) if value else None
        for key, value in get_environment_proxies().items()
    }


def proxy_for(url: str) -> tuple[str, str] | None:
    """The proxy the environment sets for ``url`` and the variable it came from, or None
    (no proxy, or ``NO_PROXY`` excludes the host). httpx's precedence: the most specific
    matching pattern wins."""
    try:
        target = httpx.URL(url)
    except (httpx.InvalidURL, ValueError):
        return None  # the URL itself is wrong: its own check says so (core/urls.py)
    for pattern, found in sorted(
        ((URLPattern(k), v) for k, v in _proxies().items()), key=lambda kv: kv[0]
    ):
        if pattern.matches(target):
            return found
    return None


def _shown(proxy: str) -> str:
    """A proxy URL without its password."""
    parts = urlsplit(proxy)
    if parts.password:
        netloc = f"{parts.username}:***@{parts.hostname}" + (f":{parts.port}" if parts.port else "")
        return parts._replace(netloc=netloc).geturl()
    return proxy


def proxy_problem(proxy: str, variable: str) -> str | None:
    """Why ``proxy`` (from ``variable``) cannot work here, or None."""
    scheme = urlsplit(proxy).scheme.lower()
    if scheme not in _KNOWN_PROXY_SCHEMES:
        return (
            f"{variable}={_shown(proxy)}: httpx cannot use a '{scheme}' proxy "
            f"(it knows {', '.join(_KNOWN_PROXY_SCHEMES)}) — fix or unset {variable}"
        )
    if scheme.startswith("socks") and importlib.util.find_spec("socksio") is None:
        return (
            f"{variable}={_shown(proxy)} is a SOCKS proxy, which needs the 'socksio' package "
            "(pip install 'httpx[socks]'), not installed here — install it, unset "
            f"{variable}, or add this host to NO_PROXY"
        )
    return None


def _unrelated_proxy_problem() -> bool:
    return any(found and proxy_problem(*found) for found in _proxies().values())


def tls_problem() -> str | None:
    """Why the environment's CA settings (``SSL_CERT_FILE``, else ``SSL_CERT_DIR``) cannot
    verify anything, or None. Reads the file system (a ``stat``)."""
    env = os.environ
    cert_file, cert_dir = env.get("SSL_CERT_FILE"), env.get("SSL_CERT_DIR")
    if cert_file:
        if not os.path.exists(cert_file):
            return (
                f"SSL_CERT_FILE={cert_file} does not exist, so no TLS certificate can be "
                "verified — point it at a CA bundle (PEM) or unset it"
            )
        if not os.path.isfile(cert_file):
            return f"SSL_CERT_FILE={cert_file} is not a file — point it at a CA bundle (PEM)"
        return None
    if cert_dir and not os.path.isdir(cert_dir):
        return (
            f"SSL_CERT_DIR={cert_dir} does not exist, so no TLS certificate can be verified — "
            "point it at a folder of CA certificates or unset it"
        )
    return None


def _context(verify: bool | str, use_env: bool) -> ssl.SSLContext:
    if isinstance(verify, str):
        try:
            if os.path.isdir(verify):
                return ssl.create_default_context(capath=verify)
            return ssl.create_default_context(cafile=verify)
        except (OSError, ssl.SSLError) as exc:
            raise NetworkSetupError(f"cannot use CA bundle {verify}: {exc}") from None
    try:
        return httpx.create_ssl_context(verify=verify, trust_env=use_env)
    except (OSError, ssl.SSLError) as exc:
        where = os.environ.get("SSL_CERT_FILE") or os.environ.get("SSL_CERT_DIR") or "?"
        raise NetworkSetupError(
            f"the CA certificates named by the environment ({where}) cannot be used: {exc}"
        ) from None


def client_settings(url: str, verify: bool | str = True) -> ClientSettings:
    """``verify``/``trust_env``/``proxy`` for a client of ``url`` (its base URL). Reads the
    file system: call off the GUI thread. Raises :class:`NetworkSetupError` when the
    environment's proxy for ``url``, or its CA settings while ``url`` needs TLS, cannot
    work; a problem that does not concern ``url`` is left out of its client."""
    chosen = proxy_for(url)
    if chosen is not None:
        problem = proxy_problem(*chosen)
        if problem:
            raise NetworkSetupError(problem)
    try:
        scheme = urlsplit(url).scheme.lower()
    except ValueError:
        scheme = ""
    needs_tls = scheme == "https" or (chosen is not None and chosen[0].startswith("https:"))
    tls = tls_problem() if verify is True else None
    if tls and needs_tls:
        raise NetworkSetupError(tls)
    context = _context(verify, use_env=tls is None)
    if tls is None and not _unrelated_proxy_problem():
        return ClientSettings(context, trust_env=True, proxy=None)
    # Something in the environment is broken but does not concern this URL: the client
    # gets only what does (this URL's proxy, if any), not the environment wholesale.
    return ClientSettings(context, trust_env=False, proxy=chosen[0] if chosen else None)


def environment_problems(url: str, verify: bool | str = True) -> list[str]:
    """What in the environment stops requests to ``url`` (empty when nothing does), for
    the endpoint panel and ``splitdesk bench``. Reads the file system."""
    try:
        client_settings(url, verify)
    except NetworkSetupError as exc:
        return [str(exc)]
    return []
