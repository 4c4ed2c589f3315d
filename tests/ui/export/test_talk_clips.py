"""File → Export → Clips of the talk: the dialog asks what ``splitdesk scenarios --export``
takes, the export runs as a real child process and writes the clips while the window stays
free, Cancel stops it with nothing partial left, and a bad talk is said in one line."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from PySide6.QtWidgets import QDialogButtonBox, QPushButton
from ui.conftest import wait_until

from paths import ROOT
from splitdesk.core.files.settings import AppSettings
from splitdesk.ui.export.clips_dialog import ClipsChoice, ClipsDialog
from splitdesk.ui.export.talk_clips import clips_command

SHORT = ROOT / "tests" / "fixtures" / "recordings" / "v1.splitdesk.json"  # 0.21 s
DEMO = ROOT / "resources" / "demos" / "batching.splitdesk.json"  # 12 s


def talk_of(folder: Path, scenes: dict[str, Path]) -> Path:
    """A talk folder: one scenario .toml per (name, recording)."""
    folder.mkdir()
    for name, recording in scenes.items():
        (folder / f"{name}.toml").write_text(
            f'version = 1\ntitle = "{name.title()}"\ncaption = "About {name}."\n'
            f'questions = "everyday-five"\n[endpoint]\nrecording = "{recording}"\n',
            encoding="utf-8",
        )
    return folder


def test_the_dialog_asks_what_the_command_takes(qtbot: Any) -> None:
    dialog = ClipsDialog()
    qtbot.addWidget(dialog)
    choice = dialog.choice()
    assert choice.talk is None  # the built-in talk
    assert choice.kinds == ("mp4", "gif", "png") and choice.size == (1280, 720)
    assert choice.fps == 30.0 and choice.folder.name == "splitdesk talk"
    ok = dialog.buttons.button(QDialogButtonBox.StandardButton.Ok)
    for box in dialog.kind_boxes.values():
        box.setChecked(False)
    assert not ok.isEnabled()  # nothing to write
    dialog.kind_boxes["webp"].setChecked(True)
    assert ok.isEnabled()
    dialog.folder.setText(" ")
    assert not ok.isEnabled()  # nowhere to write
    dialog.folder.setText("/tmp/clips")
    dialog.talk.setText("/talks/mine")
    dialog.size_box.setCurrentIndex(1)
    choice = dialog.choice()
    assert choice == ClipsChoice(Path("/talks/mine"), Path("/tmp/clips"), (1920, 1080), 30.0,
                                 ("webp",))  # fmt: skip
    command = clips_command(choice, "light")
    assert command[command.index("scenarios") :] == [
        *("scenarios", "--export", "/tmp/clips", "--size", "1920x1080", "--fps", "30"),
        *("--formats", "webp", "--theme", "light", "--talk", "/talks/mine"),
    ]


@pytest.mark.asyncio
async def test_the_window_exports_a_talk_as_clips(make_window: Any, tmp_path: Path) -> None:
    window = make_window(AppSettings())
    clips = window.exports.clips
    talk = talk_of(tmp_path / "talk", {"alpha": SHORT, "beta": SHORT})
    out = tmp_path / "clips"
    task = clips.export(ClipsChoice(talk, out, (320, 180), 10.0, ("gif", "png")))
    assert clips.busy and clips.progress is not None
    await wait_until(lambda: task.done(), 120, "the clips export's child process ended")
    task.result()
    assert not clips.busy
    names = sorted(p.name for p in out.iterdir())
    assert names == ["01-alpha.gif", "01-alpha.png", "02-beta.gif", "02-beta.png"]
    assert sorted(p.name for p in clips.written) == names
    with Image.open(out / "02-beta.png") as poster:
        assert poster.size == (320, 180)
    assert window.statusBar().currentMessage() == f"Wrote 4 clip files into {out}"


@pytest.mark.asyncio
async def test_cancel_stops_the_export_and_leaves_nothing_partial(
    make_window: Any, tmp_path: Path
) -> None:
    window = make_window(AppSettings())
    clips = window.exports.clips
    talk = talk_of(tmp_path / "talk", {"long": DEMO, "never": SHORT})
    out = tmp_path / "clips"
    task = clips.export(ClipsChoice(talk, out, (320, 180), 30.0, ("mp4",)))
    dialog = clips.progress
    assert dialog is not None
    await wait_until(
        lambda: "Scene 1 of 2, long: rendering" in dialog.labelText(), 60,
        "the child said it renders scene 1",
    )  # fmt: skip
    await wait_until(lambda: any(out.glob(".01-long.mp4.*.part")), 60, "the MP4 being written")
    dialog.findChild(QPushButton).click()  # the dialog's Cancel, as a user presses it
    await wait_until(lambda: task.done(), 30, "the cancelled export ended")
    assert os.listdir(out) == []  # no clip, no .part, scene 2 never started
    assert window.statusBar().currentMessage() == (
        "Clips export cancelled; no partial file was left."
    )
    assert clips.process is None and not clips.busy


@pytest.mark.asyncio
async def test_a_bad_talk_is_said_in_one_line(make_window: Any, tmp_path: Path) -> None:
    window = make_window(AppSettings())
    clips = window.exports.clips
    empty = tmp_path / "empty"
    empty.mkdir()
    task = clips.export(ClipsChoice(empty, tmp_path / "clips", (320, 180), 10.0, ("png",)))
    await wait_until(lambda: task.done(), 60, "the clips export's child process ended")
    assert window.statusBar().currentMessage() == (
        f"Could not export the talk's clips: {empty}: holds no scenario (.toml) file"
    )
