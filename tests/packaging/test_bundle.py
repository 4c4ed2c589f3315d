"""The frozen one-folder bundle (``packaging/build.sh``) runs without Python: version,
doctor, a bench against the built-in endpoint it starts as a child of itself, and a window
run that saves a screenshot. Slow (builds the bundle, about a minute): deselected by
default, run by ``.ci/run`` in its own step (``pytest -m slow``)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def bundle() -> Path:
    """Build the bundle once for this module; returns the ``splitdesk`` binary's path."""
    proc = subprocess.run(
        [str(ROOT / "packaging" / "build.sh")],
        capture_output=True,
        text=True,
        timeout=840,
    )
    assert proc.returncode == 0, f"packaging/build.sh failed:\n{proc.stdout}\n{proc.stderr}"
    binary = ROOT / "dist" / "splitdesk" / "splitdesk"
    assert binary.is_file() and os.access(binary, os.X_OK)
    return binary


def _env(tmp: Path) -> dict[str, str]:
    """An empty PATH (no python to fall back on), nothing of the checkout importable,
    offscreen Qt, and settings/logs in a scratch folder."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTHON", "VIRTUAL_ENV", "QT_", "PYTEST"))
    }
    (tmp / "empty-bin").mkdir(exist_ok=True)
    env["PATH"] = str(tmp / "empty-bin")
    env["QT_QPA_PLATFORM"] = "offscreen"
    env["SPLITDESK_CONFIG_DIR"] = str(tmp / "config")
    env["SPLITDESK_LOG_DIR"] = str(tmp / "log")
    env["XDG_DATA_HOME"] = str(tmp / "data")
    return env


def run(binary: Path, tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(binary), *args],
        capture_output=True,
        text=True,
        cwd=tmp,  # not the checkout: nothing can be imported from the source tree
        env=_env(tmp),
        timeout=180,
    )


def test_bundle_holds_the_resources_and_qt_plugins_it_needs(bundle: Path) -> None:
    internal = bundle.parent / "_internal"
    assert (internal / "splitdesk" / "resources" / "text" / "phrases.json").is_file()
    plugins = internal / "PySide6" / "Qt" / "plugins"
    for plugin in (
        "platforms/libqxcb.so",
        "platforms/libqoffscreen.so",
        "platforms/libqwayland.so",
        "imageformats/libqsvg.so",
        "iconengines/libqsvgicon.so",
    ):
        assert (plugins / plugin).is_file(), plugin
    assert not list(internal.rglob("*WebEngine*")), "unused Qt modules must stay out"
    for dropped in ("platformthemes/libqgtk3.so", "platforms/libqeglfs.so", "../translations"):
        assert not (plugins / dropped).exists(), f"{dropped} is in the DROP lists of the spec"
    assert not list(internal.glob("libgtk-3.so*")) and not list(internal.glob("libcairo.so*"))


def test_every_qt_library_and_plugin_finds_its_libraries(bundle: Path) -> None:
    """ldd over the bundle's Qt libraries and platform plugins, with the bundle's folders
    first on the library path as at run time: nothing may be "not found" (a platform plugin
    that cannot load its libraries is skipped, or aborts the app)."""
    internal = bundle.parent / "_internal"
    qt = internal / "PySide6" / "Qt"
    env = dict(os.environ, LD_LIBRARY_PATH=f"{internal}:{qt / 'lib'}")
    missing = []
    for lib in [*qt.glob("lib/*.so*"), *qt.glob("plugins/platforms/*.so")]:
        out = subprocess.run(
            ["ldd", str(lib)], capture_output=True, text=True, env=env, timeout=60
        ).stdout
        missing += [
            f"{lib.name}: {line.strip()}" for line in out.splitlines() if "not found" in line
        ]
    assert not missing, "\n".join(missing)


def test_version(bundle: Path, tmp_path: Path) -> None:
    import splitdesk

    proc = run(bundle, tmp_path, "--version")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == f"splitdesk {splitdesk.__version__}"
    assert lines[-1] == "frozen bundle"


def test_doctor(bundle: Path, tmp_path: Path) -> None:
    proc = run(bundle, tmp_path, "doctor")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "(frozen bundle;" in proc.stdout
    assert "platform plugin 'offscreen'" in proc.stdout
    assert "answered" in proc.stdout and "engine process started" in proc.stdout


def test_bench_on_the_builtin_endpoint(bundle: Path, tmp_path: Path) -> None:
    proc = run(
        bundle, tmp_path, "bench", "--endpoint", "builtin", "-q", "a", "-q", "b", "--json", "-"
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["questions"] == ["a", "b"]
    assert doc["endpoint"]["model"] == "splitdesk-sim"
    modes = {run["mode"] for run in doc["runs"]}
    assert {"combined", "parallel"} <= modes
    for one in doc["runs"]:
        for request in one["requests"]:
            assert request["outcome"] == "done", request
            assert request["output_tokens"] > 0


def test_window_run_saves_a_valid_screenshot(bundle: Path, tmp_path: Path) -> None:
    from PySide6.QtGui import QImage

    shot = tmp_path / "window.png"
    proc = run(bundle, tmp_path, "--run", "--screenshot", str(shot), "--quit")
    assert proc.returncode == 0, proc.stderr
    assert f"screenshot saved to {shot}" in proc.stdout
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    image = QImage(str(shot))
    assert not image.isNull() and image.width() >= 640 and image.height() >= 400


def test_desktop_entry_points_at_the_bundle_binary(bundle: Path, tmp_path: Path) -> None:
    proc = run(bundle, tmp_path, "--install-desktop-entry")
    assert proc.returncode == 0, proc.stderr
    entry = (tmp_path / "data" / "applications" / "splitdesk.desktop").read_text("utf-8")
    assert f"Exec={bundle.resolve()}\n" in entry
    icon = tmp_path / "data" / "icons" / "hicolor" / "512x512" / "apps" / "splitdesk.png"
    assert icon.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
