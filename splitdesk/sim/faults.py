"""Fault injection in the built-in endpoint: the ways real servers, proxies and networks
fail, on demand, in every dialect the server speaks.

A fault is ``NAME[:ARG]`` (see :data:`CATALOGUE`). Which request gets which fault:

* ``splitdesk sim --fault NAME[:ARG][@SHARE]`` (repeatable): each generation request draws
  once from a generator seeded by ``--fault-seed``; rule *i* hits a share ``SHARE`` of the
  requests (default 1: all), rules are tried in order and their shares add up (≤ 1).
  ``--fault chaos@0.3`` gives 30 % of the requests a fault drawn at random from the
  catalogue, with a random argument (the "chaos" profile, for demos of failure handling);
  ``--chaos SEED`` is short for ``--fault chaos@0.3 --fault-seed SEED``.
* the ``x-splitdesk-fault: NAME[:ARG]`` request header: that request gets that fault
  (``none``: no fault), whatever the rules say.
* ``POST /_splitdesk/faults`` replaces the rules while the server runs:
  ``{"faults": ["reset-mid:3@0.5"], "seed": 1, "by_prompt": {"[q7]": "no-end"}}``; a
  ``by_prompt`` entry gives every request whose prompt *begins* with the key that fault
  (how a test gives each question of one run its own fault, while the combined request,
  whose prompt begins with its instructions, stays clean). ``GET`` returns the rules.

Faults before the headers (``refuse``, ``reset``, ``hang``, ``status``, ``html``) apply to
every generation request; the others change how a *streamed* reply is written, so a
request with ``"stream": false`` is answered normally. The emission log
(``GET /_splitdesk/trace/{id}``) records the fault and what was actually delivered: the
text of every token event written in full (``sent_text``), its tokens and the body bytes.
A connection is reset only after the client's kernel acknowledged every byte written
before (``SIOCOUTQ`` reaches 0), so "delivered" means the client can read it.

Where the cut is made is hand-written (no library injects faults into an ASGI server at
the byte level); the wire shapes stay each dialect's own (``sim/wire``).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import random
import socket
import struct
import termios
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from starlette.types import Receive, Scope, Send

from splitdesk.sim.connection import disconnected, transport_of

#: Default ``Retry-After`` of an injected 429 or 503 (seconds, whole: RFC 9110 §10.2.3).
RETRY_AFTER_S = 1

#: Request header choosing one request's fault.
HEADER = "x-splitdesk-fault"

#: Body bytes an injected ``huge`` event is padded to by default (1 MiB).
HUGE_DEFAULT = 1 << 20


@dataclass(frozen=True)
class FaultKind:
    """One entry of the catalogue: what the server does, what ``ARG`` means and its default
    (``None``: no argument, or "until the client leaves" for a duration)."""

    name: str
    summary: str
    arg: str = ""
    default: float | None = None
    integer: bool = False
    before_headers: bool = False
    choices: tuple[int, ...] = ()


CATALOGUE: dict[str, FaultKind] = {
    k.name: k
    for k in (
        FaultKind(
            "refuse",
            "close the connection before sending anything (as a server that drops requests)",
            before_headers=True,
        ),
        FaultKind(
            "reset", "reset the connection (TCP RST) before sending anything", before_headers=True
        ),
        FaultKind(
            "hang",
            "send nothing for S seconds, then answer normally (default: until the client "
            "leaves): the client waits for headers",
            "S",
            before_headers=True,
        ),
        FaultKind(
            "status",
            "answer HTTP CODE in the dialect's error shape: 401, 404, 429 (with Retry-After), "
            "500 or 503 (with Retry-After)",
            "CODE",
            500,
            integer=True,
            before_headers=True,
            choices=(401, 404, 429, 500, 503),
        ),
        FaultKind(
            "html",
            "answer HTTP CODE with an HTML error page, as a proxy in front of the API would",
            "CODE",
            502,
            integer=True,
            before_headers=True,
            choices=(400, 401, 403, 404, 429, 500, 502, 503, 504),
        ),
        FaultKind(
            "stall-headers",
            "send the headers and the dialect's opening events, then nothing for S seconds "
            "(default: until the client leaves): the client waits for the first token",
            "S",
        ),
        FaultKind("reset-mid", "reset the connection after K token events", "K", 3, integer=True),
        FaultKind(
            "stall-mid",
            "after the first token event, nothing for S seconds (longer than the client's read "
            "timeout makes it give up), then carry on",
            "S",
            5.0,
        ),
        FaultKind(
            "malformed",
            "after K token events, send an event whose data is not valid JSON, then end",
            "K",
            3,
            integer=True,
        ),
        FaultKind(
            "error-event",
            "after K token events, send the dialect's in-stream error object, then end",
            "K",
            3,
            integer=True,
        ),
        FaultKind(
            "huge",
            "pad the first token event with JSON whitespace to N bytes (valid: the client "
            "must take it in whole)",
            "N",
            HUGE_DEFAULT,
            integer=True,
        ),
        FaultKind(
            "split-utf8",
            "answer with non-ASCII text and write each event in pieces cut inside UTF-8 "
            "characters (valid: the client must join them)",
        ),
        FaultKind(
            "no-end",
            "send every token event, then close without the dialect's end signal "
            "([DONE], message_stop, done: true …)",
        ),
    )
}

#: Faults after which the request must still end normally, every token delivered.
HARMLESS = frozenset({"huge", "split-utf8"})


@dataclass(frozen=True)
class Fault:
    """A fault to inject: a :data:`CATALOGUE` name and its argument (``None``: the default,
    or no argument)."""

    name: str
    arg: float | None = None

    @property
    def kind(self) -> FaultKind:
        return CATALOGUE[self.name]

    @property
    def value(self) -> float | None:
        """The argument in force (the default when none was given)."""
        return self.arg if self.arg is not None else self.kind.default

    @property
    def int_value(self) -> int:
        """:attr:`value` as an integer (0 when there is none)."""
        return int(self.value or 0)

    @property
    def label(self) -> str:
        """``NAME[:ARG]`` as written on the command line."""
        if self.arg is None:
            return self.name
        return f"{self.name}:{int(self.arg) if self.kind.integer else self.arg:g}"


def parse_fault(text: str) -> Fault:
    """``NAME[:ARG]`` → :class:`Fault`. Raises ``ValueError`` with a one-line reason (unknown
    name, missing, malformed or out-of-range argument)."""
    name, _, arg_text = text.strip().partition(":")
    kind = CATALOGUE.get(name)
    if kind is None:
        raise ValueError(f"unknown fault {name!r}; known: {', '.join(CATALOGUE)}")
    if not arg_text:
        return Fault(name)
    if not kind.arg:
        raise ValueError(f"fault {name!r} takes no argument")
    try:
        value = float(arg_text)
    except ValueError:
        raise ValueError(f"fault {name}: {kind.arg} must be a number, got {arg_text!r}") from None
    if value < 0 or value != value or value == float("inf"):
        raise ValueError(f"fault {name}: {kind.arg} must be a finite number >= 0")
    if kind.integer and value != int(value):
        raise ValueError(f"fault {name}: {kind.arg} must be a whole number, got {arg_text}")
    if kind.choices and int(value) not in kind.choices:
        raise ValueError(
            f"fault {name}: {kind.arg} must be one of {', '.join(map(str, kind.choices))}"
        )
    return Fault(name, value)


@dataclass(frozen=True)
class Rule:
    """``fault`` hits a ``share`` (0–1) of the requests; ``fault`` ``None`` is chaos."""

    fault: Fault | None
    share: float = 1.0

    @property
    def label(self) -> str:
        name = self.fault.label if self.fault else "chaos"
        return name if self.share == 1.0 else f"{name}@{self.share:g}"


def parse_rule(text: str) -> Rule:
    """``NAME[:ARG][@SHARE]`` or ``chaos[@SHARE]`` → :class:`Rule`. Raises ``ValueError``."""
    spec, at, share_text = text.strip().partition("@")
    share = 1.0
    if at:
        try:
            share = float(share_text)
        except ValueError:
            raise ValueError(f"{text!r}: the share after @ must be a number") from None
        if not 0.0 <= share <= 1.0:
            raise ValueError(f"{text!r}: the share after @ must be between 0 and 1")
    if spec == "chaos":
        return Rule(None, share)
    return Rule(parse_fault(spec), share)


def chaos_fault(rng: random.Random) -> Fault:
    """A fault drawn at random, with an argument that ends within seconds (no endless hang:
    a chaos demo must keep moving)."""
    name = rng.choice(sorted(CATALOGUE))
    kind = CATALOGUE[name]
    if kind.choices:
        return Fault(name, float(rng.choice(kind.choices)))
    if name in ("hang", "stall-headers", "stall-mid"):
        return Fault(name, round(rng.uniform(0.5, 3.0), 1))
    if name in ("reset-mid", "malformed", "error-event"):
        return Fault(name, float(rng.randint(0, 8)))
    if name == "huge":
        return Fault(name, float(rng.choice((64 << 10, 256 << 10, HUGE_DEFAULT))))
    return Fault(name)


class FaultSchedule:
    """Which fault each generation request gets (module docstring). Not thread-safe: the
    server calls it from its event loop."""

    def __init__(
        self,
        rules: list[Rule] | None = None,
        seed: int = 0,
        by_prompt: Mapping[str, Fault] | None = None,
    ) -> None:
        rules = rules or []
        total = sum(r.share for r in rules)
        if total > 1.0 + 1e-9:
            raise ValueError(f"the fault shares add up to {total:g}; at most 1")
        self.rules = rules
        self.seed = seed
        self.by_prompt = dict(by_prompt or {})
        self._rng = random.Random(seed)

    @property
    def active(self) -> bool:
        return bool(self.rules or self.by_prompt)

    @classmethod
    def from_json(cls, body: Any) -> FaultSchedule:
        """The schedule ``POST /_splitdesk/faults`` sends. Raises ``ValueError``."""
        if not isinstance(body, dict):
            raise ValueError("the body must be a JSON object")
        faults = body.get("faults", [])
        seed = body.get("seed", 0)
        by_prompt = body.get("by_prompt", {})
        if not isinstance(faults, list) or not all(isinstance(f, str) for f in faults):
            raise ValueError("'faults' must be a list of NAME[:ARG][@SHARE] strings")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ValueError("'seed' must be an integer")
        if not isinstance(by_prompt, dict) or not all(
            isinstance(k, str) and k and isinstance(v, str) for k, v in by_prompt.items()
        ):
            raise ValueError("'by_prompt' must map prompt beginnings to NAME[:ARG] strings")
        return cls(
            [parse_rule(f) for f in faults],
            seed,
            {k: parse_fault(v) for k, v in by_prompt.items()},
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "faults": [r.label for r in self.rules],
            "seed": self.seed,
            "by_prompt": {k: f.label for k, f in self.by_prompt.items()},
            "catalogue": {k.name: k.summary for k in CATALOGUE.values()},
        }

    def pick(self, headers: Mapping[str, str], prompt: str) -> Fault | None:
        """The fault for one request: its header, else a matching ``by_prompt`` entry, else
        one draw over the rules. Raises ``ValueError`` for a malformed header."""
        chosen = headers.get(HEADER)
        if chosen is not None:
            chosen = chosen.strip()
            return None if chosen in ("", "none") else parse_fault(chosen)
        for start, fault in self.by_prompt.items():
            if prompt.startswith(start):
                return fault
        if not self.rules:
            return None
        u = self._rng.random()
        edge = 0.0
        for rule in self.rules:
            edge += rule.share
            if u < edge:
                return rule.fault if rule.fault is not None else chaos_fault(self._rng)
        return None


# -- byte-level helpers ---------------------------------------------------------------------------

_WIDE = str.maketrans({"e": "é", "a": "ä", "o": "ø", "u": "ü", "-": "—"})


def widen(token: str, index: int) -> str:
    """``token`` with multi-byte UTF-8 characters: accented vowels (2 bytes), a dash and an
    ellipsis on every fifth token (3), an emoji on every fifth token (4), so that events can
    be cut inside characters of every length."""
    out = token.translate(_WIDE)
    if out.strip():
        if index % 5 == 2:
            out += "…"
        elif index % 5 == 4:
            out += "🙂"
    return out


def cut_inside_characters(data: bytes) -> list[bytes]:
    """``data`` in pieces whose boundaries fall inside multi-byte UTF-8 characters (after
    the first byte of each such character); one piece when it is all ASCII."""
    pieces: list[bytes] = []
    start = 0
    for i, byte in enumerate(data):
        if byte >= 0xC0 and i + 1 < len(data):  # a lead byte: cut right after it
            pieces.append(data[start : i + 1])
            start = i + 1
    pieces.append(data[start:])
    return [p for p in pieces if p]


def pad_event(data: bytes, size: int) -> bytes:
    """A token event grown to about ``size`` bytes with insignificant JSON whitespace right
    after its JSON object's opening brace (still one SSE data line or one NDJSON line)."""
    brace = data.find(b"{")
    if brace < 0 or size <= len(data):
        return data
    return data[: brace + 1] + b" " * (size - len(data)) + data[brace + 1 :]


