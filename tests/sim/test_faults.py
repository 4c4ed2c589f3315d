"""Fault injection in the built-in endpoint, seen on the wire: what bytes each fault puts
on a real loopback connection, and that the emission log records exactly what was
delivered. (What clients make of each fault: ``tests/core/measure/test_faults_engine.py`` and
``tests/ui/run/test_faults_window.py``.)"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
import pytest_asyncio

from splitdesk.cli.main import main
from splitdesk.sim.faults import (
    CATALOGUE,
    Fault,
    FaultSchedule,
    cut_inside_characters,
    pad_event,
    parse_fault,
    parse_rule,
)

CHAT = {
    "model": "splitdesk-sim",
    "stream": True,
    "max_tokens": 12,
    "messages": [{"role": "user", "content": "Why is the sky blue?"}],
}


# -- parsing and drawing ------------------------------------------------------------------------


def test_fault_specs_parse_and_print_as_written() -> None:
    assert parse_fault("reset-mid:5") == Fault("reset-mid", 5.0)
    assert parse_fault("reset-mid:5").label == "reset-mid:5"
    assert parse_fault("stall-mid:2.5").value == 2.5
    assert parse_fault("malformed").value == 3  # the default
    assert parse_fault("hang").value is None  # until the client leaves
    rule = parse_rule("reset-mid:5@0.2")
    assert rule.fault == Fault("reset-mid", 5.0) and rule.share == 0.2
    assert rule.label == "reset-mid:5@0.2"
    assert parse_rule("chaos@0.3").fault is None


@pytest.mark.parametrize(
    ("spec", "reason"),
    [
        ("teleport", "unknown fault 'teleport'; known: refuse, reset"),
        ("refuse:3", "takes no argument"),
        ("reset-mid:two", "K must be a number"),
        ("reset-mid:1.5", "K must be a whole number"),
        ("status:418", "CODE must be one of 401, 404, 429, 500, 503"),
        ("stall-mid:-1", "finite number >= 0"),
        ("reset@1.5", "between 0 and 1"),
        ("reset@x", "must be a number"),
    ],
)
def test_bad_fault_specs_say_why(spec: str, reason: str) -> None:
    with pytest.raises(ValueError, match=re.escape(reason)):
        parse_rule(spec)


def test_shares_are_drawn_with_the_seed_and_add_up() -> None:
    rules = [parse_rule("reset-mid:5@0.2"), parse_rule("no-end@0.1")]
    schedule = FaultSchedule(rules, seed=7)
    picks = [schedule.pick({}, "q") for _ in range(2000)]
    again = FaultSchedule(rules, seed=7)
    assert picks == [again.pick({}, "q") for _ in range(2000)]  # reproducible
    share_reset = picks.count(Fault("reset-mid", 5.0)) / len(picks)
    share_no_end = picks.count(Fault("no-end")) / len(picks)
    assert 0.17 < share_reset < 0.23 and 0.08 < share_no_end < 0.12
    assert picks.count(None) == len(picks) - picks.count(Fault("reset-mid", 5.0)) - picks.count(
        Fault("no-end")
    )
    with pytest.raises(ValueError, match=r"add up to 1\.2"):
        FaultSchedule([parse_rule("reset@0.7"), parse_rule("refuse@0.5")])


def test_header_and_prompt_beginnings_override_the_draw() -> None:
    schedule = FaultSchedule([parse_rule("refuse")], by_prompt={"[q1]": Fault("no-end")})
    assert schedule.pick({"x-splitdesk-fault": "status:429"}, "[q1] x") == Fault("status", 429)
    assert schedule.pick({"x-splitdesk-fault": "none"}, "x") is None
    assert schedule.pick({}, "[q1] Why?") == Fault("no-end")
    assert schedule.pick({}, "Answer each… [q1] Why?") == Fault("refuse")  # begins, not contains


def test_chaos_draws_every_kind_of_fault_with_bounded_waits() -> None:
    schedule = FaultSchedule([parse_rule("chaos")], seed=3)
    drawn = [schedule.pick({}, "q") for _ in range(500)]
    assert {f.name for f in drawn if f} == set(CATALOGUE)
    for f in drawn:
        assert f is not None and (f.kind.arg == "" or f.value is not None)  # no endless hang
        if f.name in ("hang", "stall-headers", "stall-mid"):
            assert f.value is not None and f.value <= 3.0


def test_cuts_fall_inside_characters_and_padding_keeps_json() -> None:
    data = 'data: {"t":"déjà 🙂"}\n\n'.encode()
    pieces = cut_inside_characters(data)
    assert b"".join(pieces) == data and len(pieces) == 4  # é, à, 🙂: three cuts
    for piece in pieces[1:]:
        assert 0x80 <= piece[0] <= 0xBF  # each later piece starts inside a character
    padded = pad_event(b'data: {"a":1}\n\n', 100)
    assert len(padded) == 100 and json.loads(padded[6:].strip()) == {"a": 1}


def test_sim_command_refuses_bad_faults_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["sim", "--fault", "teleport"])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "argument --fault: unknown fault 'teleport'" in err
    assert main(["sim", "--fault", "reset@0.7", "--fault", "refuse@0.5"]) == 2
    assert "the fault shares add up to 1.2; at most 1" in capsys.readouterr().err


def test_sim_help_documents_every_fault(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["sim", "--help"])
    out = capsys.readouterr().out
    for kind in CATALOGUE.values():
        assert f"\n    {kind.name}" in out
    assert "--fault NAME[:ARG][@SHARE]" in out and "--chaos SEED" in out
    assert "x-splitdesk-fault" in out


# -- on the wire -------------------------------------------------------------------------------


class RawReply:
    """A response read off a raw socket: status line and headers, the HTTP/1.1 chunks'
    payloads as framed by the server, and how the connection ended."""

    def __init__(self) -> None:
        self.head = b""
        self.chunks: list[bytes] = []
        self.complete = False  # the terminating zero-size chunk arrived
        self.reset = False  # ECONNRESET
        self.closed = False  # EOF

    @property
    def body(self) -> bytes:
        return b"".join(self.chunks)

    @property
    def status(self) -> int:
        return int(self.head.split(b" ", 2)[1]) if self.head else 0

    def header(self, name: str) -> str | None:
        for line in self.head.decode("latin-1").split("\r\n")[1:]:
            key, _, value = line.partition(":")
            if key.strip().lower() == name:
                return value.strip()
        return None


def _read_raw(root: str, path: str, body: dict[str, Any], fault: str) -> RawReply:
    url = urlsplit(root)
    payload = json.dumps(body).encode()
    reply = RawReply()
    with socket.create_connection((url.hostname or "", url.port or 80), timeout=10) as sock:
        sock.sendall(
            f"POST {path} HTTP/1.1\r\nhost: {url.netloc}\r\ncontent-type: application/json\r\n"
            f"x-splitdesk-fault: {fault}\r\ncontent-length: {len(payload)}\r\n\r\n".encode()
            + payload
        )
        stream = sock.makefile("rb")
        try:
            head = b""
            while not head.endswith(b"\r\n\r\n"):
                line = stream.readline()
                if not line:
                    reply.closed = True
                    return reply
                head += line
            reply.head = head
            if reply.header("transfer-encoding") != "chunked":
                reply.chunks.append(stream.read(int(reply.header("content-length") or 0)))
                reply.complete = True
                return reply
            while True:
                size_line = stream.readline()
                if not size_line:
                    reply.closed = True
                    return reply
                size = int(size_line.strip(), 16)
                data = stream.read(size + 2)
                if size == 0:
                    reply.complete = True
                    return reply
                reply.chunks.append(data[:-2])
        except ConnectionResetError:
            reply.reset = True
        finally:
            stream.close()
    return reply


async def raw_post(root: str, path: str, body: dict[str, Any], fault: str) -> RawReply:
    """POST ``body`` with ``x-splitdesk-fault: fault`` over a plain blocking socket (in a
    thread) and read the reply as the server framed it: no HTTP library in between to join
    pieces, and every byte the kernel received is read before a reset is reported (asyncio's
    StreamReader would raise the reset first and drop what it had buffered)."""
    return await asyncio.to_thread(_read_raw, root, path, body, fault)


async def trace(root: str, reply: RawReply) -> dict[str, Any]:
    rid = reply.header("x-request-id")
    assert rid is not None
    async with httpx.AsyncClient(timeout=10) as client:
        response = await client.get(f"{root}/_splitdesk/trace/{rid}")
        response.raise_for_status()
        data: dict[str, Any] = response.json()
        return data


def sse_texts(body: bytes) -> list[str]:
    """The chat deltas' texts of an OpenAI chat stream body."""
    out = []
    for block in body.decode("utf-8").split("\n\n"):
        if block.startswith("data: {"):
            event = json.loads(block[6:])
            if "error" in event:
                continue
            delta = event["choices"][0]["delta"]
            if delta.get("content"):
                out.append(delta["content"])
    return out


