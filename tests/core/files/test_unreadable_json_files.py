"""The settings and sweep files are JSON read with a bound and a depth: a file nested
deeper than the parser follows, or one that never ends (``/dev/zero`` by a symlink), is
one sentence — the settings fall back to their defaults and keep the file — never a
``RecursionError`` or an unbounded read."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from splitdesk.core.files.settings import AppSettings, read_settings
from splitdesk.core.files.sweep_files import SweepFileError, read_sweep

DEEP_JSON = '{"version": 2, "x": ' + "[" * 100_000 + "]" * 100_000 + "}"


def test_deeply_nested_settings_start_from_defaults_and_keep_the_file(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(DEEP_JSON, encoding="utf-8")
    load = read_settings(path)
    assert load.settings == AppSettings()
    assert load.problem is not None and "its JSON is nested too deeply" in load.problem
    assert load.backup is not None and load.backup.read_text(encoding="utf-8") == DEEP_JSON


def test_endless_settings_are_refused_after_their_limit(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    os.symlink("/dev/zero", path)
    load = read_settings(path)
    assert load.settings == AppSettings()
    assert load.problem is not None
    assert "too large for a settings file (more than 16 MB read" in load.problem


def test_a_deeply_nested_sweep_is_not_json_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "sweep.json"
    path.write_text(DEEP_JSON, encoding="utf-8")
    with pytest.raises(SweepFileError, match=r"^sweep\.json is not JSON: nested too deeply$"):
        read_sweep(path)


def test_an_endless_sweep_is_refused_after_its_limit(tmp_path: Path) -> None:
    path = tmp_path / "sweep.json"
    os.symlink("/dev/zero", path)
    with pytest.raises(SweepFileError, match=r"^sweep\.json: too large for a sweep \(more than"):
        read_sweep(path)
