"""Transport failures in words: what went wrong talking to an endpoint and what to do.

:func:`classify_transport_error` turns an httpx exception into a one-line
:class:`~splitdesk.providers.base.RequestError` of the run's error kinds (timeout,
connect, protocol), naming the host and the likely fix. Used by the runner for every
request and by the window and ``splitdesk bench`` when they list an endpoint's models.
"""

from __future__ import annotations

import errno
import logging
import re
import socket
import ssl
from urllib.parse import urlsplit

import httpx

from splitdesk.core.measure.netenv import proxy_for, shown_proxy
from splitdesk.core.run.redaction import redact
from splitdesk.providers.base import EndpointConfig, ErrorKind, RequestError

log = logging.getLogger(__name__)


#: Words for the socket errors a connect fails with (the errno's name and text go to the log).
_CONNECT_WORDS = {
    errno.ECONNREFUSED: "connection refused: nothing listens on that port",
    errno.EHOSTUNREACH: "host unreachable",
    errno.ENETUNREACH: "network unreachable",
    errno.ETIMEDOUT: "timed out",
    errno.ECONNRESET: "connection reset",
    errno.EADDRNOTAVAIL: "address not available on this machine",
}


def _connect_words(cause: BaseException) -> str:
    """A connect failure in a few words (``connection refused: …``), not the socket
    library's ``[Errno 111] Connect call failed ('127.0.0.1', 9)``."""
    if isinstance(cause, ConnectionRefusedError):
        return _CONNECT_WORDS[errno.ECONNREFUSED]
    if isinstance(cause, OSError) and cause.errno in _CONNECT_WORDS:
        return _CONNECT_WORDS[cause.errno]
    text = str(cause).strip()
    # httpcore re-raises a connect failure without its cause: the errno is in the text
    found = re.match(r"\[Errno (\d+)\]", text)
    if found and int(found.group(1)) in _CONNECT_WORDS:
        return _CONNECT_WORDS[int(found.group(1))]
    return text[:120] if text else type(cause).__name__


def _root_cause(exc: BaseException) -> BaseException:
    while exc.__cause__ is not None or exc.__context__ is not None:
        nxt = exc.__cause__ or exc.__context__
        assert nxt is not None
        exc = nxt
    return exc


def classify_transport_error(
    exc: httpx.HTTPError, endpoint: EndpointConfig, read_timeout: float, answered: bool = True
) -> RequestError:
    """A one-line :class:`RequestError` for an httpx transport exception, saying what to do.
    ``answered``: the response's headers had arrived (a cut then happened mid-stream)."""
    url = urlsplit(endpoint.base_url)
    where = f"{url.hostname}:{url.port}" if url.port else str(url.hostname)
    cause = _root_cause(exc)
    proxy = proxy_for(endpoint.base_url)  # the client connects there, not to the server
    if proxy is not None and isinstance(exc, httpx.ProxyError):
        return RequestError(
            ErrorKind.CONNECT,
            f"the proxy {shown_proxy(proxy[0])} ({proxy[1]}) did not pass the request on to "
            f"{where}: {exc} — check the proxy, or add {url.hostname} to NO_PROXY",
        )
    if proxy is not None and isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
        log.info("cannot connect to the proxy for %s: %r", where, cause)
        words = "in time" if isinstance(exc, httpx.ConnectTimeout) else f"({_connect_words(cause)})"
        return RequestError(
            ErrorKind.CONNECT,
            f"cannot connect to the proxy {shown_proxy(proxy[0])} set by {proxy[1]} {words} "
            f"— is the proxy running? Or unset {proxy[1]}, or add {url.hostname} to NO_PROXY",
        )
    if isinstance(exc, httpx.ConnectTimeout):
        return RequestError(
            ErrorKind.TIMEOUT, f"could not connect to {where} in time — is the host reachable?"
        )
    if isinstance(exc, httpx.ReadTimeout):
        return RequestError(
            ErrorKind.TIMEOUT,
            f"no data from {where} for {read_timeout:g} s (read timeout between events)",
        )
    if isinstance(exc, httpx.TimeoutException):
        return RequestError(
            ErrorKind.TIMEOUT, f"timed out talking to {where} ({type(exc).__name__})"
        )
    if isinstance(exc, httpx.ConnectError):
        if "WRONG_VERSION_NUMBER" in str(cause) or "wrong version number" in str(cause):
            return RequestError(
                ErrorKind.CONNECT,
                f"{where} does not speak TLS — use http:// instead of https:// in the base URL",
            )
        if isinstance(cause, ssl.SSLError) or "SSL" in str(exc) or "certificate" in str(exc):
            return RequestError(
                ErrorKind.CONNECT,
                f"TLS failure talking to {where}: {cause} — check the endpoint's CA bundle, "
                "or turn verification off for this endpoint if you trust it",
            )
        if isinstance(cause, socket.gaierror) or "Name or service not known" in str(exc):
            return RequestError(
                ErrorKind.CONNECT, f"cannot resolve {url.hostname} — check the base URL"
            )
        log.info("cannot connect to %s: %r", where, cause)  # the details, for the log
        return RequestError(
            ErrorKind.CONNECT,
            f"cannot connect to {where} ({_connect_words(cause)}) — "
            f"is the server running at {redact(endpoint.base_url, endpoint.secrets)}?",
        )
    if isinstance(exc, httpx.UnsupportedProtocol | httpx.InvalidURL):
        return RequestError(ErrorKind.CONNECT, f"invalid base URL {endpoint.base_url!r}: {exc}")
    if isinstance(exc, httpx.RemoteProtocolError) and not answered:
        return RequestError(
            ErrorKind.PROTOCOL,
            f"{where} closed the connection without answering ({exc or 'no detail'}) — "
            "the server or a proxy dropped the request",
        )
    if isinstance(exc, httpx.ReadError | httpx.WriteError | httpx.NetworkError) and not answered:
        return RequestError(
            ErrorKind.PROTOCOL,
            f"connection to {where} was reset before any answer ({cause}) — "
            "the server or a proxy dropped the request",
        )
    if isinstance(exc, httpx.RemoteProtocolError):
        return RequestError(
            ErrorKind.PROTOCOL, f"{where} closed the connection mid-stream ({exc or 'no detail'})"
        )
    if isinstance(exc, httpx.ReadError | httpx.WriteError | httpx.NetworkError):
        return RequestError(
            ErrorKind.PROTOCOL, f"connection to {where} was reset mid-stream ({cause})"
        )
    return RequestError(ErrorKind.PROTOCOL, f"{type(exc).__name__}: {exc}")
