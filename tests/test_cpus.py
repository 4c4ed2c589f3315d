"""The built-in endpoint's event loop on a CPU of its own and its client off it
(``splitdesk/cpus.py``): real threads and a real child process, their affinity read back
from the kernel."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator

import pytest

from splitdesk import cpus
from splitdesk.sim.launcher import start_sim_beside_me

pytestmark = pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity") or len(cpus.allowed_cpus()) < 2,
    reason="CPU affinity needs Linux and at least two CPUs",
)


@pytest.fixture
def child() -> Iterator[int]:
    """A child process that waits on its stdin: the stand-in endpoint's pid."""
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    try:
        yield proc.pid
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(10)


def in_thread(work: Callable[[int], None]) -> None:
    """Run ``work(tid)`` on a fresh thread (its affinity dies with it) and re-raise."""
    errors: list[BaseException] = []

    def main() -> None:
        try:
            work(threading.get_native_id())
        except BaseException as exc:  # re-raised on the test's thread
            errors.append(exc)

    t = threading.Thread(target=main)
    t.start()
    t.join(30)
    if errors:
        raise errors[0]


def test_the_endpoint_gets_the_last_cpu_and_the_client_the_others(child: int) -> None:
    allowed = cpus.allowed_cpus()

    def work(tid: int) -> None:
        cpu = cpus.separate(child, [tid])
        assert cpu == max(allowed)
        assert os.sched_getaffinity(child) == {cpu}
        assert os.sched_getaffinity(tid) == set(allowed) - {cpu}
        cpus.rejoin([tid])  # measuring a real server next: every CPU again
        assert os.sched_getaffinity(tid) == set(allowed)

    in_thread(work)


def test_a_gone_endpoint_is_no_error_and_leaves_the_client_alone() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait(10)  # reaped: its pid names no thread now

    def work(tid: int) -> None:
        assert cpus.separate(proc.pid, [tid]) is None
        assert os.sched_getaffinity(tid) == set(cpus.allowed_cpus())

    in_thread(work)


def test_bench_keeps_its_thread_off_the_endpoints_cpu_until_the_endpoint_stops() -> None:
    """``splitdesk bench``/``sweep`` start the endpoint with ``start_sim_beside_me`` and
    send from the same thread; a bench run inside a longer-lived process (a test, a
    script) leaves that thread on every CPU afterwards."""

    def work(tid: int) -> None:
        sim = start_sim_beside_me("batching", {"speed": 4.0})
        try:
            (cpu,) = os.sched_getaffinity(sim.pid)
            assert cpu not in os.sched_getaffinity(tid)
        finally:
            sim.stop()
        assert os.sched_getaffinity(tid) == set(cpus.allowed_cpus())

    in_thread(work)


def test_a_sandbox_that_refuses_to_say_its_cpus_gets_nothing_placed(
    child: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refused(_pid: int) -> set[int]:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(cpus, "_allowed", None)
    monkeypatch.setattr(os, "sched_getaffinity", refused)
    assert cpus.allowed_cpus() == frozenset()
    assert cpus.separate(child, []) is None  # no exception: the run goes on unplaced
    cpus.rejoin([child])