@pytest_asyncio.fixture
async def sim(sim_batching: Any) -> AsyncIterator[str]:
    """The shared built-in endpoint's root, its fault rules cleared again afterwards."""
    yield sim_batching.url
    async with httpx.AsyncClient(timeout=10) as client:
        (await client.post(f"{sim_batching.url}/_splitdesk/faults", json={})).raise_for_status()


@pytest.mark.asyncio
async def test_refuse_closes_and_reset_resets_before_any_byte(sim: str) -> None:
    refused = await raw_post(sim, "/v1/chat/completions", CHAT, "refuse")
    assert refused.closed and refused.head == b"" and not refused.reset
    reset = await raw_post(sim, "/v1/chat/completions", CHAT, "reset")
    assert reset.reset and reset.head == b""


@pytest.mark.asyncio
async def test_reset_mid_stream_comes_after_exactly_k_token_events(sim: str) -> None:
    reply = await raw_post(sim, "/v1/chat/completions", CHAT, "reset-mid:4")
    assert reply.status == 200 and reply.reset and not reply.complete
    texts = sse_texts(reply.body)
    assert len(texts) == 4  # every byte written before the reset reached the client
    record = await trace(sim, reply)
    assert record["fault"] == "reset-mid:4" and record["sent_events"] == 4
    assert record["sent_text"] == "".join(texts) and record["sent_bytes"] == len(reply.body)


