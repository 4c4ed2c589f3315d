"""Arrival timestamps: when the bytes reached this machine, not when Python got to them.

The runner reads a stream through httpx → httpcore → h11 → SSE decoding. When dozens of
streams deliver tokens in the same instant, a timestamp taken after that chain for stream
k carries the Python time spent on streams 1…k−1 (~0.05 ms each), and any moment the
process waited for a CPU: milliseconds of error at 64 streams. So the HTTP client runs on
:class:`TimestampingBackend`, an httpcore network backend that stamps every read with
the time its bytes arrived:

* plain TCP (:class:`KernelStampedStream`): the kernel's own receive time of the data
  (``SO_TIMESTAMPNS`` ancillary data of ``recvmsg``, Linux; see socket(7)), converted from
  ``CLOCK_REALTIME`` to the monotonic ``perf_counter_ns``. Reads are small, so events that
  queued up while the process was busy keep their own times.
* TLS (:class:`TimestampedStream`): asyncio's TLS transport; each decrypted piece is
  stamped in ``data_received``, in the loop iteration that polled the socket.

Where neither is possible the stamp is the read's return time. The stream remembers the
arrival of the last bytes it handed up (``last_arrival_ns``); the runner's clock reads it
through ``response.extensions["network_stream"]``.

Hand-written because it *is* the measurement: no HTTP library exposes per-read arrival
times. It implements httpcore's documented ``AsyncNetworkBackend`` interface
(https://www.encode.io/httpcore/network-backends/); httpx does not take a network backend
as an argument, so :func:`install` sets it on the transport's connection pool.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import re
import select
import socket
import ssl
import struct
import sys
import time
import weakref
from collections import deque
from collections.abc import AsyncGenerator, Callable, Iterable
from typing import Any

import httpcore
import httpx

from splitdesk.core.measure.chunked import ChunkedDecoder, ChunkedError

SocketOption = (
    tuple[int, int, int] | tuple[int, int, bytes | bytearray] | tuple[int, int, None, int]
)


class _Protocol(asyncio.Protocol):
    """Buffers received pieces with their arrival time (``time.perf_counter_ns``)."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.pieces: deque[tuple[int, bytes]] = deque()
        self.readable = asyncio.Event()
        self.writable = asyncio.Event()
        self.writable.set()
        self.eof = False
        self.error: BaseException | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.pieces.append((time.perf_counter_ns(), data))
        self.readable.set()

    def eof_received(self) -> bool:
        self.eof = True
        self.readable.set()
        return False  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.eof = True
        self.error = exc
        self.readable.set()
        self.writable.set()

    def pause_writing(self) -> None:
        self.writable.clear()

    def resume_writing(self) -> None:
        self.writable.set()