def malformed_event(media_type: str) -> bytes:
    """An event whose payload is not JSON, framed as the dialect frames events."""
    if "ndjson" in media_type:
        return b'{"model": "splitdesk-sim", "message": {"content": "unterminated\n'
    return b'data: {"choices": [{"delta": {"content": "unterminated\n\n'


# -- the connection under the response ------------------------------------------------------


async def wait_acknowledged(transport: asyncio.Transport, limit_s: float = 1.0) -> None:
    """Return once every byte written to ``transport`` left its buffer and the peer's
    kernel acknowledged it (Linux ``SIOCOUTQ``, same number as ``TIOCOUTQ``: unacknowledged
    bytes in the send queue), or after ``limit_s`` seconds."""
    sock = transport.get_extra_info("socket")
    loop = asyncio.get_running_loop()
    end = loop.time() + limit_s
    while loop.time() < end:
        pending = transport.get_write_buffer_size()
        if pending == 0 and sock is not None:
            try:
                raw = fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0\0\0\0")
                pending = struct.unpack("i", raw)[0]
            except OSError:
                return
        if pending == 0:
            return
        await asyncio.sleep(0.001)


def reset(transport: asyncio.Transport) -> None:
    """Close the connection with a TCP RST (``SO_LINGER`` 0), dropping anything unsent."""
    sock = transport.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()


