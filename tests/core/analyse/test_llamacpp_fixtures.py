"""A real llama.cpp server read right: runs, bodies and streams recorded once from
``llama-server`` with 4 and 8 slots (tests/fixtures/llamacpp/README.md says which build,
flags and model), read by the diagnosis, the limit probe and the metrics parser."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from loopback import Connections

from paths import FIXTURES
from splitdesk.core.analyse.diagnosis import decompose_groups, diagnose_state
from splitdesk.core.analyse.metrics import request_figures, summarize
from splitdesk.core.files.recording import load_recording, rebuild_state
from splitdesk.core.measure.server_limits import limit_sources, probe_limit, read_limit
from splitdesk.core.measure.server_metrics import read_load
from splitdesk.core.run.run_state import RunState

HERE = FIXTURES / "llamacpp"


def runs(name: str) -> dict[str, RunState]:
    rec = load_recording(HERE / name)
    return {r.mode: rebuild_state(r) for r in rec.runs}


def test_four_slots_eight_questions_one_after_another_is_slot_limited() -> None:
    state = runs("runs-np4-8q.splitdesk.json")["one-after-another"]
    d = diagnose_state(state)
    assert d.code == "slot-limited", d.to_json()
    e = d.evidence
    assert (e["slots"], e["queued"], e["waves"]) == (4, 4, "4+4")
    assert e["lone_from"] == "separate" and e["rate_ratio"] < 1.0
    # what 4 slots allow concurrency to buy, against what the sequential baseline measured
    dec = decompose_groups(summarize(state).groups)
    assert dec is not None
    assert e["slot_speedup"] == pytest.approx(dec.concurrency_factor, rel=0.15)
    assert f"(measured {dec.concurrency_factor:.2f}× sequential → parallel)" in d.text
    assert [n.code for n in d.notes] == ["no-markers"]  # a random model writes no markers


def test_four_slots_side_by_side_the_combined_request_holds_one_and_a_connection_waited() -> None:
    state = runs("runs-np4-8q.splitdesk.json")["side-by-side"]
    d = diagnose_state(state)
    assert d.code == "slot-limited" and d.evidence["slots"] == 4, d.to_json()
    assert "the combined request held one of the slots" in d.text
    # llama-server's HTTP threads were all held by keep-alive connections: the ninth
    # connection was answered only when one timed out (5 s), and the run started that late
    note = next(n for n in d.notes if n.code == "connection-wait")
    assert note.evidence["waited"] == 1
    assert note.evidence["connection_wait_s"] == pytest.approx(5.1, abs=0.2)
    first_send = min(t.t_send or 0.0 for t in state.requests)
    assert first_send == pytest.approx(5.14, abs=0.05)
    waits = sorted(request_figures(t).connection_wait_s or 0.0 for t in state.requests)
    assert waits[-1] > 5.0 and waits[-2] < 0.05


def test_eight_slots_eight_questions_batch_without_a_queue() -> None:
    state = runs("runs-np8-8q.splitdesk.json")["one-after-another"]
    d = diagnose_state(state)
    assert d.code == "batching", d.to_json()
    # one CPU thread shared by eight streams: each well below its lone rate, named so
    assert d.evidence["lone_from"] == "separate" and d.evidence["rate_ratio"] < 0.6
    assert "of its lone rate" in d.text


def test_props_and_slots_bodies_give_the_configured_slots() -> None:
    by_path = {s.path: s for s in limit_sources() if s.family == "llamacpp"}
    for tag, slots in (("np4", 4), ("np8", 8)):
        props = (HERE / f"props-{tag}.json").read_text("utf-8")
        assert read_limit(by_path["/props"], props) == slots
        busy = (HERE / f"slots-{tag}-busy.json").read_text("utf-8")
        assert read_limit(by_path["/slots"], busy) == slots
    # another server's page or an HTML error holds no limit
    assert read_limit(by_path["/props"], "<html>502</html>") is None
    assert read_limit(by_path["/slots"], '{"error": "not found"}') is None


def test_the_busy_metrics_read_as_running_and_deferred() -> None:
    load = read_load((HERE / "metrics-np4-busy.txt").read_text("utf-8"))
    assert load is not None and load.family == "llamacpp"
    assert (load.running, load.waiting) == (4, 4)  # 4 slots busy, 4 requests deferred
    assert load.kv_usage is None  # this build publishes no KV gauge


@contextlib.asynccontextmanager
async def serve(bodies: dict[str, tuple[int, str]]) -> AsyncIterator[int]:
    """A loopback server answering GET ``path`` with ``bodies[path]`` (status, body), 404
    elsewhere; yields its port."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            path = head.split(b" ")[1].decode()
            status, body = bodies.get(path, (404, "not found"))
            data = body.encode()
            writer.write(
                f"HTTP/1.1 {status} X\r\ncontent-length: {len(data)}\r\n\r\n".encode() + data
            )
            await writer.drain()

    connections = Connections(handle)
    server = await asyncio.start_server(connections.accept, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        await connections.close(server)


@pytest.mark.asyncio
async def test_the_probe_asks_the_server_and_reads_its_slots() -> None:
    props = (HERE / "props-np4.json").read_text("utf-8")
    async with serve({"/props": (200, props)}) as port:
        limit = await probe_limit(f"http://127.0.0.1:{port}/v1")
    assert limit is not None and limit.slots == 4
    assert limit.where == "llama.cpp server /props total_slots"
    assert limit.to_json()["names"] == "slots (-np)"
    slots = (HERE / "slots-np8-idle.json").read_text("utf-8")
    async with serve({"/props": (500, "<html>oops</html>"), "/slots": (200, slots)}) as port:
        limit = await probe_limit(f"http://127.0.0.1:{port}/v1")
    assert limit is not None and limit.slots == 8 and limit.source.path == "/slots"
    async with serve({}) as port:  # a server that publishes none
        assert await probe_limit(f"http://127.0.0.1:{port}/v1") is None
    assert await probe_limit("not a url") is None


def test_the_fixtures_readme_names_every_file() -> None:
    readme = (HERE / "README.md").read_text("utf-8")
    for path in Path(HERE).iterdir():
        if path.name != "README.md":
            assert f"`{path.name}`" in readme, path.name
