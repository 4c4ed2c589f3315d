"""A loopback HTTP server that replays a recorded response read by read.

Each body chunk is written as one HTTP/1.1 chunk, flushed, then the server pauses, so the
client sees one network read per chunk. The server records when it wrote each chunk
(``time.perf_counter_ns``), so a test can check which read a client timestamp belongs to.
"""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loopback import Connections


@dataclass
class StreamFixture:
    """One file of ``tests/fixtures/streams`` (format in its README)."""

    name: str
    api: str
    status: int
    headers: dict[str, str]
    chunks: list[bytes]
    expect: dict[str, Any]

    @classmethod
    def load(cls, path: Path) -> StreamFixture:
        data = json.loads(path.read_text(encoding="utf-8"))
        if "body_chunks_b64" in data:
            chunks = [base64.b64decode(c) for c in data["body_chunks_b64"]]
        else:
            chunks = [c.encode("utf-8") for c in data["body_chunks"]]
        return cls(path.stem, data["api"], data["status"], data["headers"], chunks, data["expect"])

    @property
    def body(self) -> bytes:
        return b"".join(self.chunks)


_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    504: "Gateway Time-out",
}


@dataclass
class ReplayServer:
    """Serves one scripted response per connection. ``write_times[i]``: just before chunk i of
    the latest response was written; ``requests`` holds each request's head and body."""

    status: int
    headers: dict[str, str]
    chunks: list[bytes]
    pause: float = 0.03
    tls: ssl.SSLContext | None = None  # serve https with this server context
    #: after the last chunk, neither end the chunked body nor close: hold the response open
    #: until the client leaves (a server or proxy that does not close after its last event)
    hold_open: bool = False
    #: set when the client closed a held-open response (:attr:`hold_open`)
    client_left: asyncio.Event = field(default_factory=asyncio.Event)
    write_times: list[int] = field(default_factory=list)
    requests: list[tuple[bytes, bytes]] = field(default_factory=list)
    _server: asyncio.Server | None = None
    connections: Connections = field(init=False)

    def __post_init__(self) -> None:
        self.connections = Connections(self._handle)

    @property
    def url(self) -> str:
        assert self._server is not None
        port = self._server.sockets[0].getsockname()[1]
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{port}"

    async def __aenter__(self) -> ReplayServer:
        self._server = await asyncio.start_server(
            self.connections.accept, "127.0.0.1", 0, ssl=self.tls
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        """Stop serving and close every accepted connection (:mod:`loopback`)."""
        assert self._server is not None
        await self.connections.close(self._server)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        body = await reader.readexactly(length) if length else b""
        self.requests.append((head, body))
        reason = _REASONS.get(self.status, "Status")
        lines = [f"HTTP/1.1 {self.status} {reason}"]
        lines += [f"{k}: {v}" for k, v in self.headers.items()]
        lines += ["Transfer-Encoding: chunked", "Connection: close", "", ""]
        writer.write("\r\n".join(lines).encode())
        await writer.drain()
        await asyncio.sleep(self.pause)
        self.write_times = []
        for chunk in self.chunks:
            self.write_times.append(time.perf_counter_ns())  # just before the bytes leave
            writer.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            await writer.drain()
            await asyncio.sleep(self.pause)
        if self.hold_open:
            await reader.read()  # b"" once the client closed its end
            self.client_left.set()
            return
        writer.write(b"0\r\n\r\n")
        await writer.drain()
