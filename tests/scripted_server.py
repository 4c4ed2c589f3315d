"""A loopback OpenAI-chat server whose answer depends on the question asked.

One plan can then hold requests that behave differently (an ordinary answer, reasoning
only, a tool call only, a server error, a stream that never ends, a 429 then an answer):
each question names its script with a keyword (``[ordinary]``, ``[reasoning]``, …). The
bodies follow the shapes real servers send (vLLM/OpenAI chunks, ``[DONE]``, a usage chunk
with empty ``choices``). Each SSE event is written as its own HTTP chunk after a pause, so
the client sees one read per event.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

from loopback import Connections

#: Scripts by keyword; "retry" answers 429 first, then like "ordinary".
SCRIPTS = ("ordinary", "reasoning", "tool", "fail", "stop", "retry")


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _usage(tokens: int) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [],
        "usage": {"prompt_tokens": 9, "completion_tokens": tokens, "total_tokens": 9 + tokens},
    }


def events_for(script: str) -> list[dict[str, Any]] | None:
    """The SSE events of ``script`` (``None``: the stream never ends after them)."""
    if script in ("ordinary", "retry"):
        return [
            _chunk({"role": "assistant", "content": ""}),
            _chunk({"content": "Blue light"}),
            _chunk({"content": " scatters"}),
            _chunk({"content": " more."}),
            _chunk({}, "stop"),
            _usage(7),
        ]
    if script == "reasoning":  # no answer text, no usage: the count is an estimate
        return [
            _chunk({"role": "assistant", "content": ""}),
            _chunk({"reasoning_content": "Let me"}),
            _chunk({"reasoning_content": " think"}),
            _chunk({}, "length"),
        ]
    if script == "tool":
        call = {"index": 0, "id": "call_1", "type": "function"}
        return [
            _chunk({"role": "assistant", "content": None}),
            _chunk({"tool_calls": [{**call, "function": {"name": "lookup", "arguments": ""}}]}),
            _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"q": 1}'}}]}),
            _chunk({}, "tool_calls"),
            _usage(21),
        ]
    if script == "stop":
        return [_chunk({"role": "assistant", "content": ""}), _chunk({"content": "Once"})]
    raise ValueError(script)


@dataclass
class ScriptedServer:
    """Serves the scripts above on 127.0.0.1 (HTTP/1.1, one response per request,
    keep-alive). ``pause``: seconds between events; ``retry_after``: the 429's header.
    ``sends[script]``: how many chat requests of that script arrived."""

    pause: float = 0.02
    retry_after: float = 0.3
    sends: dict[str, int] = field(default_factory=dict)
    _server: asyncio.Server | None = None
    connections: Connections = field(init=False)

    def __post_init__(self) -> None:
        self.connections = Connections(self._handle)

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}/v1"

    async def __aenter__(self) -> ScriptedServer:
        self._server = await asyncio.start_server(self.connections.accept, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        """Stop serving and close every accepted connection (:mod:`loopback`)."""
        assert self._server is not None
        await self.connections.close(self._server)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            body = await reader.readexactly(length) if length else b""
            if head.startswith(b"GET"):
                await self._json(writer, 200, {"object": "list", "data": [{"id": "m"}]})
                continue
            prompt = json.dumps(json.loads(body)["messages"])
            script = next(s for s in SCRIPTS if f"[{s}]" in prompt)
            n = self.sends[script] = self.sends.get(script, 0) + 1
            if script == "fail":
                error = {"error": {"message": "backend exploded", "type": "server_error"}}
                await self._json(writer, 500, error)
            elif script == "retry" and n == 1:
                error = {"error": {"message": "Rate limit reached", "type": "rate_limit"}}
                await self._json(writer, 429, error, {"Retry-After": f"{self.retry_after:g}"})
            else:
                await self._stream(writer, events_for(script), forever=script == "stop")

    async def _json(
        self,
        writer: asyncio.StreamWriter,
        status: int,
        doc: dict[str, Any],
        headers: dict[str, str] | None = None,
    ) -> None:
        data = json.dumps(doc).encode()
        lines = [f"HTTP/1.1 {status} X", "Content-Type: application/json"]
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        lines += [f"Content-Length: {len(data)}", "", ""]
        writer.write("\r\n".join(lines).encode() + data)
        await writer.drain()

    async def _stream(
        self, writer: asyncio.StreamWriter, events: list[dict[str, Any]] | None, forever: bool
    ) -> None:
        head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
        writer.write((head + "Transfer-Encoding: chunked\r\n\r\n").encode())
        await writer.drain()
        payloads = [f"data: {json.dumps(e)}\n\n".encode() for e in events or []]
        if not forever:
            payloads.append(b"data: [DONE]\n\n")
        for data in payloads:
            await asyncio.sleep(self.pause)
            writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            await writer.drain()
        if forever:
            await asyncio.Event().wait()  # until the client leaves (Stop)
        writer.write(b"0\r\n\r\n")
        await writer.drain()
