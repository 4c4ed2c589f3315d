"""The network settings a user's environment imposes — proxies and CA certificates — checked
before anything is sent, so that a broken one gives one clear sentence instead of an
``ImportError`` from deep inside httpx or a misleading "certificate verify failed".

The environment's rules: ``HTTP_PROXY``, ``HTTPS_PROXY`` and ``ALL_PROXY`` (read through
``urllib.request.getproxies``, lower-case spellings first, as httpx does; the scheme's own
variable before ``ALL_PROXY``), ``NO_PROXY`` in every form curl, Go and requests honour
(:mod:`splitdesk.core.measure.no_proxy`: IPv4 and IPv6 ranges, leading dots, ports), and
``SSL_CERT_FILE`` before ``SSL_CERT_DIR`` for TLS verification. Clients are built with
``trust_env=False`` and the one proxy this module chose for their URL: httpx's own
reading of ``NO_PROXY`` knows no ranges and raises ``InvalidURL`` on an IPv6 one.
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
import stat
import threading
from dataclasses import dataclass
from urllib.parse import urlsplit
from urllib.request import getproxies

import httpx

from splitdesk.core.measure.no_proxy import NoProxy, parse_no_proxy
from splitdesk.core.run.bounded_read import size_words
from splitdesk.core.run.file_words import os_error_words

_KNOWN_PROXY_SCHEMES = ("http", "https", "socks5", "socks5h")


class NetworkSetupError(ValueError):
    """The environment's proxy or CA settings cannot work for this URL; the message says
    which variable, what is wrong with it and what to do."""


@dataclass(frozen=True)
class ClientSettings:
    """Arguments for ``httpx.AsyncClient`` talking to one base URL (see module docstring):
    ``trust_env`` is always ``False`` (this module read the environment), ``proxy`` the
    URL's proxy or ``None``."""

    verify: ssl.SSLContext
    trust_env: bool
    proxy: str | None


def _variable(scheme: str) -> str:
    """The variable a proxy came from: ``https`` → ``HTTPS_PROXY`` (or its lower-case
    spelling when that is the one set)."""
    name = f"{scheme}_proxy"
    return name if os.environ.get(name) else name.upper()


def environment_proxies() -> tuple[dict[str, tuple[str, str]], NoProxy]:
    """The environment's proxies, scheme (``http``, ``https``, ``all``) → (proxy URL,
    variable), and its ``NO_PROXY``."""
    info = getproxies()
    proxies: dict[str, tuple[str, str]] = {}
    for scheme in ("http", "https", "all"):
        value = info.get(scheme)
        if value:
            proxies[scheme] = (value if "://" in value else f"http://{value}", _variable(scheme))
    return proxies, parse_no_proxy(info.get("no", ""))


def proxy_for(url: str) -> tuple[str, str] | None:
    """The proxy the environment sets for ``url`` and the variable it came from, or None
    (no proxy, or ``NO_PROXY`` excludes the host and port). The scheme's own variable wins
    over ``ALL_PROXY``."""
    try:
        target = httpx.URL(url)
        port = target.port or (443 if target.scheme == "https" else 80)
    except (httpx.InvalidURL, ValueError):
        return None  # the URL itself is wrong: its own check says so (core/urls.py)
    proxies, no_proxy = environment_proxies()
    if not proxies or no_proxy.bypasses(target.host, port):
        return None
    return proxies.get(target.scheme) or proxies.get("all")


def shown_proxy(proxy: str, keep_user: bool = True) -> str:
    """``proxy`` as it may be shown: without its password (``http://user:***@host:3128``),
    or without user and password when ``keep_user`` is False (``http://***@host:3128``).
    Never raises, whatever the text: a malformed proxy URL is shown redacted too (the
    credentials are what lies between ``://`` and the last ``@``)."""
    scheme, sep, rest = proxy.partition("://")
    if not sep:
        scheme, rest = "", proxy
    credentials, at, host = rest.rpartition("@")
    if not at:
        return proxy
    user, colon, _ = credentials.partition(":")
    if keep_user and not colon:
        return proxy  # a user name alone is no secret
    userinfo = f"{user}:***@" if keep_user else "***@"
    return f"{scheme}{sep}{userinfo}{host}"


class ProxyURLError(NetworkSetupError):
    """A proxy variable that is not a URL httpx can use (``http://[bad``, a port that is
    not a number): bad input, said in one line naming the variable, before anything is
    sent."""


def proxy_url_problem(proxy: str, variable: str) -> str | None:
    """Why ``proxy`` (from ``variable``) is not a proxy URL at all, or None: one line
    naming the variable and its value without the password. ``urlsplit`` raised
    ``ValueError: Invalid IPv6 URL`` for ``http://[bad`` and httpx ``InvalidURL`` for a
    port that is not a number, from deep inside the first request."""
    why = None
    try:
        parts = urlsplit(proxy)
        _ = parts.port  # raises for a port that is not a number or out of range
        if parts.scheme.lower() not in _KNOWN_PROXY_SCHEMES:
            return None  # a URL, of a scheme httpx has no proxy for: proxy_problem says so
        if not parts.hostname:
            why = "it names no host"
        else:
            httpx.Proxy(proxy)  # what the client will be given: refused the same way
    except (ValueError, httpx.InvalidURL) as exc:  # httpx.InvalidURL is no ValueError
        why = str(exc) or type(exc).__name__
    if why is None:
        return None
    why = why.replace(proxy, shown_proxy(proxy))  # a message that quotes it, redacted
    return (
        f"{variable}={shown_proxy(proxy)} is not a proxy URL ({why}) — write it as "
        f"http://host:port (e.g. http://proxy.example:3128) or unset {variable}"
    )