async def pause(seconds: float | None) -> None:
    """Sleep ``seconds``; ``None``: until cancelled (the client leaves, the server stops)."""
    if seconds is None:
        await asyncio.get_running_loop().create_future()
    else:
        await asyncio.sleep(seconds)


async def wait_for_disconnect(
    receive: Receive, seconds: float | None, closing: asyncio.Event | None
) -> bool:
    """Wait ``seconds`` (``None``: for ever). ``False`` as soon as the client disconnects or
    the server stops, ``True`` when the time ran out."""
    waits: set[asyncio.Future[Any]] = {asyncio.ensure_future(disconnected(receive))}
    if closing is not None:
        waits.add(asyncio.ensure_future(closing.wait()))
    try:
        done, _ = await asyncio.wait(waits, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for t in waits:
            t.cancel()
        await asyncio.gather(*waits, return_exceptions=True)
    return not done


class CutConnection:
    """ASGI response for ``refuse`` and ``reset``: the connection ends before any byte of a
    response (a FIN for ``refuse``, an RST for ``reset``)."""

    def __init__(self, fault: Fault) -> None:
        self.fault = fault

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        transport = transport_of(scope)
        if transport is None:  # not uvicorn's httptools: nothing to cut, say so instead
            await send({"type": "http.response.start", "status": 500, "headers": []})
            await send({"type": "http.response.body", "body": b"fault needs httptools"})
            return
        if self.fault.name == "reset":
            reset(transport)
        else:
            transport.close()
        # uvicorn would answer 500 for a response never started, unless it saw the client go
        await wait_for_disconnect(receive, 2.0, None)


def html_page(status: int, phrase: str) -> str:
    """The error page nginx serves in front of an API (what users meet behind proxies)."""
    return (
        f"<html>\r\n<head><title>{status} {phrase}</title></head>\r\n<body>\r\n"
        f"<center><h1>{status} {phrase}</h1></center>\r\n<hr><center>nginx</center>\r\n"
        "</body>\r\n</html>\r\n"
    )
