"""Run by tests/ui/shell/test_keyring_fresh_process.py in a fresh process (keyring picks its
backend once per process, from ``PYTHON_KEYRING_BACKEND``): builds the real window with an
endpoint whose key comes from the OS keyring, and prints one JSON line of what the user
sees. ``store``: paste a key in the Endpoint panel; ``run``: press Run against a local
socket that counts connections."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import qasync
from PySide6.QtWidgets import QApplication

from splitdesk.core.files.settings import AppSettings
from splitdesk.core.run.endpoints import EndpointSettings, KeySource
from splitdesk.ui.common.theme import DARK
from splitdesk.ui.run.controller import RunController
from splitdesk.ui.shell.main_window import MainWindow

KEY = "sk-PROBE-0123456789"


async def wait_for(signal: object, timeout: float) -> tuple[object, ...]:
    fut: asyncio.Future[tuple[object, ...]] = asyncio.get_running_loop().create_future()
    signal.connect(lambda *a: fut.done() or fut.set_result(a))  # type: ignore[attr-defined]
    return await asyncio.wait_for(fut, timeout)


async def main(action: str) -> dict[str, object]:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.setblocking(False)
    port = listener.getsockname()[1]
    endpoint = EndpointSettings(
        preset="custom",
        base_url=f"http://127.0.0.1:{port}/v1",
        model="m",
        key_source=KeySource.KEYRING,
    )
    window = MainWindow(AppSettings(endpoint=endpoint), RunController(), DARK)
    window.show()
    panel = window.endpoint
    out: dict[str, object] = {}
    for _ in range(500):  # the panel checks the keyring off the GUI thread
        if panel.keyring_problem is not None:
            break
        await asyncio.sleep(0.01)
    out["keyring_problem"] = panel.keyring_problem
    if action == "store":
        panel.key_edit.setText(KEY)
        await panel._store_key.__wrapped__(panel)
        out["key_note"] = panel.key_note.text()
        out["key_for_this_session"] = await panel.api_key() == KEY
    if action == "run":
        window.run_button.click()
        (state,) = await wait_for(window.runFinished, 30)
        out["outcomes"] = [r.outcome for r in state.requests]  # type: ignore[attr-defined]
        out["errors"] = [r.error.message for r in state.requests]  # type: ignore[attr-defined]
        out["status"] = window.statusBar().currentMessage()
        try:
            listener.accept()
            out["connections"] = 1
        except BlockingIOError:
            out["connections"] = 0
    window.close()
    await wait_for(window.closed, 10)
    listener.close()
    return out


if __name__ == "__main__":
    app = QApplication(sys.argv[:1])
    app.setQuitOnLastWindowClosed(False)
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    with loop:
        result = loop.run_until_complete(main(sys.argv[1]))
    print(json.dumps(result))
