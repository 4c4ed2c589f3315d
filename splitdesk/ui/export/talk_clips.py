"""The talk's clips from the window: ``splitdesk scenarios --export`` run as a child
process (:class:`TalkClips`), under a progress dialog with Cancel.

Why a child and not the window's own loop: a scene without a recording is first *run* on
the built-in endpoint by the bench (synchronous, its own event loop), and eleven scenes
render hundreds of frames each; in a process of its own that work never touches the
window's event loop or its GUI thread, and the window stays free while it runs. The child
is started as splitdesk starts all its children (:mod:`splitdesk.childproc`: safe-path
mode, the same splitdesk installed or frozen) through :class:`QProcess`, whose signals
deliver its output on the GUI thread without a reader thread.

What the child says (:func:`splitdesk.cli.scenarios.export_talk`): one stderr line as each
scene starts (``scene 3/11 rate-limit: …``: the dialog's progress) and one stdout line per
file written (``mp4: wrote …``). Cancel (or the window closing) sends SIGTERM: the child
ends its clip at the next frame with no partial file and exits 130; after
:data:`GRACE_S` it is killed, and any temporary ``.part`` file it left in the folder is
removed.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import signal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QProcess, QProcessEnvironment, Qt
from PySide6.QtWidgets import QMessageBox, QProgressDialog

from splitdesk.childproc import child_env, failure_line, module_command
from splitdesk.ui.common.tasks import spawn
from splitdesk.ui.export.clips_dialog import ClipsChoice, ClipsDialog

if TYPE_CHECKING:
    from splitdesk.ui.port import Port

#: Seconds a cancelled export has to end its clip and exit before it is killed.
GRACE_S = 10.0
#: The child's exit status when SIGTERM stopped it (splitdesk.cli.scenarios.STOPPED).
STOPPED = 128 + signal.SIGINT

_SCENE = re.compile(r"^scene (\d+)/(\d+) (\S+): (running|rendering)")
_WROTE = re.compile(r"^(mp4|gif|webp|png): wrote (.+?) \(")


def clips_command(choice: ClipsChoice, theme: str) -> list[str]:
    """The child's argv: ``splitdesk scenarios --export FOLDER …`` for ``choice``."""
    command = [
        *module_command("splitdesk"),
        *("scenarios", "--export", str(choice.folder)),
        *("--size", f"{choice.size[0]}x{choice.size[1]}", "--fps", f"{choice.fps:g}"),
        *("--formats", ",".join(choice.kinds), "--theme", theme),
    ]
    if choice.talk is not None:
        command += ["--talk", str(choice.talk)]
    return command


