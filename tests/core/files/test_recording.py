"""Recordings: a real run on the built-in endpoint saved and loaded back unchanged; every
kind of bad file gives one clear line naming the file and the field; old versions load."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from paths import RECORDINGS
from splitdesk.core.analyse.metrics import summarize
from splitdesk.core.files.recording import (
    FORMAT_VERSION,
    GZ_SUFFIX,
    EventLog,
    QuestionRecord,
    Recording,
    RecordingError,
    RunSettingsRecord,
    autosave,
    encode_recording,
    endpoint_record,
    figures_of,
    load_recording,
    rebuild_state,
    recording_from_bytes,
    run_record,
    save_recording,
    schedule,
    suggested_name,
)
from splitdesk.core.measure.runner import RunConfig, Runner
from splitdesk.core.run.events import RequestEnded, TextReceived
from splitdesk.core.run.plans import make_plan
from splitdesk.core.run.run_state import RunState
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.providers.base import EndpointConfig, ErrorKind, RequestError

QUESTIONS = ["What is 2+2?", "Name a colour.", "Why is the sky blue?"]


def record_live(sim: Any, secret: str | None = None) -> tuple[Recording, RunState]:
    """Run QUESTIONS side by side on ``sim`` and record it."""
    ep = EndpointConfig(sim.openai_base_url, "openai-chat", "splitdesk-sim")
    plan = make_plan("side-by-side", QUESTIONS, CombinedTemplate(), 512)
    state = RunState()
    log = EventLog()
    state.subscribe(log.append)
    asyncio.run(Runner(RunConfig(ep), state.apply).run(QUESTIONS, plan))
    rec = Recording(
        created_at=datetime.now(UTC),
        source="window",
        endpoint=endpoint_record(
            f"{sim.openai_base_url}?api-key={secret}" if secret else sim.openai_base_url,
            "openai-chat",
            "splitdesk-sim",
            preset="builtin",
            profile="batching",
            headers={"X-Secret-Header": f"Bearer {secret}"} if secret else {},
            secret=secret,
        ),
        questions=[QuestionRecord(text=q) for q in QUESTIONS],
        settings=RunSettingsRecord(mode="side-by-side", max_tokens=512),
        runs=[
            run_record(
                state,
                label="side by side",
                mode="side-by-side",
                started_at=log.started_at,
                events=log.events,
            )
        ],
    )
    return rec, state


@pytest.fixture(scope="module")
def live(sim_batching: Any) -> tuple[Recording, RunState]:
    return record_live(sim_batching)


@pytest.mark.parametrize("name", ["run.splitdesk.json", f"run{GZ_SUFFIX}"])
def test_round_trip_keeps_every_event_and_figure(
    live: tuple[Recording, RunState], tmp_path: Path, name: str
) -> None:
    rec, state = live
    path = tmp_path / name
    save_recording(rec, path)
    if name.endswith(".gz"):
        assert path.read_bytes()[:2] == b"\x1f\x8b"
    loaded = load_recording(path)
    assert loaded.runs[0].events == rec.runs[0].events
    rebuilt = rebuild_state(loaded.runs[0])
    assert [r.text for r in rebuilt.requests] == [r.text for r in state.requests]
    assert summarize(rebuilt) == summarize(state)
    assert figures_of(rebuilt) == loaded.runs[0].figures
    assert loaded.runs[0].figures["speedup"] == pytest.approx(summarize(state).speedup, abs=1e-6)
    assert loaded.question_texts == QUESTIONS
    assert not list(tmp_path.glob("*.tmp"))  # the temporary file is gone


def test_rebuild_until_a_moment_shows_the_state_then(live: tuple[Recording, RunState]) -> None:
    rec, state = live
    run = rec.runs[0]
    due = schedule(run)
    assert due == sorted(due)
    end = run.duration_s
    whole = next(r for r in state.requests if r.group == "combined")
    assert whole.first_text_t is not None and whole.last_token_t is not None
    moment = (whole.first_text_t + whole.last_token_t) / 2  # mid-way through its reply
    mid = rebuild_state(run, moment)
    due_now = [e for e, d in zip(run.events, due, strict=True) if d <= moment]
    assert mid.events_applied == len(due_now) < len(run.events)
    assert not mid.finished
    combined = mid.requests[whole.req]
    expected = "".join(
        e.text
        for e in due_now
        if isinstance(e, TextReceived) and e.req == whole.req and not e.reasoning
    )
    assert combined.text == expected
    assert 0 < len(expected) < len(whole.text)
    assert combined.state == "streaming"
    assert rebuild_state(run, end).finished


def test_no_key_header_value_or_secret_query_in_the_file(sim_batching: Any, tmp_path: Path) -> None:
    secret = "sk-LEAKCHECK-0123456789abcdef"
    rec, _ = record_live(sim_batching, secret)
    # a server echoing the key into an answer: the text is masked on save
    run = rec.runs[0]
    echoed = TextReceived(run.events[-1].t, 0, f"key is {secret}")
    rec2 = rec.model_copy(
        update={
            "runs": [run.model_copy(update={"events": [*run.events[:-1], echoed, run.events[-1]]})]
        }
    )
    path = tmp_path / "k.splitdesk.json"
    save_recording(rec2, path, secrets=[secret])
    text = path.read_text()
    assert secret not in text and secret[:8] not in text
    assert "X-Secret-Header" in text and "Bearer" not in text  # header name only
    assert "key is ***" in text


def test_suggested_name_compresses_large_recordings(live: tuple[Recording, RunState]) -> None:
    rec, _ = live
    assert suggested_name(rec, 10).endswith(".splitdesk.json")
    assert suggested_name(rec, 5_000_000).endswith(GZ_SUFFIX)


def test_save_is_atomic_when_the_write_fails(
    live: tuple[Recording, RunState], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec, _ = live
    path = tmp_path / "r.splitdesk.json"
    path.write_text("old content")

    def boom(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", boom)  # the disk fills up mid-save
    with pytest.raises(RecordingError, match="could not save: No space left"):
        save_recording(rec, path)
    assert path.read_text() == "old content"  # the old file is whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.splitdesk.json"]


# -- old versions ---------------------------------------------------------------------------------


def test_every_version_fixture_loads() -> None:
    fixtures = sorted(RECORDINGS.glob("v*.splitdesk.json"))
    versions = {int(p.name[1:].split(".")[0]) for p in fixtures}
    assert versions == set(range(1, FORMAT_VERSION + 1)), "one fixture per format version"
    for path in fixtures:
        rec = load_recording(path)
        assert rec.version == FORMAT_VERSION
        state = rebuild_state(rec.runs[0])
        assert state.finished and all(r.outcome == "done" for r in state.requests)
        # the headline figures recomputed from the events match the ones saved with them
        # (other keys may be added to the figures as the metrics grow)
        now, then = figures_of(state), rec.runs[0].figures
        assert now["speedup"] == pytest.approx(then["speedup"], abs=1e-6)
        for group, g in then["groups"].items():
            assert now["groups"][group]["makespan_s"] == pytest.approx(g["makespan_s"], abs=1e-6)


# -- the corrupt-file matrix ------------------------------------------------------------------


def _doc() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((RECORDINGS / "v1.splitdesk.json").read_text())
    return doc


def _write(tmp_path: Path, data: bytes | str) -> Path:
    path = tmp_path / "bad.splitdesk.json"
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def _edit(doc: dict[str, Any], where: tuple[Any, ...], value: Any) -> str:
    target = doc
    for key in where[:-1]:
        target = target[key]
    target[where[-1]] = value
    return json.dumps(doc)


def bad_files(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """name → (path, what the message must say)."""
    full = (RECORDINGS / "v1.splitdesk.json").read_bytes()
    junk = bytes(range(256)) * (50 * 1024 * 1024 // 256)  # 50 MB, not text
    folder = tmp_path / "folder.splitdesk.json"
    folder.mkdir()
    locked = tmp_path / "locked.splitdesk.json"
    locked.write_bytes(full)
    locked.chmod(0)
    cases: dict[str, tuple[Path, str]] = {}

    def add(name: str, data: bytes | str, needle: str) -> None:
        path = tmp_path / f"{name}.splitdesk.json"
        path.write_bytes(data.encode() if isinstance(data, str) else data)
        cases[name] = (path, needle)

    add("truncated", full[: len(full) // 2], "truncated")
    add("truncated-gzip", gzip.compress(full)[:400], "truncated")
    add("not-json", "Hello, this is a letter.\n", "not valid JSON at line 1, column 1")
    add("empty", b"", "empty")
    add("junk", junk, "not a recording")
    add("a-list", "[1, 2, 3]", "the file holds a list, not a recording object")
    add("other-json", '{"hello": 1}', "format: not a splitdesk recording")
    add(
        "future and not a recording",
        json.dumps({"format": "splitdesk-recording", "version": FORMAT_VERSION + 5}),
        f"recording format {FORMAT_VERSION + 5} is newer than this splitdesk",
    )
    add(
        "wrong-type-text",
        _edit(_doc(), ("runs", 0, "events", 20, "text"), 42),
        "runs[0].events[20]: text:",
    )
    add("wrong-type-model", _edit(_doc(), ("endpoint", "model"), ["x"]), "endpoint.model:")
    add("missing-field", _edit(_doc(), ("runs", 0, "events", 3, "t"), None), "runs[0].events[3]")
    add("unknown-kind", _edit(_doc(), ("runs", 0, "events", 5, "kind"), "telepathy"), "telepathy")
    add("no-runs", _edit(_doc(), ("runs",), []), "runs:")
    # Python's json writes NaN/Infinity; a replay of such a time would never end
    nan = _edit(_doc(), ("runs", 0, "events", 20, "t"), float("nan"))
    add("nan-time", nan, "t: must be a finite number")
    inf = _edit(_doc(), ("runs", 0, "events", -1, "t"), float("inf"))
    add("inf-time", inf, "t: must be a finite number")
    add(
        "unplanned-request",
        _edit(_doc(), ("runs", 0, "events", 25, "req"), 99),
        "runs[0].events[25]",
    )
    cases["folder"] = (folder, "is a folder")
    cases["no-permission"] = (locked, "no permission")
    return cases


def deny_reading(monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
    """Root reads any file whatever its mode: make opening ``path`` fail with EACCES as it
    does for everyone else (the one place a real part cannot run here)."""
    if os.geteuid() != 0:
        return
    real = os.open  # what every input file is opened with (core/run/bounded_read.py)

    def refuse(file: Any, *args: Any, **kwargs: Any) -> Any:
        if Path(file) == path:
            raise PermissionError(13, "Permission denied", str(path))
        return real(file, *args, **kwargs)

    monkeypatch.setattr(os, "open", refuse)


def test_every_bad_file_gives_one_clear_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cases = bad_files(tmp_path)
    deny_reading(monkeypatch, cases["no-permission"][0])
    for name, (path, needle) in cases.items():
        with pytest.raises(RecordingError) as info:
            load_recording(path)
        message = str(info.value)
        assert needle in message, f"{name}: {message}"
        assert str(path) in message, f"{name}: the message names the file: {message}"
        assert "\n" not in message and "Traceback" not in message
        assert len(message) < 400, f"{name}: {len(message)} characters"


def test_wrong_type_names_the_field_path(tmp_path: Path) -> None:
    path = _write(tmp_path, _edit(_doc(), ("runs", 0, "events", 0, "questions"), "not a list"))
    with pytest.raises(RecordingError) as info:
        load_recording(path)
    assert info.value.field == "runs[0].events[0]"
    assert "questions" in str(info.value)


def test_errors_and_usage_survive_the_round_trip(live: tuple[Recording, RunState]) -> None:
    rec, _ = live
    run = rec.runs[0]
    last_req = max(e.req for e in run.events if isinstance(e, RequestEnded))
    failed = RequestEnded(
        run.events[-1].t,
        last_req,
        "failed",
        None,
        RequestError(ErrorKind.HTTP, "HTTP 429: slow down", 429, 2.0),
    )
    events = [e for e in run.events if not (isinstance(e, RequestEnded) and e.req == last_req)]
    events.insert(len(events) - 1, failed)
    state = RunState()
    for e in events:
        state.apply(e)
    changed = rec.model_copy(
        update={
            "runs": [
                run_record(
                    state, label="x", mode="side-by-side", started_at=run.started_at, events=events
                )
            ]
        }
    )
    back = recording_from_bytes(gzip.compress(encode_recording(changed)))
    trace = rebuild_state(back.runs[0]).requests[last_req]
    assert trace.outcome == "failed"
    assert trace.error == RequestError(ErrorKind.HTTP, "HTTP 429: slow down", 429, 2.0)
    assert trace.usage_output_tokens == state.requests[last_req].usage_output_tokens
    assert back.runs[0].figures["groups"]["parallel"]["failed"] == 1


def test_autosave_keeps_the_newest_within_the_caps(
    live: tuple[Recording, RunState], tmp_path: Path
) -> None:
    rec, _ = live
    folder = tmp_path / "auto"
    first = autosave(rec, folder)
    second = autosave(rec, folder)  # same start time: a new name, nothing overwritten
    assert first != second and first.exists() and second.exists()
    os.utime(first, (1000, 1000))  # ages: the first is the oldest
    os.utime(second, (1001, 1001))
    paths = [first, second]
    for k in range(3):
        paths.append(autosave(rec, folder, max_files=3, max_bytes=10**9))
        os.utime(paths[-1], (1002 + k, 1002 + k))
    kept = sorted(folder.iterdir())
    assert kept == sorted(paths[-3:])  # the newest three
    size = paths[-1].stat().st_size
    newest = autosave(rec, folder, max_files=100, max_bytes=2 * size + size // 2)
    left = sorted(folder.iterdir(), key=lambda p: p.stat().st_mtime)
    assert newest in left and len(left) == 2  # the byte cap: two fit
    (folder / "notes.txt").write_text("mine")
    autosave(rec, folder, max_files=1, max_bytes=10**9)
    assert (folder / "notes.txt").exists()  # only recordings are ever deleted
    assert all(load_recording(p).runs[0].events == rec.runs[0].events for p in left if p.exists())


def test_migration_steps_run_in_order_up_to_the_current_version(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The migration machinery: a document of version 1 goes through every step up to the
    current version, in order."""
    import splitdesk.core.files.recording as recording

    seen: list[int] = []

    def step(v: int) -> Any:
        def run(data: dict[str, Any]) -> dict[str, Any]:
            seen.append(v)
            return {**data, f"added_in_{v + 1}": True}

        return run

    monkeypatch.setattr(recording, "FORMAT_VERSION", 3)
    monkeypatch.setattr(recording, "MIGRATIONS", {1: step(1), 2: step(2)})
    out = recording.migrate({"version": 1})
    assert seen == [1, 2]
    assert out == {"version": 3, "added_in_2": True, "added_in_3": True}
    # a newer version: read as far as this one knows it, never refused for its new fields
    assert recording.migrate({"version": 4, "title": "t", "new_in_4": 1}) == {
        "version": 3,
        "title": "t",
    }
    with pytest.raises(RecordingError, match="expected a whole number"):
        recording.migrate({"version": "2"})
