"""A loopback TCP proxy with a fixed pool of connection handlers, like llama.cpp's server.

llama.cpp's ``llama-server`` (cpp-httplib) serves each connection on one of a fixed
number of HTTP threads and keeps it there while the client keeps it alive, until the
connection has been idle for the keep-alive timeout (5 s); a connection accepted while
every thread is held waits, unanswered, until one frees. This proxy reproduces that in
front of any server (the built-in endpoint in the tests): each accepted connection first
takes one of ``handlers`` slots, then its bytes are forwarded both ways; the slot is held
until either side closes or the client sends nothing for ``keepalive_s`` seconds, when the
proxy closes the connection as httplib does. ``waited_s`` records how long each connection
waited for a slot.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

from loopback import Connections


class HandlerPoolProxy:
    """``async with HandlerPoolProxy(port, handlers=3, keepalive_s=1.0) as proxy:``
    forwards ``127.0.0.1:proxy.port`` to ``127.0.0.1:upstream_port``."""

    def __init__(self, upstream_port: int, handlers: int, keepalive_s: float) -> None:
        self.upstream_port = upstream_port
        self.keepalive_s = keepalive_s
        self._slots = asyncio.Semaphore(handlers)
        self._connections = Connections(self._handle)
        self._server: asyncio.Server | None = None
        self.port = 0
        #: seconds each accepted connection waited for a handler, in the order they got one
        self.waited_s: list[float] = []

    async def __aenter__(self) -> HandlerPoolProxy:
        self._server = await asyncio.start_server(self._connections.accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        await self._connections.close(self._server)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted = time.monotonic()
        async with self._slots:
            self.waited_s.append(time.monotonic() - accepted)
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
            last = [time.monotonic()]  # the last byte either way: idle is silence both ways
            try:
                upstream = asyncio.ensure_future(self._pipe(up_reader, writer, last))
                await self._pipe(reader, up_writer, last, self.keepalive_s)
                upstream.cancel()
                with contextlib.suppress(asyncio.CancelledError, ConnectionError):
                    await upstream
            finally:
                up_writer.close()
                with contextlib.suppress(ConnectionError):
                    await up_writer.wait_closed()

    @staticmethod
    async def _pipe(
        src: asyncio.StreamReader,
        dst: asyncio.StreamWriter,
        last: list[float],
        idle_s: float | None = None,
    ) -> None:
        """Copy ``src`` to ``dst`` until ``src`` ends or, with ``idle_s``, nothing moved
        either way for ``idle_s`` seconds (``last``: when a byte last moved)."""
        while True:
            left = None if idle_s is None else max(0.0, idle_s - (time.monotonic() - last[0]))
            try:
                data = await asyncio.wait_for(src.read(65536), left)
            except TimeoutError:
                if idle_s is not None and time.monotonic() - last[0] >= idle_s:
                    return  # idle past the keep-alive timeout: the handler lets go
                continue
            if not data:
                return
            last[0] = time.monotonic()
            dst.write(data)
            await dst.drain()
