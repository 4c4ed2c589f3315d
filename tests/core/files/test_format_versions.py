"""Format versions of the files people keep: each changes whenever a field does; a file
from a newer splitdesk opens read-only with one line naming both versions (never refused
for its new fields, never written over); nothing this version does not know is dropped
without a backup; every number in them is finite and bounded."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from paths import FIXTURES
from splitdesk import __version__
from splitdesk.core.files import recording as rec_mod
from splitdesk.core.files import settings as set_mod
from splitdesk.core.files.recording import (
    Recording,
    RecordingError,
    load_recording,
    rebuild_state,
)
from splitdesk.core.files.settings import AppSettings, read_settings, save_settings
from splitdesk.core.run.events import EVENT_TYPES

#: The shape of each format version this code writes (sha256 of the pydantic JSON schema,
#: first 16 hex digits). A field added, removed, retyped or re-bounded changes it: then
#: bump FORMAT_VERSION (with a migration step and, for recordings, a fixture of the old
#: version) and put the new fingerprint here. It must never change under the same version.
RECORDING_SHAPES = {2: "371c04ddb88420fd", 3: "86ebdd9bf8150f32"}
SETTINGS_SHAPES = {2: "b99b4a28e7d1e8cf"}
#: The events a recording's runs hold are read by kind (core/run/events.py), outside the
#: pydantic schema: their kinds and fields, fingerprinted the same way (a kind an older
#: reader does not know made it refuse the whole file under an unchanged version).
EVENT_SHAPES = {3: "ded423b3161e245f"}
#: A recording of the version this code writes (3: version 2 plus ``runs[].client_cpu``,
#: from a window run) and one from ``bench --record`` holding ``connection`` events.
CURRENT = FIXTURES / "recordings" / f"v{rec_mod.FORMAT_VERSION}.splitdesk.json"
CONNECTIONS = FIXTURES / "recordings" / "bench-connections-v3.splitdesk.json"


def shape(model: type[BaseModel]) -> str:
    schema = json.dumps(model.model_json_schema(), sort_keys=True)
    return hashlib.sha256(schema.encode()).hexdigest()[:16]


@pytest.mark.parametrize(
    ("model", "version", "shapes"),
    [
        (Recording, rec_mod.FORMAT_VERSION, RECORDING_SHAPES),
        (AppSettings, set_mod.FORMAT_VERSION, SETTINGS_SHAPES),
    ],
    ids=["recording", "settings"],
)
def test_the_format_version_changes_whenever_a_field_does(
    model: type[BaseModel], version: int, shapes: dict[int, str]
) -> None:
    assert version in shapes, f"{model.__name__} format {version} has no recorded shape"
    assert shape(model) == shapes[version], (
        f"{model.__name__}'s fields changed but its format version is still {version}: "
        "bump FORMAT_VERSION, add the migration step (and an old-version fixture), and "
        f"record the new shape {shape(model)!r} here"
    )


def event_shape() -> str:
    kinds = {
        kind: [(f.name, str(f.type)) for f in dataclasses.fields(cls)]
        for kind, cls in sorted(EVENT_TYPES.items())
    }
    return hashlib.sha256(json.dumps(kinds, sort_keys=True).encode()).hexdigest()[:16]


def test_the_recording_version_changes_whenever_an_event_kind_or_its_fields_do() -> None:
    version = rec_mod.FORMAT_VERSION
    assert version in EVENT_SHAPES, f"recording format {version} has no recorded event shape"
    assert event_shape() == EVENT_SHAPES[version], (
        f"the recorded events' kinds or fields changed but the recording format is still "
        f"{version}: bump FORMAT_VERSION, add the migration step (and an old-version "
        f"fixture), and record the new event shape {event_shape()!r} here"
    )


# -- recordings ------------------------------------------------------------------------------


def _newer_recording() -> dict[str, Any]:
    """The current fixture as a splitdesk two versions newer might write it: new fields at
    every depth and an event kind this version does not know."""
    doc: dict[str, Any] = json.loads(CURRENT.read_text())
    doc["version"] = rec_mod.FORMAT_VERSION + 2
    doc["signature"] = {"alg": "ed25519", "value": "…"}
    doc["endpoint"]["region"] = "eu-west"
    doc["settings"]["speculative"] = True
    doc["runs"][0]["gpu"] = {"name": "H100"}
    doc["runs"][0]["events"].insert(3, {"kind": "kv_cache_hit", "t": 0.01, "req": 0})
    doc["runs"][0]["events"][0]["host_clock"] = "tai"
    return doc


def test_a_newer_recording_opens_read_only_with_one_line_naming_both_versions(
    tmp_path: Path,
) -> None:
    """It used to be refused (newer version) — and an older splitdesk refused files whose
    fields had grown under an unchanged version with 'Extra inputs are not permitted'."""
    path = tmp_path / "from-the-future.splitdesk.json"
    path.write_text(json.dumps(_newer_recording()), encoding="utf-8")
    before = path.read_bytes()
    recording = load_recording(path)
    newer = rec_mod.FORMAT_VERSION + 2
    assert recording.read_only_note == (
        f"recording format {newer} is newer than this splitdesk ({__version__}) reads "
        f"(format {rec_mod.FORMAT_VERSION}): shown read-only, without what this version "
        "does not know; update splitdesk to see all of it"
    )
    original = load_recording(CURRENT)
    assert recording.question_texts == original.question_texts
    assert len(recording.runs[0].events) == len(original.runs[0].events)
    assert rebuild_state(recording.runs[0]).finished
    assert path.read_bytes() == before  # opening never writes


def test_a_newer_file_that_is_not_a_recording_says_both_versions_first(tmp_path: Path) -> None:
    path = tmp_path / "x.splitdesk.json"
    path.write_text('{"format": "splitdesk-recording", "version": 9, "runs": []}')
    with pytest.raises(RecordingError) as info:
        load_recording(path)
    message = str(info.value)
    assert f"recording format 9 is newer than this splitdesk ({__version__})" in message
    assert "update splitdesk to open it" in message and "\n" not in message


@pytest.mark.parametrize(
    ("where", "value"),
    [
        (("settings", "read_timeout"), 1e999),  # written as Infinity
        (("settings", "max_tokens"), 10**9),
        (("endpoint", "speed"), 1e6),
        (
            ("runs", 0, "predictions"),
            [{"t_send_s": -1, "ttft_s": 0, "e2e_s": 1, "output_tokens": 1, "rejected": False}],
        ),
        (("runs", 0, "client_cpu", "wall_s"), 1e999),
        (("runs", 0, "client_cpu", "machine_busy"), 1.5),  # a fraction of all CPUs' time
        (("runs", 0, "client_cpu", "cpus"), 0),
        (("runs", 0, "client_cpu", "processes", "window", "share"), -0.1),
        (("runs", 0, "client_cpu", "processes", "engine", "cpu_s"), float("nan")),
        # an event's time since the run's origin (negated times replayed "Combined -12.0 s")
        (("runs", 0, "events", -1, "t"), -12.0),
    ],
)
def test_every_number_in_a_recording_is_finite_and_bounded(
    tmp_path: Path, where: tuple[Any, ...], value: Any
) -> None:
    doc = json.loads(CURRENT.read_text())
    target = doc
    for key in where[:-1]:
        target = target[key]
    target[where[-1]] = value
    path = tmp_path / "bad.splitdesk.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(RecordingError) as info:
        load_recording(path)
    assert where[0] in str(info.value)


def test_an_old_version_one_recording_still_loads_as_the_current_version() -> None:
    recording = load_recording(FIXTURES / "recordings" / "v1.splitdesk.json")
    assert recording.version == rec_mod.FORMAT_VERSION and recording.read_only_note is None


def test_a_version_two_recording_loads_as_the_current_version_without_client_cpu() -> None:
    """Version 3 added ``runs[].client_cpu``; a version-2 file (none of it) replays as it
    did, saying nothing about splitdesk's own CPU rather than a made-up figure."""
    recording = load_recording(FIXTURES / "recordings" / "v2.splitdesk.json")
    assert recording.version == rec_mod.FORMAT_VERSION and recording.read_only_note is None
    assert [run.client_cpu for run in recording.runs] == [None]
    assert rebuild_state(recording.runs[0]).finished


