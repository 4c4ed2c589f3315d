"""The tests' own loopback servers close every connection they accepted when they stop,
also one a client opened in the instant the server stopped (the window's server lane
polls ``/metrics`` from its own thread, so a connection can be mid-accept when a test
leaves the server's ``async with``; the socket was then left to the garbage collector,
whose ResourceWarning failed a later test's teardown)."""

from __future__ import annotations

import asyncio
import gc
import socket
import warnings
from typing import Any

import pytest
from scripted_server import ScriptedServer

from streamserver import ReplayServer


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "make", [lambda: ReplayServer(200, {}, [b"x"]), ScriptedServer], ids=["replay", "scripted"]
)
async def test_a_connection_accepted_as_the_server_stops_is_closed(make: Any) -> None:
    server = make()
    async with server:
        port = int(server.url.split(":")[2].split("/")[0])
        # Connected at the kernel level (in the listen backlog) but not yet seen by the
        # loop: exactly the state a poller's request is in when the test ends.
        late = [socket.create_connection(("127.0.0.1", port)) for _ in range(4)]
        # One loop iteration runs the listener's accept (after this task's step), the next
        # resumes this task before the accepted connections reach the server's protocol.
        await asyncio.sleep(0)
        await asyncio.sleep(0)
    try:
        # Give the loop time to hand over any connection still on its way, then collect:
        # a transport asyncio made but never handed over warns as it is collected.
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ResourceWarning)
            for _ in range(10):
                await asyncio.sleep(0)
            gc.collect()
        unclosed = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
        assert unclosed == [], f"connections left to the garbage collector: {unclosed}"
        left_open = [w for w in server.connections.accepted if not w.is_closing()]
        assert left_open == [], f"{len(left_open)} accepted connections left open"
    finally:
        for sock in late:
            sock.close()


@pytest.mark.asyncio
async def test_stopping_does_not_wait_on_a_client_that_stopped_reading() -> None:
    """A client that keeps its socket open but reads nothing (a stream stopped mid-answer)
    leaves the server's writes unsent; stopping the server aborts that connection rather
    than waiting for a graceful close that never comes."""
    server = ReplayServer(200, {}, [b"x" * 1_000_000] * 20, pause=0.0)
    await server.__aenter__()
    port = int(server.url.split(":")[2])
    client = socket.create_connection(("127.0.0.1", port))
    try:
        client.sendall(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
        # the server has the request and is blocked writing to a client that does not read
        for _ in range(1000):
            if server.requests:
                break
            await asyncio.sleep(0.01)
        assert server.requests, "the server never received the request"
        await asyncio.wait_for(server.__aexit__(None, None, None), 10)
        assert all(w.is_closing() for w in server.connections.accepted)
    finally:
        client.close()
