"""A loopback TCP listener that only counts the connections made to it: for tests that
check a bad option or setting is refused before anything is sent ("0 connections")."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress


class CountingListener:
    """Listens on ``127.0.0.1:port``; every connection is accepted, counted and closed."""

    def __init__(self) -> None:
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._sock.getsockname()[1]
        self.accepted = 0
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        """Its OpenAI-style base URL, ``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:  # closed
                return
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        # shutdown wakes the thread's accept(); a close alone leaves it blocked (Linux), and
        # the join then waited its whole timeout: 10 s per test
        with suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()
        self._thread.join(timeout=10)
        assert not self._thread.is_alive(), "the counting listener's thread did not end"


@contextmanager
def counting_listener() -> Iterator[CountingListener]:
    """A :class:`CountingListener`, closed on leaving."""
    listener = CountingListener()
    try:
        yield listener
    finally:
        listener.close()
