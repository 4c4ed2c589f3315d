"""A proxy variable that is not a URL (an unclosed IPv6 bracket, a port that is not a
number or out of range, no host) is bad input: one line naming the variable, its value
shown without the password, exit 2 before anything is sent (bench, sweep); ``doctor``
reports it as a finding; the window's run fails with that line, no crash dialog. Before,
``urlsplit`` raised ``ValueError: Invalid IPv6 URL`` (core/measure/netenv.py, doctor) and
httpx ``InvalidURL`` for ``http://proxy:notaport``, as tracebacks."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from counting_listener import CountingListener, counting_listener

from splitdesk.core.measure.netenv import proxy_url_problem, shown_proxy

PASSWORD = "s3cret-pw"
#: (HTTP_PROXY, what the message says about it)
MALFORMED = [
    ("http://[bad", "HTTP_PROXY=http://[bad is not a proxy URL (Invalid IPv6 URL)"),
    (
        f"http://alice:{PASSWORD}@proxy:notaport",
        "HTTP_PROXY=http://alice:***@proxy:notaport is not a proxy URL (Port could not be cast",
    ),
    (
        f"http://alice:{PASSWORD}@proxy.example:99999",
        "HTTP_PROXY=http://alice:***@proxy.example:99999 is not a proxy URL (Port out of range",
    ),
    ("http://", "HTTP_PROXY=http:// is not a proxy URL (it names no host)"),
]
FIX = "— write it as http://host:port (e.g. http://proxy.example:3128) or unset HTTP_PROXY"


@pytest.fixture
def listener() -> Iterator[CountingListener]:
    with counting_listener() as server:
        yield server


def splitdesk(args: list[str], proxy: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env.update(HTTP_PROXY=proxy, QT_QPA_PLATFORM="offscreen", SPLITDESK_CONFIG_DIR=str(tmp_path))
    return subprocess.run(
        [sys.executable, "-m", "splitdesk", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )


@pytest.mark.parametrize(("proxy", "said"), MALFORMED)
@pytest.mark.parametrize("command", ["bench", "sweep"])
def test_a_proxy_variable_that_is_no_url_is_one_line_and_exit_2(
    listener: CountingListener, tmp_path: Path, command: str, proxy: str, said: str
) -> None:
    extra = ["--max-n", "2"] if command == "sweep" else ["--mode", "parallel", "-q", "a"]
    proc = splitdesk(
        [command, "--endpoint", listener.url, "--model", "ok", *extra], proxy, tmp_path
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr[-2000:]
    assert lines[0].startswith(f"splitdesk {command}: error: {said}")
    assert lines[0].endswith(FIX)
    assert PASSWORD not in proc.stdout + proc.stderr
    assert listener.accepted == 0, "nothing is sent"


def test_the_builtin_endpoint_under_a_malformed_proxy_is_refused_too(tmp_path: Path) -> None:
    proc = splitdesk(["bench", "-q", "a", "--mode", "parallel"], "http://[bad", tmp_path)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines() == [f"splitdesk bench: error: {MALFORMED[0][1]} {FIX}"]


@pytest.mark.parametrize(("proxy", "said"), MALFORMED[:2])
def test_doctor_reports_a_malformed_proxy_as_a_finding(
    tmp_path: Path, proxy: str, said: str
) -> None:
    proc = splitdesk(["doctor", "--skip-endpoint"], proxy, tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and "ValueError" not in proc.stderr
    problems = [
        line for line in proc.stdout.splitlines() if line.split()[:2] == ["PROBLEM", "proxy"]
    ]
    shown = said.replace("alice:***@", "***@")  # doctor hides the user name too
    assert any(shown.split(" (", 1)[0] in line for line in problems), proc.stdout
    assert "fix: write it as http://host:port" in proc.stdout
    assert PASSWORD not in proc.stdout + proc.stderr and "alice" not in proc.stdout


def test_the_window_says_it_and_exits_1_without_a_crash(
    listener: CountingListener, tmp_path: Path
) -> None:
    proxy, said = MALFORMED[1]
    proc = splitdesk(
        ["--endpoint", listener.url, "--model", "ok", "--run", "--quit"], proxy, tmp_path
    )
    assert proc.returncode == 1, proc.stderr[-3000:]
    summary = [line for line in proc.stderr.splitlines() if "requests failed" in line]
    assert len(summary) == 1 and f"requests failed: {said}" in summary[0], proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and "unexpected" not in proc.stderr
    assert PASSWORD not in proc.stdout + proc.stderr
    assert listener.accepted == 0, "nothing is sent"


def test_shown_proxy_never_raises_and_never_shows_the_password() -> None:
    assert shown_proxy("http://alice:pw@[bad") == "http://alice:***@[bad"
    assert shown_proxy("http://alice:p@ss@proxy:3128") == "http://alice:***@proxy:3128"
    assert shown_proxy("http://alice:pw@proxy:3128", keep_user=False) == "http://***@proxy:3128"
    assert shown_proxy("http://alice@proxy:3128") == "http://alice@proxy:3128"
    assert shown_proxy("proxy.example:3128") == "proxy.example:3128"
    assert proxy_url_problem("http://proxy.example:3128", "HTTP_PROXY") is None
    assert proxy_url_problem("socks5://[fd00::1]:1080", "ALL_PROXY") is None
