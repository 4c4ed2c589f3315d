"""``splitdesk doctor`` and ``splitdesk --version``, run as a user runs them (a child
process), on this machine's real Qt, keyring, environment and built-in endpoint."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _env(**changes: str | None) -> dict[str, str]:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        env.pop(var, None)
        env.pop(var.lower(), None)
    for name, value in changes.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def doctor(*args: str, **env: str | None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "splitdesk", "doctor", *args],
        capture_output=True,
        text=True,
        env=_env(**env),
        timeout=120,
        check=False,
    )


def lines_with(output: str, status: str, area: str) -> list[str]:
    return [line for line in output.splitlines() if line.split()[:2] == [status, area]]


def test_version_names_the_package_version_python_and_qt() -> None:
    from importlib.metadata import version as installed_version

    import splitdesk

    version = splitdesk.__version__
    assert installed_version("splitdesk") == version  # pyproject reads it from the package
    proc = subprocess.run(
        [sys.executable, "-m", "splitdesk", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    first, second, how = proc.stdout.splitlines()
    assert first == f"splitdesk {version}"
    assert how == f"Python package in {Path(splitdesk.__file__).resolve().parent}"
    from PySide6.QtCore import qVersion

    assert f"Qt {qVersion()}" in second and "Python 3." in second


def test_a_healthy_machine_has_no_problem_and_the_endpoint_answers() -> None:
    proc = doctor()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "PROBLEM" not in out
    assert lines_with(out, "ok", "Qt")[0].count("platform plugin 'offscreen'") == 1
    assert lines_with(out, "ok", "fonts"), out  # Latin at least (scripts/install.sh)
    assert "answered" in lines_with(out, "ok", "endpoint")[0]
    assert lines_with(out, "ok", "engine"), out
    assert out.splitlines()[-1].startswith("0 problems")


def test_missing_ca_bundle_is_a_problem_with_a_fix() -> None:
    proc = doctor("--skip-endpoint", SSL_CERT_FILE="/no/such/ca.pem")
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    i = lines.index(next(line for line in lines if line.startswith("PROBLEM TLS")))
    assert "SSL_CERT_FILE=/no/such/ca.pem does not exist" in lines[i]
    assert lines[i + 1].strip() == "fix: point it at a CA bundle (PEM) or unset it"


def test_proxy_for_loopback_is_a_problem_and_credentials_stay_hidden() -> None:
    proc = doctor("--skip-endpoint", HTTP_PROXY="http://alice:s3cret-pw@proxy.example:3128")
    assert proc.returncode == 1
    assert "s3cret-pw" not in proc.stdout + proc.stderr
    assert "alice" not in proc.stdout + proc.stderr
    assert "HTTP_PROXY=http://***@proxy.example:3128" in proc.stdout
    problem = lines_with(proc.stdout, "PROBLEM", "proxy")
    assert problem and "HTTP_PROXY also applies to 127.0.0.1" in problem[0]
    assert "export NO_PROXY=127.0.0.1" in proc.stdout


def test_https_proxy_leaves_the_plain_http_builtin_endpoint_alone() -> None:
    proc = doctor("--skip-endpoint", HTTPS_PROXY="http://proxy.example:3128")
    assert proc.returncode == 0, proc.stdout
    assert "PROBLEM" not in proc.stdout


def test_socks_proxy_without_socksio_is_a_problem() -> None:
    import importlib.util

    proc = doctor("--skip-endpoint", ALL_PROXY="socks5://proxy.example:1080", NO_PROXY="127.0.0.1")
    if importlib.util.find_spec("socksio") is None:
        assert proc.returncode == 1
        problem = lines_with(proc.stdout, "PROBLEM", "proxy")
        assert problem and "is a SOCKS proxy, which needs the 'socksio' package" in problem[0]
    else:  # httpx[socks] installed: the same proxy is fine
        assert proc.returncode == 0, proc.stdout


def test_proxy_with_loopback_exemption_is_fine() -> None:
    proc = doctor(
        "--skip-endpoint", HTTP_PROXY="http://proxy.example:3128", NO_PROXY="localhost,127.0.0.1"
    )
    assert proc.returncode == 0, proc.stdout
    assert "PROBLEM" not in proc.stdout


def test_unwritable_settings_folder_is_a_problem(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    proc = doctor("--skip-endpoint", SPLITDESK_CONFIG_DIR=str(blocker))
    assert proc.returncode == 1
    problem = lines_with(proc.stdout, "PROBLEM", "folders")
    assert problem and f"settings: {blocker} is not a folder" in problem[0]
    assert "SPLITDESK_CONFIG_DIR" in proc.stdout


def test_data_folder_is_the_one_recordings_use(tmp_path: Path) -> None:
    """SPLITDESK_DATA_DIR moves the auto-saved recordings; doctor checks that folder."""
    blocker = tmp_path / "data-file"
    blocker.write_text("not a folder")
    proc = doctor("--skip-endpoint", SPLITDESK_DATA_DIR=str(blocker))
    assert proc.returncode == 1
    problem = lines_with(proc.stdout, "PROBLEM", "folders")
    assert problem and f"data: {blocker} is not a folder" in problem[0]
    assert "set SPLITDESK_DATA_DIR" in proc.stdout


def test_no_display_is_a_problem_and_the_rest_still_runs_offscreen() -> None:
    proc = doctor("--skip-endpoint", QT_QPA_PLATFORM=None, DISPLAY=None, WAYLAND_DISPLAY=None)
    assert proc.returncode == 1
    assert lines_with(proc.stdout, "PROBLEM", "display")
    assert "xvfb-run" in proc.stdout
    assert "platform plugin 'offscreen'" in lines_with(proc.stdout, "ok", "Qt")[0]


def test_doctor_from_a_folder_holding_a_splitdesk_directory_finds_no_problem(
    tmp_path: Path,
) -> None:
    """The console script started where a clone lives (a ``splitdesk/`` directory in the
    working directory, as a desktop-menu launch may start it): its children (Qt probe,
    built-in endpoint, engine) import the installed package, not that folder."""
    (tmp_path / "splitdesk").mkdir()
    script = Path(sys.executable).parent / "splitdesk"
    proc = subprocess.run(
        [str(script), "doctor"],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=tmp_path,
        timeout=180,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "answered" in lines_with(proc.stdout, "ok", "endpoint")[0]
    assert lines_with(proc.stdout, "ok", "engine"), proc.stdout


def test_a_child_that_cannot_import_is_named_with_its_own_error_not_qt_or_a_firewall(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Children that cannot import splitdesk (here a broken package first on PYTHONPATH):
    each finding names the ImportError in one line and says to reinstall, not to install
    Qt's libraries or open a firewall."""
    from splitdesk.doctor.endpoint import check_endpoint
    from splitdesk.doctor.qt import check_qt

    broken = tmp_path / "splitdesk"
    broken.mkdir()
    (broken / "__init__.py").write_text('raise ImportError("broken splitdesk for the test")\n')
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")
    findings = check_qt() + check_endpoint()
    problems = {f.area: f for f in findings if f.status == "problem"}
    assert set(problems) == {"Qt", "endpoint", "engine"}, findings
    for f in problems.values():
        assert "ImportError: broken splitdesk for the test" in f.detail, f
        assert "\n" not in f.detail and "File " not in f.detail, f  # one line, no traceback
        assert "reinstall splitdesk" in (f.fix or ""), f
        assert "firewall" not in (f.fix or "") and "libraries Qt" not in (f.fix or ""), f


def test_no_proxy_ranges_exempt_loopback_and_unreadable_entries_are_a_note() -> None:
    """An IPv4 range covering 127.0.0.1 exempts the built-in endpoint (httpx's own reading
    did not know ranges, and raised on the IPv6 one); an entry no form reads is named."""
    proc = doctor(
        "--skip-endpoint",
        HTTP_PROXY="http://127.0.0.1:9",
        NO_PROXY="fd00::/8,127.0.0.0/8,host:notaport",
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "also applies to 127.0.0.1" not in proc.stdout, proc.stdout
    (note,) = lines_with(proc.stdout, "note", "proxy")
    assert note.endswith("are ignored: host:notaport")
