"""The connection under a built-in endpoint response: uvicorn's own ``send`` kept in the
ASGI scope (:class:`RawSendMiddleware`), so token events are written straight to the
connection's transport as HTTP/1.1 chunks (:class:`DirectChunks`, the scheduler's short
path), faults reach the socket (:func:`transport_of`), and a stream notices the client
leaving (:func:`disconnected`). Used by :mod:`splitdesk.sim.streaming` and
:mod:`splitdesk.sim.faults`; imports neither."""

from __future__ import annotations

import asyncio
from typing import Protocol

from starlette.types import ASGIApp, Message, Receive, Scope, Send

RAW_SEND = "splitdesk.raw_send"


class RawSendMiddleware:
    """Outermost ASGI layer: keeps the server's own ``send`` in the scope."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            scope[RAW_SEND] = send
        await self.app(scope, receive, send)


class _Cycle(Protocol):
    transport: asyncio.Transport
    chunked_encoding: bool | None
    disconnected: bool


class DirectChunks:
    """Writes HTTP/1.1 chunks straight to a uvicorn (httptools) connection's transport,
    exactly as uvicorn's own ``send`` would (``%x\\r\\n`` size, data, ``\\r\\n``)."""

    def __init__(self, cycle: _Cycle) -> None:
        self.cycle = cycle

    @classmethod
    def for_scope(cls, scope: Scope) -> DirectChunks | None:
        """The direct writer of this response, or ``None`` when the short path does not
        apply (not uvicorn's httptools protocol, or no chunked encoding)."""
        cycle = getattr(scope.get(RAW_SEND), "__self__", None)
        if (
            cycle is None
            or not hasattr(cycle, "transport")
            or getattr(cycle, "chunked_encoding", None) is not True
        ):
            return None
        return cls(cycle)

    @staticmethod
    def frame(data: bytes) -> bytes:
        """``data`` as one HTTP/1.1 chunk."""
        return b"%x\r\n%b\r\n" % (len(data), data)

    def write(self, data: bytes) -> bool:
        """Write one chunk; ``False`` when the client is gone."""
        return self.write_frame(self.frame(data))

    def write_frame(self, frame: bytes) -> bool:
        """Write a chunk already framed (:meth:`frame`); ``False`` when the client is gone."""
        cycle = self.cycle
        transport = cycle.transport
        if cycle.disconnected or transport.is_closing():
            return False
        transport.write(frame)
        return True


async def disconnected(receive: Receive) -> None:
    """Return when the ASGI server reports that the client disconnected."""
    while True:
        message: Message = await receive()
        if message["type"] == "http.disconnect":
            return


def transport_of(scope: Scope) -> asyncio.Transport | None:
    """The asyncio transport of the connection serving ``scope`` (uvicorn's httptools
    protocol; see :class:`RawSendMiddleware`), or ``None``."""
    cycle = getattr(scope.get(RAW_SEND), "__self__", None)
    transport = getattr(cycle, "transport", None)
    return transport if isinstance(transport, asyncio.Transport) else None
