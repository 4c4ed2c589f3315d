"""Start the built-in endpoint as a child process, and make sure it dies with its parent.

The child runs ``python -m splitdesk sim --port 0 …`` (``splitdesk sim …`` in a frozen
bundle, :mod:`splitdesk.childproc`) so GUI load in the parent cannot
perturb the simulated server's timing. It prints ``listening on URL`` once it accepts
connections; :func:`start_sim` waits for that line. The child exits when

* :meth:`SimProcess.stop` terminates it (SIGTERM, then SIGKILL after a grace period),
* its stdin reaches end-of-file: the parent holds the only write end, so when the parent
  dies, however it dies (SIGKILL included), the kernel closes it and the child follows,
* its parent pid changes (belt and braces for platforms where the pipe stays open).
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import queue
import subprocess
import threading
from dataclasses import dataclass, field
from types import TracebackType
from typing import IO, Any

from splitdesk.childproc import child_env, failure_line, module_command
from splitdesk.cpus import rejoin, separate
from splitdesk.sim.params import DEFAULT_PROFILE, SimParams

READY_PREFIX = "listening on "

log = logging.getLogger(__name__)


class SimStartError(RuntimeError):
    """The built-in endpoint did not come up. The message ends with :attr:`cause`, the one
    line of its stderr that says why (:func:`splitdesk.childproc.failure_line`; the rest
    of its stderr goes to the log)."""

    def __init__(self, message: str, cause: str = "") -> None:
        super().__init__(message)
        self.cause = cause


def override_args(overrides: dict[str, Any]) -> list[str]:
    """Command-line flags for parameter ``overrides`` (``{"t_seq": 0.1}`` → ``--t-seq 0.1``).

    Raises ``KeyError`` for a name that is not a :class:`SimParams` field."""
    args: list[str] = []
    for name, value in overrides.items():
        if name not in SimParams.model_fields:
            raise KeyError(f"unknown simulator parameter {name!r}")
        shown = ("on" if value else "off") if isinstance(value, bool) else str(value)
        args += [f"--{name.replace('_', '-')}", shown]
    return args


@dataclass
class SimProcess:
    """A running built-in endpoint child. ``url`` is its root (``http://127.0.0.1:P``)."""

    url: str
    process: subprocess.Popen[str]
    profile: str
    stderr_tail: collections.deque[str] = field(
        default_factory=lambda: collections.deque(maxlen=40)
    )
    #: threads kept off the endpoint's CPU (:func:`start_sim_beside_me`): given every CPU
    #: back when it stops
    clients: list[int] = field(default_factory=list)

    @property
    def openai_base_url(self) -> str:
        """Base URL an OpenAI client takes (``…/v1``)."""
        return self.url + "/v1"

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self, timeout: float = 3.0) -> None:
        """Terminate the child and wait for it (SIGKILL after ``timeout`` seconds); its
        :attr:`clients` may run on every CPU again. Idempotent."""
        clients, self.clients = self.clients, []
        rejoin(clients)
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout)
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()

    def __enter__(self) -> SimProcess:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _drain(stream: IO[str], sink: queue.Queue[str] | None, tail: collections.deque[str]) -> None:
    try:
        for line in stream:
            tail.append(line.rstrip("\n"))
            if sink is not None:
                sink.put(line)
    except (OSError, ValueError):  # closed by stop()
        pass
    if sink is not None:
        sink.put("")  # end of output: the child exited


def start_sim(
    profile: str = DEFAULT_PROFILE,
    overrides: dict[str, Any] | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    timeout: float = 20.0,
) -> SimProcess:
    """Start ``splitdesk sim`` as a child process and wait until it accepts connections.

    Blocks up to ``timeout`` seconds (call it from a worker thread in a GUI). Raises
    :class:`SimStartError` when the child exits or stays silent, ``ValueError`` (one line)
    for an unknown profile or a bad parameter.
    """
    SimParams.checked(profile, overrides or {})  # validate before spawning
    args = [
        *module_command("splitdesk"),  # the bundle binary itself when frozen
        "sim",
        "--host",
        host,
        "--port",
        str(port),
        "--profile",
        profile,
        "--parent-pid",
        str(os.getpid()),
        "--watch-stdin",
        *override_args(overrides or {}),
    ]
    env = child_env(PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        args,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        errors="replace",
        env=env,
    )
    assert proc.stdout is not None and proc.stderr is not None
    lines: queue.Queue[str] = queue.Queue()
    stdout_tail: collections.deque[str] = collections.deque(maxlen=40)
    sim = SimProcess("", proc, profile)
    threading.Thread(target=_drain, args=(proc.stdout, lines, stdout_tail), daemon=True).start()
    threading.Thread(target=_drain, args=(proc.stderr, None, sim.stderr_tail), daemon=True).start()
    try:
        while True:
            try:
                line = lines.get(timeout=timeout)
            except queue.Empty:
                raise SimStartError(
                    f"the built-in endpoint did not start within {timeout:g} s"
                ) from None
            if not line:
                code = proc.wait(timeout)
                raise SimStartError(f"the built-in endpoint exited with status {code}")
            if line.startswith(READY_PREFIX):
                sim.url = line[len(READY_PREFIX) :].strip()
                return sim
    except SimStartError as exc:
        sim.stop()
        tail = list(sim.stderr_tail)
        if tail:  # the whole traceback to the log; its one telling line to the user
            log.warning("the built-in endpoint's stderr:\n%s", "\n".join(tail))
        detail = failure_line(tail)
        raise SimStartError(f"{exc}{': ' + detail if detail else ''}", detail) from None


def start_sim_beside_me(
    profile: str = DEFAULT_PROFILE, overrides: dict[str, Any] | None = None
) -> SimProcess:
    """:func:`start_sim`, then the endpoint's event loop on a CPU of its own and the
    calling thread (the client that will measure it: ``splitdesk bench`` of
    :data:`~splitdesk.cpus.MANY_STREAMS` questions or more, which runs its requests on the
    thread that started the endpoint) on the others until the endpoint stops
    (:func:`splitdesk.cpus.separate`, which says why). Raises as :func:`start_sim`."""
    sim = start_sim(profile, overrides)
    me = threading.get_native_id()
    if separate(sim.pid, [me]) is not None:
        sim.clients.append(me)
    return sim