def test_a_version_three_recording_keeps_the_runs_own_cpu(tmp_path: Path) -> None:
    """What the live run measured of splitdesk's own CPU comes back, figure for figure,
    and survives a save and a load."""
    recording = load_recording(CURRENT)
    cpu = recording.runs[0].client_cpu
    assert cpu is not None and cpu.local_endpoint
    figures = cpu.figures()
    assert (figures.wall_s, figures.cpus, figures.machine_busy) == (2.134, 2, 0.912)
    window = figures.processes["window"]
    assert window is not None and (window.cpu_s, window.share) == (0.262, 0.1228)
    path = tmp_path / "again.splitdesk.json"
    rec_mod.save_recording(recording, path)
    assert json.loads(path.read_text())["version"] == rec_mod.FORMAT_VERSION
    assert load_recording(path).runs[0].client_cpu == cpu


# -- settings --------------------------------------------------------------------------------


def test_newer_settings_are_read_as_far_as_known_and_never_written_over(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    newer = set_mod.FORMAT_VERSION + 1
    data = {
        "version": newer,
        "theme": "light",
        "endpoint": {"max_tokens": 300, "reasoning_effort": "high"},
        "layout": {"panes": "grid"},
    }
    path.write_text(json.dumps(data), encoding="utf-8")
    before = path.read_bytes()
    loaded = read_settings(path)
    assert loaded.newer == newer
    assert loaded.settings.theme == "light" and loaded.settings.endpoint.max_tokens == 300
    assert loaded.problem is not None and "\n" not in loaded.problem
    assert f"settings format {newer}; this one reads format {set_mod.FORMAT_VERSION}" in (
        loaded.problem
    )
    assert save_settings(loaded.settings, path) is False  # the window's save at close
    assert path.read_bytes() == before
    assert list(tmp_path.glob("settings.json.*-*")) == []  # no backup: nothing was changed


def test_unknown_settings_fields_are_backed_up_before_a_save_drops_them(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    data = {"version": set_mod.FORMAT_VERSION, "theme": "light", "pinned": [1, 2]}
    data["endpoint"] = {"max_tokens": 300, "reasoning_effort": "high"}
    path.write_text(json.dumps(data), encoding="utf-8")
    loaded = read_settings(path)
    assert loaded.unknown == ["pinned", "endpoint.reasoning_effort"]
    assert loaded.backup is not None and json.loads(loaded.backup.read_text()) == data
    assert loaded.problem is not None and "pinned, endpoint.reasoning_effort" in loaded.problem
    assert save_settings(loaded.settings, path) is True
    saved = json.loads(path.read_text())
    assert saved["version"] == set_mod.FORMAT_VERSION and "pinned" not in saved


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("read_timeout", "1e999"),
        ("connect_timeout", "1e999"),
        ("max_tokens", "1e9"),
        ("speed", "0"),
    ],
)
def test_every_number_in_the_settings_is_finite_and_bounded(
    tmp_path: Path, field: str, value: str
) -> None:
    """1e999 (read as inf) used to be kept: a run then waited for ever between reads."""
    path = tmp_path / "settings.json"
    path.write_text(f'{{"version": 2, "endpoint": {{"{field}": {value}}}}}', encoding="utf-8")
    loaded = read_settings(path)
    assert f"endpoint.{field}" in loaded.reset
    assert getattr(loaded.settings.endpoint, field) == AppSettings().endpoint.model_dump()[field]


def test_a_version_three_bench_recording_keeps_its_connection_events() -> None:
    """Version 3's other addition: each warm connection's set-up (``connection`` events,
    from a real ``bench --record``) loads, and the run replays to its end."""
    recording = load_recording(CONNECTIONS)
    assert recording.version == rec_mod.FORMAT_VERSION and recording.read_only_note is None
    kinds = [type(ev).__name__ for ev in recording.runs[0].events]
    assert kinds.count("ConnectionOpened") == 5
    assert rebuild_state(recording.runs[0]).finished
