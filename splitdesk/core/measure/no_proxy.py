"""``NO_PROXY`` in every form curl, Go and Python's requests honour.

There is no standard; the three clients people copy their settings from agree on most of
it (curl: https://curl.se/libcurl/c/CURLOPT_NOPROXY.html; Go:
https://pkg.go.dev/golang.org/x/net/http/httpproxy#Config; requests:
``requests.utils.should_bypass_proxies``). A comma-separated list (spaces around entries
ignored, case-insensitive) of:

* ``*``: no proxy for any host;
* a host name: that name and every subdomain (``example.com`` matches ``example.com`` and
  ``api.example.com``, not ``badexample.com``); a leading ``.`` or ``*.`` is dropped, as
  curl (since 7.86) and requests do, so ``.example.com`` matches ``example.com`` too (Go
  would leave ``example.com`` itself proxied; matching it as well never sends through a
  proxy what the user meant to keep off it);
* an IP address, IPv4 or IPv6, bare or in brackets (``::1``, ``[::1]``);
* an IP range in CIDR notation, IPv4 or IPv6 (``10.0.0.0/8``, ``fd00::/8``,
  ``[fd00::]/8``);
* any of these with a port (``example.com:8080``, ``10.1.2.3:80``, ``[::1]:8000``): then
  only requests to that port bypass the proxy;
* a URL-shaped entry (``http://example.com``, httpx's own form): its host and port.

Names are matched as written, never resolved: an IP entry does not match a host name that
resolves to it (none of the three resolves either). Entries none of these forms can read
are ignored and listed by :func:`unreadable_entries` (``splitdesk doctor`` names them).

httpx's own reading (``trust_env``) knows none of the ranges (``192.168.0.0/16`` matches
nothing) and raises ``InvalidURL`` on an IPv6 range, which killed ``splitdesk bench`` with
a traceback; so splitdesk reads the variables itself (:mod:`splitdesk.core.measure.netenv`)
and hands each client its one proxy.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True)
class Entry:
    """One readable ``NO_PROXY`` entry: a host name (``domain``, lower case, no leading
    dot) or an IP range (``network``; one address is a /32 or /128), and the ``port`` it is
    limited to (``None``: every port)."""

    domain: str | None = None
    network: IPNetwork | None = None
    port: int | None = None


@dataclass(frozen=True)
class NoProxy:
    """A parsed ``NO_PROXY`` value: ``everything`` (``*``), the readable ``entries``, and
    the entries that could not be read (``unreadable``)."""

    everything: bool
    entries: tuple[Entry, ...]
    unreadable: tuple[str, ...]

    def bypasses(self, host: str, port: int) -> bool:
        """True when a request to ``host`` (a name or an IP literal, brackets allowed) on
        ``port`` must not go through the proxy."""
        if self.everything:
            return True
        name = host.strip().lower().strip("[]").rstrip(".")
        address = _address(name)
        for entry in self.entries:
            if entry.port is not None and entry.port != port:
                continue
            if address is not None:
                if _in(address, entry.network):
                    return True
            elif entry.domain is not None and (
                name == entry.domain or name.endswith("." + entry.domain)
            ):
                return True
        return False


def _in(address: ipaddress.IPv4Address | ipaddress.IPv6Address, network: IPNetwork | None) -> bool:
    """``address`` is in ``network`` (never across IPv4 and IPv6)."""
    if isinstance(network, ipaddress.IPv4Network):
        return isinstance(address, ipaddress.IPv4Address) and address in network
    if isinstance(network, ipaddress.IPv6Network):
        return isinstance(address, ipaddress.IPv6Address) and address in network
    return False


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.split("%", 1)[0])  # an IPv6 zone id is not matched
    except ValueError:
        return None


def _network(text: str) -> IPNetwork | None:
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError:
        return None


def _port(text: str) -> int | None:
    if text.isdigit() and 0 < int(text) < 65536:
        return int(text)
    raise ValueError(text)


def parse_entry(raw: str) -> Entry | None:
    """One entry (module docstring), or ``None`` when no form reads it. ``*`` is not an
    entry: :func:`parse_no_proxy` handles it."""
    text = raw.strip().lower()
    if not text:
        return None
    try:
        if "://" in text:
            parts = urlsplit(text)
            host = parts.hostname or ""
            return _host_entry(host, parts.port)
        if text.startswith("["):  # [v6], [v6]:port, [v6]/len, [v6/len]
            close = text.index("]")
            inside, rest = text[1:close], text[close + 1 :]
            if rest.startswith("/"):
                inside, rest = inside + rest, ""
            port = _port(rest[1:]) if rest.startswith(":") else None
            if rest and port is None:
                return None
            network = _network(inside)
            return Entry(network=network, port=port) if network is not None else None
        network = _network(text)  # v4, v4/len, v6, v6/len (no port: v6 would be ambiguous)
        if network is not None:
            return Entry(network=network)
        host, colon, port_text = text.rpartition(":")
        if colon and ":" not in host:  # name:port or v4:port (or v4/len:port)
            return _host_entry(host, _port(port_text))
        return _host_entry(text, None)
    except ValueError:
        return None


def _host_entry(host: str, port: int | None) -> Entry | None:
    network = _network(host)
    if network is not None:
        return Entry(network=network, port=port)
    name = host.removeprefix("*").lstrip(".").rstrip(".")
    if not name or any(c in name for c in "/*[]@ "):
        return None
    return Entry(domain=name, port=port)


def parse_no_proxy(value: str) -> NoProxy:
    """The ``NO_PROXY`` value ``value`` read (module docstring)."""
    entries: list[Entry] = []
    unreadable: list[str] = []
    everything = False
    for raw in value.split(","):
        raw = raw.strip()
        if not raw:
            continue
        if raw == "*":
            everything = True
            continue
        entry = parse_entry(raw)
        if entry is None:
            unreadable.append(raw)
        else:
            entries.append(entry)
    return NoProxy(everything, tuple(entries), tuple(unreadable))