class TalkClips(QObject):
    """File → Export → Clips of the talk (module docstring). :meth:`ask` shows the dialog;
    :meth:`export` runs one export and returns its task. ``written``: the files the last
    export wrote; ``busy`` while one runs (one at a time)."""

    def __init__(self, port: Port) -> None:
        super().__init__(port.widget)
        self.port = port
        self.busy = False
        self.written: list[Path] = []
        self.progress: QProgressDialog | None = None
        self.dialog: ClipsDialog | None = None
        self.process: QProcess | None = None

    def ask(self) -> ClipsDialog | None:
        """Show the choices; OK starts the export."""
        if self.busy:
            self.port.say("The talk's clips are being exported; wait for it or cancel it.")
            return None
        dialog = ClipsDialog(self.port.widget)
        self.dialog = dialog
        dialog.accepted.connect(lambda: self.export(dialog.choice()))
        dialog.show()
        return dialog

    def export(self, choice: ClipsChoice) -> asyncio.Task[Any]:
        """Run ``splitdesk scenarios --export`` for ``choice`` under a progress dialog with
        Cancel; the status bar says what was written. Returns the task (it ends with the
        window: :func:`~splitdesk.ui.common.tasks.spawn`)."""
        self.busy = True
        self.written = []
        dialog = QProgressDialog("Starting the export…", "Cancel", 0, 0, self.port.widget)
        dialog.setWindowTitle("Clips of the talk")
        dialog.setWindowModality(Qt.WindowModality.NonModal)
        dialog.setMinimumDuration(0)
        dialog.setAutoClose(False)
        dialog.setAutoReset(False)
        dialog.setMinimumWidth(int(460 * self.port.scale))
        dialog.show()
        self.progress = dialog
        return spawn(self._run(choice, dialog), "export the talk's clips", ends_with_window=True)

    async def _run(self, choice: ClipsChoice, dialog: QProgressDialog) -> None:
        proc = QProcess(self)
        self.process = proc
        env = QProcessEnvironment()
        for key, value in child_env(PYTHONUNBUFFERED="1", QT_QPA_PLATFORM="offscreen").items():
            env.insert(key, value)
        proc.setProcessEnvironment(env)
        errors: list[str] = []
        finished: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        buffers = {"out": b"", "err": b""}

        def lines(which: str, data: bytes) -> list[str]:
            buffers[which] += data
            *done, buffers[which] = buffers[which].split(b"\n")
            return [line.decode("utf-8", "replace").rstrip("\r") for line in done]

        def on_err() -> None:
            for line in lines("err", bytes(proc.readAllStandardError().data())):
                errors.append(line)
                del errors[:-40]
                if m := _SCENE.match(line):
                    k, total, name, doing = int(m[1]), int(m[2]), m[3], m[4]
                    dialog.setMaximum(total)
                    dialog.setValue(k - 1)
                    verb = (
                        "running it on the built-in endpoint"
                        if doing == "running"
                        else ("rendering")
                    )
                    dialog.setLabelText(f"Scene {k} of {total}, {name}: {verb}…")

        def on_out() -> None:
            for line in lines("out", bytes(proc.readAllStandardOutput().data())):
                if m := _WROTE.match(line):
                    self.written.append(Path(m[2]))

        def on_finished(*_: object) -> None:
            if not finished.done():
                finished.set_result(None)

        proc.readyReadStandardError.connect(on_err)
        proc.readyReadStandardOutput.connect(on_out)
        proc.finished.connect(on_finished)
        proc.errorOccurred.connect(
            lambda e: on_finished() if e == QProcess.ProcessError.FailedToStart else None
        )
        command = clips_command(choice, self.port.app_settings().theme)
        cancel_asked = False

        def cancel() -> None:
            nonlocal cancel_asked
            cancel_asked = True
            dialog.setLabelText("Stopping: the clip being rendered ends at its next frame…")
            proc.terminate()

        dialog.canceled.connect(cancel)
        proc.start(command[0], command[1:])
        try:
            await finished
        except asyncio.CancelledError:  # the window closes: the child ends first
            await self._stop(proc, finished, choice.folder)
            raise
        finally:
            self.busy = False
            self.progress = None
            self.process = None
            dialog.canceled.disconnect(cancel)  # closing the dialog says "canceled" too
            dialog.close()
            dialog.deleteLater()
        on_out()
        on_err()
        if proc.error() == QProcess.ProcessError.FailedToStart:
            self._problem(f"Could not start the export: {proc.errorString()}")
            return
        code = proc.exitCode() if proc.exitStatus() == QProcess.ExitStatus.NormalExit else -1
        where = choice.folder
        if code == 0:
            self.port.say(f"Wrote {len(self.written)} clip files into {where}")
        elif cancel_asked or code == STOPPED:
            kept = f"; the {len(self.written)} written before are kept" if self.written else ""
            self.port.say(f"Clips export cancelled{kept}; no partial file was left.")
        else:
            line = failure_line(errors).removeprefix("splitdesk scenarios: error: ")
            self._problem(line or f"the export stopped (exit status {code})")

    async def _stop(self, proc: QProcess, finished: asyncio.Future[None], folder: Path) -> None:
        """End the child: SIGTERM, then after :data:`GRACE_S` SIGKILL and the removal of
        any ``.part`` file of a clip it was writing."""
        if proc.state() == QProcess.ProcessState.NotRunning:
            return
        proc.terminate()
        with contextlib.suppress(TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(finished), GRACE_S)
        if proc.state() != QProcess.ProcessState.NotRunning:
            proc.kill()
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(finished), 5.0)
            for part in await asyncio.to_thread(lambda: list(folder.glob(".[0-9][0-9]-*.part"))):
                with contextlib.suppress(OSError):
                    await asyncio.to_thread(part.unlink)

    def _problem(self, message: str) -> None:
        self.port.say(f"Could not export the talk's clips: {message}")
        box = QMessageBox(
            QMessageBox.Icon.Warning,
            "Clips of the talk",
            f"Could not export the talk's clips: {message}",
            QMessageBox.StandardButton.Ok,
            self.port.widget,
        )
        box.setModal(False)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.show()
