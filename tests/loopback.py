"""What the tests' own loopback servers share: every accepted connection tracked from the
instant it is accepted, and all of them closed when the server stops.

Python 3.11's ``asyncio.Server.wait_closed`` does not wait for connections, and a handler
task cancelled before it first ran never reaches its ``finally``. Worse, a connection the
loop accepted in the same iteration as ``Server.close()`` is lost inside asyncio: its
transport is created after the server dropped its sockets, ``Server._attach`` then fails
its ``assert self._sockets is not None``, the error is swallowed
(``BaseSelectorEventLoop._accept_connection2``), and the half-made transport is left to the
garbage collector. A client polling on its own thread (the window's server lane reads
``/metrics`` four times a second) hits that instant; the ResourceWarning then failed a
later test's teardown. So :meth:`Connections.close` first stops the listener being read,
lets the connections already accepted reach the server, and only then closes it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class Connections:
    """Accepts connections for a handler coroutine and closes every one on :meth:`close`.

    ``accepted`` keeps every writer ever accepted (a test can check each is closed)."""

    def __init__(self, handle: Handler) -> None:
        self._handle = handle
        self._tasks: set[asyncio.Task[None]] = set()
        self._open: set[asyncio.StreamWriter] = set()
        self.accepted: list[asyncio.StreamWriter] = []

    def accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """``asyncio.start_server``'s callback: track the writer and its task before either
        runs."""
        self._open.add(writer)
        self.accepted.append(writer)
        task = asyncio.ensure_future(self._run(reader, writer))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await self._handle(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            self._open.discard(writer)
            await _close(writer)

    async def close(self, server: asyncio.Server) -> None:
        """Stop reading ``server``'s listening sockets, give the connections already accepted
        three loop iterations to reach :meth:`accept`, close the server, then cancel every
        handler and close every connection until none is left."""
        loop = asyncio.get_running_loop()
        for sock in server.sockets:
            loop.remove_reader(sock.fileno())
        for _ in range(3):
            await asyncio.sleep(0)
        server.close()
        while True:
            for _ in range(3):
                await asyncio.sleep(0)
            if not self._tasks and not self._open:
                break
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            for writer in list(self._open):
                await _close(writer)
                self._open.discard(writer)
        await server.wait_closed()


async def _close(writer: asyncio.StreamWriter) -> None:
    """Close ``writer``'s connection: gracefully for up to :data:`CLOSE_S`, then abort.

    A graceful close waits until what was written has been sent, which never happens when
    the client stopped reading and kept its socket open (a stream stopped mid-answer):
    ``wait_closed`` then waited forever, in a handler that stopping the server had
    cancelled, and the test loop's teardown hung on it."""
    writer.close()
    with contextlib.suppress(ConnectionError, TimeoutError):
        await asyncio.wait_for(writer.wait_closed(), CLOSE_S)
    if not writer.transport.is_closing() or writer.transport.get_write_buffer_size():
        writer.transport.abort()


#: Seconds a connection may take to close gracefully before it is aborted.
CLOSE_S = 1.0