class TimestampedStream(httpcore.AsyncNetworkStream):
    """An httpcore network stream over an asyncio transport. ``last_arrival_ns``: when the
    bytes most recently returned by :meth:`read` arrived (``time.perf_counter_ns``)."""

    def __init__(self, transport: asyncio.Transport, protocol: _Protocol) -> None:
        self._transport = transport
        self._protocol = protocol
        self.last_arrival_ns: int | None = None

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        """The oldest received piece (at most ``max_bytes``); ``b""`` at end of stream.
        Raises ``httpcore.ReadTimeout`` after ``timeout`` s without data, and
        ``httpcore.ReadError`` when the connection broke."""
        p = self._protocol
        if not p.pieces and not p.eof:
            p.readable.clear()
            try:
                await asyncio.wait_for(p.readable.wait(), timeout)
            except TimeoutError:
                raise httpcore.ReadTimeout(f"no data for {timeout} s") from None
        if p.pieces:
            arrived, data = p.pieces.popleft()
            if len(data) > max_bytes:
                p.pieces.appendleft((arrived, data[max_bytes:]))
                data = data[:max_bytes]
            self.last_arrival_ns = arrived
            return data
        if p.error is not None:
            raise httpcore.ReadError(str(p.error) or type(p.error).__name__) from p.error
        return b""

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        """Send ``buffer``; raises ``httpcore.WriteError``/``WriteTimeout``."""
        if not buffer:
            return
        if self._transport.is_closing():
            raise httpcore.WriteError("the connection is closed")
        self._transport.write(buffer)
        if not self._protocol.writable.is_set():
            try:
                await asyncio.wait_for(self._protocol.writable.wait(), timeout)
            except TimeoutError:
                raise httpcore.WriteTimeout(f"could not write for {timeout} s") from None
        if self._protocol.error is not None:
            raise httpcore.WriteError(str(self._protocol.error))

    async def aclose(self) -> None:
        self._transport.close()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        """Upgrade to TLS in place (same protocol, new transport)."""
        loop = asyncio.get_running_loop()
        try:
            transport = await asyncio.wait_for(
                loop.start_tls(
                    self._transport, self._protocol, ssl_context, server_hostname=server_hostname
                ),
                timeout,
            )
        except TimeoutError:
            raise httpcore.ConnectTimeout("the TLS handshake timed out") from None
        except (OSError, ssl.SSLError) as exc:
            raise httpcore.ConnectError(str(exc)) from exc
        assert isinstance(transport, asyncio.Transport)
        self._protocol.transport = transport
        return TimestampedStream(transport, self._protocol)

    def get_extra_info(self, info: str) -> Any:
        if info == "ssl_object":
            return self._transport.get_extra_info("ssl_object")
        if info == "client_addr":
            return self._transport.get_extra_info("sockname")
        if info == "server_addr":
            return self._transport.get_extra_info("peername")
        if info == "socket":
            return self._transport.get_extra_info("socket")
        if info == "is_readable":  # httpcore asks this of idle connections: dropped by the peer?
            return bool(self._protocol.pieces) or self._protocol.eof
        return None


#: ``SO_TIMESTAMPNS`` (asm-generic/socket.h; Python's socket module lacks the name).
_SO_TIMESTAMPNS = 35 if sys.platform.startswith("linux") else None
_SOL_SOCKET = socket.SOL_SOCKET
#: a ``struct timespec`` (two 64-bit fields) from the start of a control message's data
_timespec = struct.Struct("qq").unpack_from
#: Bytes per read: about one SSE event, so each keeps the kernel time of its own packet.
READ_CHUNK = 512
#: The end of a response head: its first empty line, as h11 finds it (its
#: ``blank_line_regex``), so the stream cuts where httpcore's parser stops.
_HEAD_END = re.compile(rb"\n\r?\n")

#: Reads per readiness callback at most (then the loop's other work gets a turn).
DRAIN_READS = 128
#: Bytes a connection buffers before it stops reading the socket (back-pressure).
MAX_BUFFERED = 4 * 1024 * 1024
#: Buffered pieces that arrived within this many ns of the first are handed up as one read
#: stamped with the last one's time: a burst costs one HTTP-parser pass instead of one per
#: piece, and no event's stamp moves by more than this (an eighth of the 2 ms fidelity goal).
COALESCE_NS = 250_000


_offset = {"ns": 0, "at": -(10**18)}

#: A socket that asks for receive timestamps for as long as the process lives
#: (:func:`keep_kernel_stamps`).
_keeper: list[socket.socket] = []


def keep_kernel_stamps(timeout: float = 0.5) -> bool:
    """Keep the kernel stamping received packets from now on, for this process's life;
    True once a packet sent to ourselves comes back stamped (waits at most ``timeout`` s),
    False where there are no kernel stamps (not Linux, or refused).

    Linux takes receive timestamps only while some socket on the machine asks for them
    (``net_enable_timestamp``, net/core/dev.c). When none does, the first socket that asks
    switches them on through a deferred kernel work item, and a packet that arrives before
    that item has run carries no time: its read would be stamped when it was *read*. On a
    busy machine the item can run late (suspected in a test that once got a read-time
    stamp 200 ms late). One UDP socket here keeps asking from the first call on, so every
    later connection's packets are stamped from their first byte. Cheap after the first
    call (one datagram to ourselves). Never raises."""
    if _SO_TIMESTAMPNS is None:
        return False
    try:
        if not _keeper:
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            sock.bind(("127.0.0.1", 0))
            sock.setsockopt(_SOL_SOCKET, _SO_TIMESTAMPNS, 1)
            sock.settimeout(0.05)
            _keeper.append(sock)
        sock = _keeper[0]
        deadline = time.monotonic() + timeout
        while True:
            sock.sendto(b".", sock.getsockname())
            _data, ancillary, _flags, _addr = sock.recvmsg(8, 256)
            if any(lv == _SOL_SOCKET and kind == _SO_TIMESTAMPNS for lv, kind, _ in ancillary):
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.001)
    except OSError:
        return False


