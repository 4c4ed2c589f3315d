"""Arrival stamps: the network backend the runner's HTTP client reads through."""

from __future__ import annotations

import asyncio
import sys
import time

import httpcore
import httpx
import pytest

from splitdesk.core.measure import arrivals
from splitdesk.core.measure.arrivals import (
    KernelStampedStream,
    TimestampingBackend,
    arrival_clock,
    install,
)
from splitdesk.core.measure.runner import RunConfig, Runner
from splitdesk.core.run.plans import make_plan
from splitdesk.core.run.run_state import RunState
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.providers.base import EndpointConfig
from streamserver import ReplayServer


@pytest.mark.asyncio
async def test_reads_carry_the_kernel_arrival_time_not_the_read_time() -> None:
    written: list[int] = []
    go = asyncio.Event()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for piece in (b"one", b"two"):
            await go.wait()
            go.clear()
            writer.write(piece)
            await writer.drain()
            written.append(time.perf_counter_ns())
        writer.close()
        await writer.wait_closed()

    server = await asyncio.start_server(handler, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        stream = await TimestampingBackend().connect_tcp("127.0.0.1", port, timeout=5)
        assert isinstance(stream, KernelStampedStream)
        go.set()
        await asyncio.sleep(0.2)  # the process is "busy": the bytes wait in the kernel
        read_at = time.perf_counter_ns()
        assert await stream.read(100) == b"one"
        assert stream.last_arrival_ns is not None
        if stream.kernel_stamps:  # Linux: the time the bytes arrived, not when we read them
            assert abs(stream.last_arrival_ns - written[0]) < 5_000_000
            assert read_at - stream.last_arrival_ns > 150_000_000
        go.set()
        assert await stream.read(100) == b"two"
        assert written[1] - 5_000_000 < stream.last_arrival_ns
        assert await stream.read(100) == b""  # end of stream
        await stream.aclose()


@pytest.mark.asyncio
async def test_read_timeout_and_refused_connection() -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # until the client hangs up
        writer.close()
        await writer.wait_closed()

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        stream = await TimestampingBackend().connect_tcp("127.0.0.1", port, timeout=5)
        with pytest.raises(httpcore.ReadTimeout):
            await stream.read(10, timeout=0.05)
        await stream.aclose()
        await asyncio.sleep(0.05)  # the handler sees the hang-up and closes
    with pytest.raises(httpcore.ConnectError):
        await TimestampingBackend().connect_tcp("127.0.0.1", port, timeout=5)


@pytest.mark.asyncio
async def test_the_runner_stamps_where_bytes_arrive() -> None:
    """If an httpx upgrade moved the pool, stamps would silently fall back: fail instead."""
    transport = httpx.AsyncHTTPTransport()
    assert install(transport)
    await transport.aclose()
    chunks = [b'data: {"choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\n', b"data: [DONE]\n\n"]
    async with ReplayServer(200, {"content-type": "text/event-stream"}, chunks) as server:
        state = RunState()
        runner = Runner(
            RunConfig(EndpointConfig(server.url + "/v1", "openai-chat", "m")), state.apply
        )
        await runner.run(["q"], make_plan("parallel", ["q"], CombinedTemplate(), 8))
    assert runner.arrival_stamps
    assert state.requests[0].text == "Hi"
    async with httpx.AsyncClient() as client:  # a plain stream has no arrivals: the fallback clock
        response = httpx.Response(200, request=httpx.Request("GET", "http://x"))
        assert arrival_clock(response, time.perf_counter_ns) is time.perf_counter_ns
        del client


@pytest.mark.asyncio
async def test_a_cancelled_read_is_a_cancellation_not_a_timeout() -> None:
    """Stop cancels the reading task: the stream must say so (not "read timeout")."""

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()
        writer.close()
        await writer.wait_closed()

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        stream = await TimestampingBackend().connect_tcp("127.0.0.1", port, timeout=5)
        task = asyncio.ensure_future(stream.read(10, timeout=30))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await stream.aclose()
        await asyncio.sleep(0.05)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SO_TIMESTAMPNS: Linux only")
def test_the_process_keeps_the_kernel_stamping_what_it_receives() -> None:
    """One socket keeps asking the kernel for receive times for the process's life, so a
    new connection's first packet is stamped (no deferred switch-on to race)."""
    assert arrivals.keep_kernel_stamps() is True
    keeper = arrivals._keeper[0]
    TimestampingBackend()  # a backend asks again: the same socket, stamps still flowing
    assert arrivals._keeper == [keeper]
    assert arrivals.keep_kernel_stamps() is True


@pytest.mark.asyncio
async def test_a_silent_connection_times_out_among_busy_ones() -> None:
    """Read timeouts share one timer per loop (``ReadDeadlines``): a connection whose
    server went silent still times out on time while its neighbours keep reading, and a
    connection that gets data before its deadline never times out."""

    async def ticking(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for _ in range(15):  # a byte every 20 ms for 0.3 s, then the end
            writer.write(b"x")
            await writer.drain()
            await asyncio.sleep(0.02)
        writer.close()

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # until the client hangs up
        writer.close()
        await writer.wait_closed()

    busy = await asyncio.start_server(ticking, "127.0.0.1", 0)
    quiet = await asyncio.start_server(silent, "127.0.0.1", 0)
    backend = TimestampingBackend()
    async with busy, quiet:
        a = await backend.connect_tcp("127.0.0.1", busy.sockets[0].getsockname()[1], timeout=5)
        b = await backend.connect_tcp("127.0.0.1", quiet.sockets[0].getsockname()[1], timeout=5)

        async def read_all() -> int:
            got = 0
            while await a.read(10, timeout=0.25):  # data every 20 ms: never times out
                got += 1
            return got

        reading = asyncio.ensure_future(read_all())
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        with pytest.raises(httpcore.ReadTimeout):  # not asyncio's TimeoutError after 5 s
            await asyncio.wait_for(b.read(10, timeout=0.1), 5)
        waited = loop.time() - t0
        assert 0.09 <= waited < 2.0, f"the silent read timed out after {waited:.3f} s, not 0.1 s"
        assert await asyncio.wait_for(reading, 10) >= 1
        await a.aclose()
        await b.aclose()
        await asyncio.sleep(0.05)  # the handlers see the hang-ups and close