@pytest.mark.asyncio
@pytest.mark.parametrize("fault", ["no-end", "error-event:2", "malformed:2", "none"])
async def test_the_log_counts_every_body_byte_delivered(sim: str, fault: str) -> None:
    reply = await raw_post(sim, "/v1/chat/completions", CHAT, fault)
    assert reply.complete  # a clean end of the body, whatever came before
    record = await trace(sim, reply)
    assert record["sent_bytes"] == len(reply.body)
    body = reply.body.decode("utf-8")
    if fault == "no-end":
        assert "[DONE]" not in body and '"finish_reason":"stop"' not in body
        assert record["sent_events"] == 12
    elif fault == "error-event:2":
        assert body.rstrip().endswith('"type":"server_error"}}') and record["sent_events"] == 2
    elif fault == "malformed:2":
        assert body.endswith('"unterminated\n\n') and record["sent_events"] == 2
    else:
        assert body.endswith("data: [DONE]\n\n")
    if fault != "malformed:2":
        assert "".join(sse_texts(reply.body)) == record["sent_text"]


@pytest.mark.asyncio
async def test_split_utf8_cuts_chunks_inside_characters(sim: str) -> None:
    reply = await raw_post(sim, "/v1/chat/completions", CHAT, "split-utf8")
    assert reply.complete
    inside = [c for c in reply.chunks if 0x80 <= c[0] <= 0xBF]
    assert len(inside) >= 3  # chunks that begin in the middle of a character
    text = "".join(sse_texts(reply.body))  # the joined bytes are valid UTF-8
    assert any(ord(c) > 0xFFFF for c in text) and any(0x7FF < ord(c) <= 0xFFFF for c in text)
    assert text == (await trace(sim, reply))["sent_text"]


