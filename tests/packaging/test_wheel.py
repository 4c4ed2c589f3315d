"""The wheel carries everything the app needs (resources included): built from the
checkout, installed into a fresh venv, run from there. Slow (a fresh venv installs every
dependency): deselected by default, run by ``.ci/run`` with ``pytest -m slow``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Build the wheel, install it (pinned by constraints.txt) into a new venv; returns the
    venv's ``bin`` folder."""
    work = tmp_path_factory.mktemp("wheel")
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(work), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr
    (wheel,) = work.glob("splitdesk-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for resource in (
        "splitdesk/resources/text/phrases.json",
        "splitdesk/resources/questions/everyday-five.toml",
        "splitdesk/resources/icons/splitdesk.svg",
        "splitdesk/resources/icons/hicolor/512x512/apps/splitdesk.png",
        "splitdesk/resources/desktop/splitdesk.desktop",
    ):
        assert resource in names, f"{resource} is not in {wheel.name}"
    env_dir = work / "venv"
    venv.create(env_dir, with_pip=True)
    install = subprocess.run(
        [
            str(env_dir / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            "-c",
            str(ROOT / "constraints.txt"),
            str(wheel),
        ],
        capture_output=True,
        text=True,
        timeout=420,
    )
    assert install.returncode == 0, install.stderr
    return env_dir / "bin"


def run(bin_dir: Path, tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env.update(
        QT_QPA_PLATFORM="offscreen",
        SPLITDESK_CONFIG_DIR=str(tmp / "config"),
        SPLITDESK_LOG_DIR=str(tmp / "log"),
    )
    return subprocess.run(
        [str(bin_dir / "splitdesk"), *args],
        capture_output=True,
        text=True,
        cwd=tmp,  # away from the checkout: only the installed package can be imported
        env=env,
        timeout=180,
    )


def test_version_from_the_fresh_venv(installed: Path, tmp_path: Path) -> None:
    proc = run(installed, tmp_path, "--version")
    assert proc.returncode == 0, proc.stderr
    assert str(installed.parent) in proc.stdout  # the installed copy, not the checkout
    assert str(ROOT / "splitdesk") not in proc.stdout


def test_bench_from_the_fresh_venv(installed: Path, tmp_path: Path) -> None:
    proc = run(installed, tmp_path, "bench", "-q", "a", "-q", "b", "--json", "-")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["questions"] == ["a", "b"]
    assert all(r["outcome"] == "done" for one in doc["runs"] for r in one["requests"])


def test_window_from_the_fresh_venv(installed: Path, tmp_path: Path) -> None:
    shot = tmp_path / "window.png"
    proc = run(installed, tmp_path, "--run", "--screenshot", str(shot), "--quit")
    assert proc.returncode == 0, proc.stderr
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