def proxy_problem(proxy: str, variable: str) -> str | None:
    """Why ``proxy`` (from ``variable``) cannot work here, or None: not a URL at all
    (:func:`proxy_url_problem`), a scheme httpx does not know, SOCKS without ``socksio``."""
    if problem := proxy_url_problem(proxy, variable):
        return problem
    scheme = urlsplit(proxy).scheme.lower()
    if scheme not in _KNOWN_PROXY_SCHEMES:
        return (
            f"{variable}={shown_proxy(proxy)}: httpx cannot use a '{scheme}' proxy "
            f"(it knows {', '.join(_KNOWN_PROXY_SCHEMES)}) — fix or unset {variable}"
        )
    if scheme.startswith("socks") and importlib.util.find_spec("socksio") is None:
        return (
            f"{variable}={shown_proxy(proxy)} is a SOCKS proxy, which needs the 'socksio' package "
            "(pip install 'httpx[socks]'), not installed here — install it, unset "
            f"{variable}, or add this host to NO_PROXY"
        )
    return None


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


#: Largest CA bundle file accepted (the system's own is about 200 kB).
MAX_CA_BUNDLE_BYTES = 16 * 1024 * 1024


def ca_bundle_problem(path: str) -> str | None:
    """Why the CA bundle ``path`` (``--ca-bundle``, the endpoint's CA bundle) cannot verify
    TLS, or None: not a regular file or folder, too large, or no CA certificate can be read
    from it (``ssl.create_default_context(cafile=…)``, as every run's client loads it).
    Said before anything is sent: a bundle that is not PEM was found only by the first
    request, once per request. Reads the file: call off the GUI thread. Never raises."""
    try:
        st = os.stat(path)
    except OSError as exc:
        return os_error_words(exc)
    if stat.S_ISDIR(st.st_mode):  # a folder of hashed certificates (c_rehash): read lazily
        return None if os.access(path, os.R_OK | os.X_OK) else "no permission to read it"
    if not stat.S_ISREG(st.st_mode):  # a FIFO or device: OpenSSL would read it for ever
        return "is not a file: give a CA bundle file (PEM) or a folder of certificates"
    if st.st_size > MAX_CA_BUNDLE_BYTES:
        return (
            f"{st.st_size / 1e6:.1f} MB is too large for a CA bundle (at most "
            f"{size_words(MAX_CA_BUNDLE_BYTES)})"
        )
    try:
        context = ssl.create_default_context(cafile=path)
    except ssl.SSLError as exc:
        why = exc.reason or "a certificate in it is damaged or cut short"  # "PEM lib"
        return f"not a CA bundle: no PEM certificate could be read from it ({why})"
    except (OSError, ValueError) as exc:
        return os_error_words(exc) if isinstance(exc, OSError) else str(exc)
    if not context.cert_store_stats()["x509"]:  # a file of CRLs only
        return "not a CA bundle: it holds no certificate (PEM: -----BEGIN CERTIFICATE-----)"
    return None


#: TLS contexts already made, by what decides their content (:func:`_context_key`).
_contexts: dict[tuple[object, ...], ssl.SSLContext] = {}
_contexts_lock = threading.Lock()


def _file_key(path: str | None) -> tuple[object, ...]:
    """A CA file or folder as a cache key: its path, size and time of last change (a
    bundle rewritten in place is read again); ``None`` parts where it is absent."""
    if not path:
        return (None,)
    try:
        st = os.stat(path)
    except OSError:
        return (path, None)
    return (path, st.st_size, st.st_mtime_ns)


def _context_key(verify: bool | str, use_env: bool) -> tuple[object, ...]:
    if isinstance(verify, str):
        return ("bundle", _file_key(verify))
    if not use_env or verify is False:
        return ("default", verify, use_env)
    return (
        "env",
        verify,
        _file_key(os.environ.get("SSL_CERT_FILE")),
        _file_key(os.environ.get("SSL_CERT_DIR")),
    )


def _context(verify: bool | str, use_env: bool) -> ssl.SSLContext:
    """The TLS context of a client (:func:`client_settings`), made once per process for
    each ``verify``, environment setting and CA file: making one loads the CA bundle,
    ~20 ms of CPU, which every run, the server-metrics poller and the limits probe paid
    afresh (issue 25). A context is only read by the connections that use it."""
    key = _context_key(verify, use_env)
    with _contexts_lock:
        context = _contexts.get(key)
    if context is None:
        context = _new_context(verify, use_env)
        with _contexts_lock:
            context = _contexts.setdefault(key, context)
    return context


def _new_context(verify: bool | str, use_env: bool) -> ssl.SSLContext:
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
    work (:class:`ProxyURLError` for a proxy variable that is not a URL); a problem that
    does not concern ``url`` is left out of its client."""
    chosen = proxy_for(url)
    if chosen is not None:
        if problem := proxy_url_problem(*chosen):
            raise ProxyURLError(problem)
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
    # Only what concerns this URL: its proxy, if any (a broken proxy for another scheme, or
    # a NO_PROXY entry httpx cannot read, stays out of this client).
    return ClientSettings(context, trust_env=False, proxy=chosen[0] if chosen else None)


def environment_problems(url: str, verify: bool | str = True) -> list[str]:
    """What in the environment stops requests to ``url`` (empty when nothing does), for
    the endpoint panel and ``splitdesk bench``. Reads the file system."""
    try:
        client_settings(url, verify)
    except NetworkSetupError as exc:
        return [str(exc)]
    return []