def realtime_offset_ns() -> int:
    """``CLOCK_REALTIME − CLOCK_MONOTONIC`` (``time.time_ns() − time.perf_counter_ns()``).

    Read as the best of a few paired samples (the pair read closest together: a process
    preempted between the two reads would shift a stamp by the pause) and refreshed every
    second; it only drifts as NTP slews the wall clock.
    """
    now = time.perf_counter_ns()
    if now - _offset["at"] > 1_000_000_000:
        best = None
        for _ in range(5):
            a = time.perf_counter_ns()
            wall = time.time_ns()
            b = time.perf_counter_ns()
            if best is None or b - a < best[0]:
                best = (b - a, wall - (a + b) // 2)
        assert best is not None
        _offset["ns"], _offset["at"] = best[1], now
    return _offset["ns"]


class ReadDeadlines:
    """The read timeouts of one event loop's streams, watched by one timer.

    A timer per read (``call_later`` and its ``cancel``: a timer handle made, pushed on
    the loop's heap and left there cancelled) was a tenth of the engine's CPU at 64
    streams, where every token is a read. Here a read only notes its deadline; one timer,
    set for the earliest deadline, looks when it falls due, expires the reads past theirs
    and is set again for the next (reads that got data meanwhile moved theirs on)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._waiting: dict[KernelStampedStream, float] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._at = math.inf

    def watch(self, stream: KernelStampedStream, deadline: float) -> None:
        """``stream`` waits for data until ``deadline`` (the loop's clock, s)."""
        self._waiting[stream] = deadline
        if deadline < self._at:
            self._arm(deadline)

    def unwatch(self, stream: KernelStampedStream) -> None:
        """``stream`` waits no more."""
        self._waiting.pop(stream, None)

    def _arm(self, at: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._at = at
        self._timer = self.loop.call_at(at, self._check)

    def _check(self) -> None:
        self._timer, self._at = None, math.inf
        now = self.loop.time()
        for stream, deadline in list(self._waiting.items()):
            if deadline <= now:
                del self._waiting[stream]
                stream.expire()
        if self._waiting:
            self._arm(min(self._waiting.values()))


_loop_deadlines: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, ReadDeadlines] = (
    weakref.WeakKeyDictionary()
)


def _deadlines_of(loop: asyncio.AbstractEventLoop) -> ReadDeadlines:
    deadlines = _loop_deadlines.get(loop)
    if deadlines is None:
        deadlines = _loop_deadlines[loop] = ReadDeadlines(loop)
    return deadlines


class KernelStampedStream(httpcore.AsyncNetworkStream):
    """A plain-TCP httpcore stream reading with ``recvmsg``; ``last_arrival_ns`` is the
    kernel's receive time of the last bytes handed up (``time.perf_counter_ns`` clock).

    The socket is read by an event-loop reader callback as soon as it is readable — not
    when a task gets round to it — so data does not sit in the kernel, where consecutive
    packets of one connection merge and keep only the newest time. Pieces wait in a
    buffer (at most :data:`MAX_BUFFERED` bytes; reading pauses beyond that) with their own
    times. One reader registration per connection, not one per read.
    """

    def __init__(self, sock: socket.socket) -> None:
        self._sock: socket.socket | None = sock
        self.last_arrival_ns: int | None = None
        self.kernel_stamps = False
        if _SO_TIMESTAMPNS is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
                self.kernel_stamps = True
        self._pieces: deque[tuple[int, bytes]] = deque()
        self._buffered = 0
        self._eof = False
        self._error: OSError | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._reading = False
        self._latest = 0
        self._timed_out = False
        self._deadlines: ReadDeadlines | None = None  # its loop's (looked up once)
        #: a response head is on its way (a request was written): no read hands up a byte
        #: past its end, so httpcore's parser holds none of the body (:func:`direct_body`)
        self._head = False
        self._head_seen = b""  # the head's bytes handed up so far (at most its last 2)
        self._head_status = b""  # the first bytes of the head under way (its status line)
        #: the last read ended a final (not 1xx) response head exactly: the body's bytes
        #: are all still here, for :func:`direct_body` to read
        self.at_body_start = False

    def expire(self) -> None:
        """The read timeout passed with no data (:class:`ReadDeadlines`): the waiting
        :meth:`read` raises ``httpcore.ReadTimeout``."""
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            self._timed_out = True
            waiter.cancel()

    def _socket(self) -> socket.socket:
        if self._sock is None:
            raise httpcore.ReadError("the connection is closed")
        return self._sock

    def _start_reading(self) -> None:
        if not self._reading and self._sock is not None and not self._eof:
            self._loop = asyncio.get_running_loop()
            self._loop.add_reader(self._sock.fileno(), self._on_readable)
            self._reading = True

    def _stop_reading(self) -> None:
        if self._reading and self._sock is not None and self._loop is not None:
            self._loop.remove_reader(self._sock.fileno())
        self._reading = False

    def _on_readable(self) -> None:
        """Drain the socket into the buffer, one small ``recvmsg`` at a time (each piece
        keeps the kernel time of its own last packet)."""
        sock = self._sock
        if sock is None:
            return
        offset = realtime_offset_ns()  # one drain takes microseconds; it drifts per second
        recvmsg, clock, pieces = sock.recvmsg, time.perf_counter_ns, self._pieces
        for _ in range(DRAIN_READS):
            try:
                data, ancillary, _flags, _addr = recvmsg(READ_CHUNK, 256)
            except (BlockingIOError, InterruptedError):
                break
            except OSError as exc:
                self._error = exc
                data, ancillary = b"", []
            now = clock()
            stamp = now
            for level, kind, payload in ancillary:
                if level == _SOL_SOCKET and kind == _SO_TIMESTAMPNS and len(payload) >= 16:
                    sec, nsec = _timespec(payload)
                    stamp = min(now, sec * 1_000_000_000 + nsec - offset)
            if stamp < self._latest:  # never let a connection's times run backwards
                stamp = self._latest
            self._latest = stamp
            if not data:
                self._eof = True
                self._stop_reading()
                break
            pieces.append((stamp, data))
            self._buffered += len(data)
            if self._buffered > MAX_BUFFERED:
                self._stop_reading()  # back-pressure: resumed by read()
                break
            if len(data) < READ_CHUNK:
                # a TCP read copies until its buffer is full or nothing is queued: the
                # socket is empty. Another recvmsg would fail (1.5 µs and an exception per
                # token); what arrives next wakes the loop again (readiness is level-
                # triggered), as it would have after that failing read.
                break
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        """The oldest buffered piece (at most ``max_bytes``; pieces that arrived within
        :data:`COALESCE_NS` of it joined); ``b""`` at end of stream. While a response head
        is on its way, nothing past the head's end. Raises ``httpcore.ReadTimeout``/
        ``ReadError``."""
        self.at_body_start = False
        self._socket()
        if self._pieces:
            # Data is waiting, but let the loop run first: a task that never suspends would
            # leave every other connection unread (and its packets merging in the kernel).
            await asyncio.sleep(0)
        elif not self._eof:
            self._start_reading()
            loop = asyncio.get_running_loop()
            self._waiter = waiter = loop.create_future()
            self._timed_out = False
            deadlines = None
            if timeout is not None:
                deadlines = self._deadlines
                if deadlines is None or deadlines.loop is not loop:
                    deadlines = self._deadlines = _deadlines_of(loop)
                deadlines.watch(self, loop.time() + timeout)
            try:
                await waiter
            except asyncio.CancelledError:
                if self._timed_out:  # our deadline, not a cancellation of the task (Stop)
                    raise httpcore.ReadTimeout(f"no data for {timeout} s") from None
                raise
            finally:
                self._waiter = None
                if deadlines is not None:
                    deadlines.unwatch(self)
        if self._pieces:
            pieces = self._pieces
            stamp, data = pieces.popleft()
            if self._head:
                data = self._cut_head(stamp, data[:max_bytes], data[max_bytes:])
            elif len(data) > max_bytes:
                pieces.appendleft((stamp, data[max_bytes:]))
                data = data[:max_bytes]
            elif pieces and pieces[0][0] - stamp <= COALESCE_NS:
                first, parts, size = stamp, [data], len(data)
                while pieces and pieces[0][0] - first <= COALESCE_NS:
                    if size + len(pieces[0][1]) > max_bytes:
                        break
                    stamp, more = pieces.popleft()
                    parts.append(more)
                    size += len(more)
                data = b"".join(parts)
            self._buffered -= len(data)
            if not self._reading and not self._eof and self._buffered <= MAX_BUFFERED // 2:
                self._start_reading()
            self.last_arrival_ns = stamp
            return data
        if self._error is not None:
            raise httpcore.ReadError(
                str(self._error) or type(self._error).__name__
            ) from self._error
        return b""

    def _cut_head(self, stamp: int, data: bytes, more: bytes) -> bytes:
        """``data`` up to the end of the response head under way — its first empty line,
        ended as h11 ends it (``\\n\\r?\\n``: RFC 9112 §2.1 allows a bare LF), so the parser
        holds exactly the head — the rest (and ``more``) put back first in line with its
        stamp. At a final head's end :attr:`at_body_start` turns true; after a 1xx head
        (not 101) the next head is awaited."""
        seen = self._head_seen
        if len(self._head_status) < 12:
            self._head_status += data[: 12 - len(self._head_status)]
        found = _HEAD_END.search(seen + data)
        if found is None:
            self._head_seen = (seen + data)[-2:]
            if more:
                self._pieces.appendleft((stamp, more))
            return data
        cut = found.end() - len(seen)
        rest = data[cut:] + more
        if rest:
            self._pieces.appendleft((stamp, rest))
        status = self._head_status[9:12]
        self._head_seen = self._head_status = b""
        if status[:1] == b"1" and status != b"101":
            return data[:cut]  # 100 Continue, 103 Early Hints: the final head follows
        self._head = False
        self.at_body_start = status != b"101"
        return data[:cut]

    def unread(self, data: bytes) -> None:
        """Put ``data`` back in front of the buffered pieces, stamped as the bytes read
        last: the next :meth:`read` returns it first."""
        if data:
            self._pieces.appendleft((self.last_arrival_ns or self._latest, data))
            self._buffered += len(data)

    async def _wait_writable(self, timeout: float | None) -> None:
        sock = self._socket()
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()
        fd = sock.fileno()

        def wake() -> None:
            if not ready.done():
                ready.set_result(None)

        loop.add_writer(fd, wake)
        try:
            async with asyncio.timeout(timeout):
                await ready
        except TimeoutError:
            raise httpcore.WriteTimeout(f"could not write for {timeout} s") from None
        finally:
            loop.remove_writer(fd)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        """Send all of ``buffer``; raises ``httpcore.WriteError``/``WriteTimeout``. What
        is written is a request (httpcore writes nothing else): its response's head is
        awaited (:meth:`read`)."""
        if not self._head:
            self._head, self._head_seen, self._head_status = True, b"", b""
            self.at_body_start = False
        view = memoryview(buffer)
        while view:
            sock = self._socket()
            try:
                sent = sock.send(view)
            except (BlockingIOError, InterruptedError):
                await self._wait_writable(timeout)
                continue
            except OSError as exc:
                raise httpcore.WriteError(str(exc) or type(exc).__name__) from exc
            view = view[sent:]

    async def aclose(self) -> None:
        self._stop_reading()
        sock, self._sock = self._sock, None
        if sock is not None:
            sock.close()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        """Hand the socket to asyncio's TLS transport (:class:`TimestampedStream`)."""
        self._stop_reading()
        sock = self._socket()
        self._sock = None
        loop = asyncio.get_running_loop()
        try:
            transport, protocol = await asyncio.wait_for(
                loop.create_connection(
                    _Protocol, sock=sock, ssl=ssl_context, server_hostname=server_hostname
                ),
                timeout,
            )
        except TimeoutError:
            sock.close()
            raise httpcore.ConnectTimeout("the TLS handshake timed out") from None
        except (OSError, ssl.SSLError) as exc:
            sock.close()
            raise httpcore.ConnectError(str(exc)) from exc
        return TimestampedStream(transport, protocol)

    def get_extra_info(self, info: str) -> Any:
        sock = self._sock
        if sock is None:
            return None
        if info == "socket":
            return sock
        if info == "client_addr":
            return sock.getsockname()
        if info == "server_addr":
            return sock.getpeername()
        if info == "is_readable":  # httpcore asks this of idle connections: dropped by the peer?
            return bool(self._pieces) or self._eof or bool(select.select([sock], [], [], 0)[0])
        return None


class TimestampingBackend(httpcore.AsyncNetworkBackend):
    """httpcore network backend yielding arrival-stamping streams (asyncio only). Made,
    it makes sure the kernel stamps what its connections receive
    (:func:`keep_kernel_stamps`)."""

    def __init__(self) -> None:
        keep_kernel_stamps()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[SocketOption] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        try:
            try:  # an address needs no resolver thread
                infos = socket.getaddrinfo(
                    host, port, type=socket.SOCK_STREAM, flags=socket.AI_NUMERICHOST
                )
            except socket.gaierror:
                infos = await asyncio.wait_for(
                    loop.getaddrinfo(host, port, type=socket.SOCK_STREAM), timeout
                )
        except TimeoutError:
            raise httpcore.ConnectTimeout(f"resolving {host} timed out") from None
        except OSError as exc:
            raise httpcore.ConnectError(str(exc)) from exc
        last: BaseException | None = None
        for family, kind, proto, _name, address in infos:
            sock = socket.socket(family, kind, proto)
            try:
                sock.setblocking(False)
                for option in socket_options or ():
                    sock.setsockopt(*option)
                if local_address:
                    sock.bind((local_address, 0))
                await asyncio.wait_for(loop.sock_connect(sock, address), timeout)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                return KernelStampedStream(sock)
            except TimeoutError:
                sock.close()
                raise httpcore.ConnectTimeout(f"connecting to {host}:{port} timed out") from None
            except OSError as exc:
                sock.close()
                last = exc
            except BaseException:  # cancelled (Stop while connecting): never leak the socket
                sock.close()
                raise
        raise httpcore.ConnectError(str(last) if last else f"no address for {host}") from last

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[SocketOption] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        try:
            transport, protocol = await asyncio.wait_for(
                loop.create_unix_connection(_Protocol, path), timeout
            )
        except TimeoutError:
            raise httpcore.ConnectTimeout(f"connecting to {path} timed out") from None
        except OSError as exc:
            raise httpcore.ConnectError(str(exc)) from exc
        return TimestampedStream(transport, protocol)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


def install(transport: httpx.AsyncHTTPTransport) -> bool:
    """Make ``transport`` connect through :class:`TimestampingBackend`. Returns ``False``
    (and changes nothing) when this httpx no longer keeps its pool where expected; the
    runner then falls back to stamping after parsing."""
    pool = getattr(transport, "_pool", None)
    if pool is None or not hasattr(pool, "_network_backend"):
        return False
    pool._network_backend = TimestampingBackend()
    return True


def arrival_clock(response: httpx.Response, fallback: Callable[[], int]) -> Callable[[], int]:
    """A clock for ``response``'s stream: when the bytes last read arrived (falls back to
    ``fallback()`` on streams that do not record arrivals)."""
    stream = response.extensions.get("network_stream")
    if not isinstance(stream, TimestampedStream | KernelStampedStream):
        return fallback

    def clock() -> int:
        return stream.last_arrival_ns or fallback()

    return clock


#: Bytes asked of the stream per read of a direct body (one read hands up one arrival, or
#: the arrivals of :data:`COALESCE_NS`, whatever this allows).
BODY_READ = 64 * 1024


def direct_body(response: httpx.Response) -> AsyncGenerator[bytes, None] | None:
    """The body of ``response`` read straight from its :class:`KernelStampedStream`, or
    ``None`` where that is not possible (read it through httpx then, as usual).

    Possible for an HTTP/1.1 2xx response with a body (not 204, not to HEAD),
    ``Transfer-Encoding: chunked`` and no content coding, on a plain-TCP connection
    whose parser holds none of the body (the stream handed up the head alone:
    ``at_body_start``) and whose body nobody read yet: what every streaming LLM server
    sends. The generator yields the data of each read (one arrival, or the arrivals of
    :data:`COALESCE_NS`), with the stream's ``last_arrival_ns`` that read's arrival time
    as with httpx's reads, so the same :func:`arrival_clock` stamps it. Decoding the
    chunks here (:mod:`.chunked`) spares the six async-generator layers and h11's event
    machinery httpx reads each piece through: ~40 % of the engine's CPU at 64 streams,
    where every token is a read (issue 25).

    Errors are httpx's, as from httpx's own read: ``httpx.ReadTimeout`` (no data within
    the request's read timeout), ``httpx.ReadError`` (the connection broke or was cut),
    ``httpx.RemoteProtocolError`` (malformed chunks; the connection closed before the
    last chunk, worded as h11 words it; a malformed trailer field, from h11). Once the
    last chunk is read, the stream hands httpx the body's end (the last chunk and the
    trailer section) to read, so httpcore ends the response as it does a body it read
    itself and keeps the connection for the next request. Claims the body: a second
    call returns ``None``.
    """
    stream = response.extensions.get("network_stream")
    if (
        not isinstance(stream, KernelStampedStream)
        or not stream.at_body_start
        or response.http_version != "HTTP/1.1"
        or not 200 <= response.status_code < 300
        or response.status_code == 204  # no body, whatever its headers say (RFC 9112 §6.3)
        or response.request.method == "HEAD"
        or response.headers.get("transfer-encoding", "").strip().lower() != "chunked"
        or "content-encoding" in response.headers
        or response.is_stream_consumed
    ):
        return None
    stream.at_body_start = False
    timeout = response.request.extensions.get("timeout", {}).get("read")
    return _chunked_body(stream, response, timeout)


async def _chunked_body(
    stream: KernelStampedStream, response: httpx.Response, timeout: float | None
) -> AsyncGenerator[bytes, None]:
    decoder = ChunkedDecoder()
    feed, read, request = decoder.feed, stream.read, response.request
    try:
        while not decoder.done:
            data = await read(BODY_READ, timeout)
            if not data:
                raise httpx.RemoteProtocolError(
                    "peer closed connection without sending complete message body "
                    "(incomplete chunked read)",
                    request=request,
                )
            body = feed(data)
            if body:
                yield body
            if decoder.error is not None:  # found after the data just handed up
                raise decoder.error
    except httpcore.ReadTimeout as exc:
        raise httpx.ReadTimeout(str(exc), request=request) from exc
    except httpcore.ReadError as exc:
        raise httpx.ReadError(str(exc), request=request) from exc
    except ChunkedError as exc:
        raise httpx.RemoteProtocolError(str(exc), request=request) from exc
    # httpcore's parser has seen the head alone: the body's last chunk and trailer section
    # end the message there (RFC 9112 §7.1), read and judged by h11 as ever (a malformed
    # trailer field fails the read as it did), and the connection stays reusable
    stream.unread(b"0\r\n" + decoder.trailer + decoder.rest)
    async for _ in response.aiter_raw():
        pass
