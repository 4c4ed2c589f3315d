"""splitdesk's own CPU and the machine's load (core/measure/client_cpu.py): real processes
burning real CPU, read from /proc, and the rule that says when the window's share may
have slowed a local server."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from splitdesk.core.files.recording import ClientCpuRecord
from splitdesk.core.measure.client_cpu import (
    BUSY_MACHINE,
    ClientCpu,
    CpuReading,
    ObserverEffect,
    is_loopback_url,
    machine_cpu_s,
    observer_effect,
    process_cpu_s,
)

linux_only = pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="reads /proc (Linux)")

BURN = (
    "import sys, time\n"
    "end = time.monotonic() + float(sys.argv[1])\n"
    "while time.monotonic() < end: pass\n"
)


@contextmanager
def burners(count: int, seconds: float) -> Iterator[list[subprocess.Popen[bytes]]]:
    procs = [subprocess.Popen([sys.executable, "-c", BURN, str(seconds)]) for _ in range(count)]
    try:
        yield procs
    finally:
        for p in procs:
            p.kill()
            p.wait()


@linux_only
def test_a_busy_child_s_cpu_seconds_grow_and_so_does_the_machine_s_load() -> None:
    cpus = os.cpu_count() or 1
    with burners(cpus, 30) as procs:
        pid = procs[0].pid
        start = CpuReading.now({"burner": pid, "me": None})
        deadline = time.monotonic() + 20
        while (process_cpu_s(pid) or 0) - (start.processes["burner"] or 0) < 0.5:
            assert time.monotonic() < deadline, "the burner got no 0.5 s of CPU in 20 s"
            time.sleep(0.05)
        end = CpuReading.now({"burner": pid, "me": None})
    cpu = ClientCpu.between(start, end)
    burner = cpu.processes["burner"]
    assert burner is not None and burner.cpu_s >= 0.5
    # a process busy all the time takes at most one core; the wall clock bounds its share
    assert 0 < burner.share <= 1.05
    me = cpu.processes["me"]
    assert me is not None and me.share < burner.share  # this process mostly slept
    # every CPU had a burner: the machine was busy, whatever else ran beside
    assert cpu.machine_busy is not None and cpu.machine_busy >= BUSY_MACHINE
    assert cpu.cpus == cpus


@linux_only
def test_a_process_that_is_gone_is_unknown_not_zero() -> None:
    with burners(1, 0.1) as procs:
        pid = procs[0].pid
        start = CpuReading.now({"gone": pid})
        procs[0].wait()
    end = CpuReading.now({"gone": pid})
    assert process_cpu_s(pid) is None
    assert ClientCpu.between(start, end).processes["gone"] is None
    assert ClientCpu.between(start, end).to_json()["processes"]["gone"] is None


def test_this_process_is_read_everywhere() -> None:
    a = process_cpu_s(None)
    sum(i * i for i in range(300_000))
    b = process_cpu_s(None)
    assert a is not None and b is not None and b > a


@linux_only
def test_the_machine_reading_is_busy_within_total() -> None:
    reading = machine_cpu_s()
    assert reading is not None
    busy, total = reading
    assert 0 < busy <= total


def _cpu(window: float | None, engine: float, busy: float | None, endpoint: float | None = None):
    start = CpuReading(
        0.0,
        {"window": 0.0 if window is not None else None, "engine": 0.0, "endpoint": 0.0},
        (0.0, 0.0),
    )
    end = CpuReading(
        10.0,
        {
            "window": None if window is None else window * 10,
            "engine": engine * 10,
            "endpoint": None if endpoint is None else endpoint * 10,
        },
        None if busy is None else (busy * 20, 20.0),
    )
    return ClientCpu.between(start, end, cpus=2)


def test_the_observer_effect_is_said_only_beside_a_local_server_on_a_busy_machine() -> None:
    busy = _cpu(window=0.08, engine=0.04, busy=0.97)
    effect = observer_effect(busy, local_endpoint=True)
    assert effect == ObserverEffect(
        pytest.approx(0.12), pytest.approx(0.08), None, pytest.approx(0.97), 2
    )
    # a server elsewhere: splitdesk's CPU took nothing from it
    assert observer_effect(busy, local_endpoint=False) is None
    # idle CPU left on this machine: nothing taken from the local server either
    assert observer_effect(_cpu(window=0.08, engine=0.04, busy=0.5), True) is None
    # the machine's load unknown (no /proc/stat): no claim
    assert observer_effect(_cpu(window=0.08, engine=0.04, busy=None), True) is None
    # the built-in endpoint is the server: its own share is not splitdesk's (the client)
    builtin = observer_effect(_cpu(window=0.08, engine=0.04, busy=0.9, endpoint=0.3), True)
    assert builtin is not None
    assert builtin.client_share == pytest.approx(0.12)
    assert builtin.endpoint_share == pytest.approx(0.3)


def test_the_bench_json_figures() -> None:
    doc = _cpu(window=None, engine=0.25, busy=0.9, endpoint=0.1).to_json()
    assert doc["wall_s"] == 10.0 and doc["cpus"] == 2 and doc["machine_busy"] == 0.9
    assert doc["processes"]["engine"] == {"cpu_s": 2.5, "share": 0.25}
    assert doc["processes"]["endpoint"] == {"cpu_s": 1.0, "share": 0.1}
    assert doc["processes"]["window"] is None  # not measured: said as unknown, never as 0


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("http://127.0.0.1:8080/v1", True),
        ("http://localhost:11434", True),
        ("http://LOCALHOST:1234/v1", True),
        ("http://[::1]:8000/v1", True),
        ("http://127.3.4.5/v1", True),
        ("https://api.openai.com/v1", False),
        ("http://192.168.1.20:8080/v1", False),
        ("http://127.0.0.1.example.com/v1", False),
        ("not a url", False),
        ("", False),
    ],
)
def test_loopback_urls(url: str, local: bool) -> None:
    assert is_loopback_url(url) is local


def test_a_recording_keeps_the_figures_a_replay_says_again() -> None:
    """A window run's recording keeps its CPU figures (``RunRecord.client_cpu``), so its
    replay says what the live run said, and a file read back gives the same figures."""
    cpu = _cpu(window=0.08, engine=0.04, busy=0.97, endpoint=0.2)
    record = ClientCpuRecord.model_validate_json(
        ClientCpuRecord.of(cpu, local_endpoint=True).model_dump_json()
    )
    assert record.local_endpoint
    again = record.figures()
    assert again.to_json() == cpu.to_json()
    assert observer_effect(again, record.local_endpoint) == observer_effect(cpu, True)