@pytest.mark.asyncio
async def test_huge_event_arrives_whole_and_valid(sim: str) -> None:
    reply = await raw_post(sim, "/v1/chat/completions", CHAT, "huge:500000")
    assert reply.complete
    assert max(len(c) for c in reply.chunks) == 500000
    assert len(sse_texts(reply.body)) == 12


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("path", "fault", "status", "shape"),
    [
        ("/v1/chat/completions", "status:429", 429, '"type":"rate_limit_error"'),
        ("/v1/messages", "status:401", 401, '"type":"error","error":{"type":"authentication'),
        ("/api/chat", "status:503", 503, '{"error":"The server is overloaded'),
        ("/generate_stream", "html:502", 502, "<title>502 Bad Gateway</title>"),
    ],
)
async def test_error_answers_in_the_dialects_own_shape(
    sim: str, path: str, fault: str, status: int, shape: str
) -> None:
    body = dict(CHAT)
    if path == "/generate_stream":
        body = {"inputs": "Why is the sky blue?", "parameters": {"max_new_tokens": 12}}
    reply = await raw_post(sim, path, body, fault)
    assert reply.status == status and shape in reply.body.decode()
    if status in (429, 503):
        assert reply.header("retry-after") == "1"
    assert (await trace(sim, reply))["fault"] == fault


@pytest.mark.asyncio
async def test_a_bad_fault_header_is_a_400_naming_it(sim: str) -> None:
    reply = await raw_post(sim, "/v1/chat/completions", CHAT, "teleport")
    assert reply.status == 400
    assert "x-splitdesk-fault: unknown fault 'teleport'" in reply.body.decode()


@pytest.mark.asyncio
async def test_rules_set_while_running_are_applied_and_listed(sim: str) -> None:
    async with httpx.AsyncClient(base_url=sim, timeout=10) as client:
        bad = await client.post("/_splitdesk/faults", json={"faults": ["reset@2"]})
        assert bad.status_code == 400 and "between 0 and 1" in bad.text
        set_ = await client.post(
            "/_splitdesk/faults", json={"faults": ["status:500"], "by_prompt": {"[x]": "no-end"}}
        )
        assert set_.json()["faults"] == ["status:500"]
        assert (await client.get("/_splitdesk/faults")).json()["by_prompt"] == {"[x]": "no-end"}
        body = {**CHAT, "stream": False}
        assert (await client.post("/v1/chat/completions", json=body)).status_code == 500
        tagged = {**body, "messages": [{"role": "user", "content": "[x] why?"}]}
        # no-end changes a stream only: a whole (non-streamed) reply is unaffected
        assert (await client.post("/v1/chat/completions", json=tagged)).status_code == 200


def test_sim_command_injects_its_fault_rules() -> None:
    """``splitdesk sim --fault …`` as a user starts it: the rules apply from the first
    request, and the server says on stderr what it injects."""
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "splitdesk", "sim", "--port", "0", "--watch-stdin"),
            *("--fault", "status:503@1", "--fault-seed", "3"),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None and proc.stdin is not None
    try:
        line = proc.stdout.readline()  # blocks until the server listens (or exits)
        assert line.startswith("listening on "), proc.stderr.read()
        root = line.split()[-1]
        response = httpx.post(f"{root}/v1/chat/completions", json=CHAT, timeout=10)
        assert response.status_code == 503 and response.headers["retry-after"] == "1"
        assert httpx.get(f"{root}/_splitdesk/faults").json()["faults"] == ["status:503"]
    finally:
        proc.stdin.close()  # the server exits when its stdin closes
        proc.wait(10)
        err = proc.stderr.read()
        proc.stdout.close()
        proc.stderr.close()
    assert "injecting faults: status:503 (seed 3)" in err
