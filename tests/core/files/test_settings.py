"""The settings file: invalid fields reset one by one (the rest kept), damaged or unreadable
files give defaults and are kept aside, and overlapping saves never leave a broken file."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import get_args

import pytest

from splitdesk.core.files.settings import AppSettings, read_settings, save_settings
from splitdesk.core.run.endpoints import PRESETS, EndpointSettings, KeySource, PresetName
from splitdesk.dialects import ApiName
from splitdesk.providers import PROVIDERS
from splitdesk.sim.params import PROFILES

SAVED = AppSettings(
    endpoint=EndpointSettings(
        preset="custom",
        base_url="http://gpu-box:8000/v1",
        api="anthropic",
        model="claude-x",
        key_source=KeySource.ENV,
        key_env="MY_KEY",
        max_tokens=300,
    ),
    mode="one-after-another",
    theme="light",
    window_size=(1280, 720),
)


def write(path: Path, data: object) -> None:
    path.write_text(json.dumps(data), encoding="utf-8")


def test_the_literals_name_exactly_the_dialects_and_presets_that_exist() -> None:
    assert set(get_args(ApiName)) == set(PROVIDERS)
    assert set(get_args(PresetName)) == set(PRESETS)


def test_a_good_file_round_trips_untouched(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    save_settings(SAVED, path)
    loaded = read_settings(path, PROFILES)
    assert loaded.settings == SAVED
    assert loaded.problem is None and loaded.backup is None
    assert [p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock")] == [path.name]


def test_unknown_dialect_and_profile_reset_only_those_fields(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    data = json.loads(SAVED.model_dump_json())
    data["endpoint"]["api"] = "openai-realtime"  # a dialect from a newer version
    data["endpoint"]["profile"] = "warp-drive"
    data["theme"] = "solarized"
    write(path, data)
    original = path.read_bytes()

    loaded = read_settings(path, PROFILES)

    s = loaded.settings
    assert s.endpoint.api == "openai-chat" and s.endpoint.profile == "batching"
    assert s.theme == "dark"
    # everything else survives
    assert s.endpoint.base_url == "http://gpu-box:8000/v1" and s.endpoint.model == "claude-x"
    assert s.endpoint.key_env == "MY_KEY" and s.endpoint.max_tokens == 300
    assert s.mode == "one-after-another" and s.window_size == (1280, 720)
    assert loaded.reset == {
        "endpoint.api": "openai-realtime",
        "endpoint.profile": "warp-drive",
        "theme": "solarized",
    }
    assert loaded.problem is not None
    for words in (
        "API dialect (was 'openai-realtime')",
        "built-in endpoint profile (was 'warp-drive')",
        "theme (was 'solarized')",
    ):
        assert words in loaded.problem
    # the file as it was is kept, byte for byte, and the message says where
    assert loaded.backup is not None and loaded.backup.read_bytes() == original
    assert str(loaded.backup) in loaded.problem


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b'{"theme": "dark", "endpoint": {', "not valid JSON (line 1, column 32"),
        (b"\xff\xfe\x00garbage", "not UTF-8 text"),
        (b"[1, 2, 3]", "holds a list, not a settings object"),
        (b"", "not valid JSON (line 1, column 1"),
    ],
)
def test_a_damaged_file_gives_defaults_and_is_kept(
    tmp_path: Path, content: bytes, why: str
) -> None:
    path = tmp_path / "settings.json"
    path.write_bytes(content)
    loaded = read_settings(path, PROFILES)
    assert loaded.settings == AppSettings()
    assert loaded.problem is not None
    assert "damaged" in loaded.problem and why in loaded.problem
    assert "starting with default settings" in loaded.problem
    assert loaded.backup is not None and loaded.backup.read_bytes() == content
    assert str(loaded.backup) in loaded.problem


def test_a_folder_in_place_of_the_file_gives_defaults_and_says_so(tmp_path: Path) -> None:
    """An unreadable 'file' that also works as root: a folder with the file's name."""
    path = tmp_path / "settings.json"
    path.mkdir()
    (path / "inside").write_text("kept")
    loaded = read_settings(path, PROFILES)
    assert loaded.settings == AppSettings()
    assert loaded.problem is not None and "Could not read the settings file" in loaded.problem
    assert loaded.backup is not None and (loaded.backup / "inside").read_text() == "kept"
    save_settings(SAVED, path)  # the place is free again
    assert read_settings(path, PROFILES).settings == SAVED


def test_overlapping_saves_leave_one_whole_file(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    variants = [
        AppSettings(endpoint=EndpointSettings(max_tokens=100 + i), window_size=(800 + i, 600))
        for i in range(8)
    ]
    errors: list[BaseException] = []
    start = threading.Barrier(len(variants))

    def saver(s: AppSettings) -> None:
        try:
            start.wait()
            for _ in range(25):
                save_settings(s, path)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=saver, args=(v,)) for v in variants]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    loaded = read_settings(path, PROFILES)
    assert loaded.problem is None
    assert loaded.settings in variants  # one save's whole content, never a mix
    assert not list(tmp_path.glob("*.tmp"))  # no temp file left behind
