"""A replay on a narrow window or a projector (1280×720, 1024×768, --scale 1.5): the
replay scrubber stays on screen (the status bar tells the user to drag it) and no toolbar
button is pushed into a toolbar's overflow menu; the main toolbar fits every profile's
name, and where nothing fits its overflow button shows. Real widgets, offscreen."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import pytest_asyncio
from PySide6.QtCore import QRect
from PySide6.QtWidgets import QApplication, QToolBar, QToolButton, QWidget
from ui.conftest import tasks_left, wait_signal, wait_until

from splitdesk.core.files.recording import load_recording
from splitdesk.core.files.settings import AppSettings
from splitdesk.core.run.endpoints import EndpointSettings
from splitdesk.sim.params import PROFILES
from splitdesk.ui.common.gc import GuiGarbageCollector
from splitdesk.ui.common.theme import DARK, apply_theme
from splitdesk.ui.replay.recordings import demo_files
from splitdesk.ui.run.controller import RunController
from splitdesk.ui.shell.main_window import MainWindow


@pytest_asyncio.fixture
async def window_at_scale(qtbot: Any) -> AsyncIterator[Callable[[float], MainWindow]]:
    """A window at a text scale (the app's theme applied at that scale, as ``--scale``
    does); closed, and the app's look restored, afterwards."""
    app = QApplication.instance()
    assert isinstance(app, QApplication)
    saved = (app.font(), app.styleSheet(), app.palette())
    app.setQuitOnLastWindowClosed(False)  # as in splitdesk.app
    collector = GuiGarbageCollector()
    made: list[MainWindow] = []

    def make(scale: float) -> MainWindow:
        apply_theme(app, DARK, scale)
        window = MainWindow(AppSettings(), RunController(), DARK, scale)
        window.show()
        made.append(window)
        return window

    yield make
    for window in made:
        if not window._closed:
            window.close()
            await wait_signal(window.closed, 10)
    left = await tasks_left()  # before the loop closes: a task left there could hang it
    assert not left, f"tasks left after closing the window: {left}"
    for window in made:
        window.deleteLater()
    app.setStyleSheet(saved[1])
    app.setFont(saved[0])
    app.setPalette(saved[2])
    collector.stop()


def rect_in_window(widget: QWidget, window: MainWindow) -> QRect:
    return QRect(widget.mapTo(window, widget.rect().topLeft()), widget.size())


def problems(window: MainWindow) -> list[str]:
    """What is wrong with the toolbars as laid out now (empty: nothing)."""
    found: list[str] = []
    bar = window.recordings.replay.bar
    scrubber = bar.scrubber
    if not scrubber.isVisible():
        found.append("the scrubber is hidden")
    elif not window.rect().contains(rect_in_window(scrubber, window)):
        found.append(f"the scrubber sticks out: {rect_in_window(scrubber, window)}")
    elif scrubber.width() < bar.min_scrub:
        found.append(f"the scrubber is {scrubber.width()} px wide")
    toolbars = [t for t in window.findChildren(QToolBar) if t.isVisible()]
    if bar not in toolbars:
        found.append("the replay bar is hidden")
    for toolbar in toolbars:
        found += [f"{toolbar.windowTitle()}: {p}" for p in toolbar_problems(toolbar, window)]
    return found


def toolbar_problems(toolbar: QToolBar, window: MainWindow) -> list[str]:
    """The items of ``toolbar`` that are hidden, in its overflow menu or off the window."""
    found: list[str] = []
    ext = toolbar.findChild(QToolButton, "qt_toolbar_ext_button")
    if ext is not None and ext.isVisible():
        found.append("overflow button shown")
    for action in toolbar.actions():
        w = toolbar.widgetForAction(action)
        if not action.isVisible() or action.isSeparator() or w is None:
            continue
        if not w.isVisible():
            found.append(f"{action.text() or w!r} hidden")
        elif not window.rect().contains(rect_in_window(w, window)):
            found.append(f"{action.text() or w!r} sticks out")
    return found


@pytest.mark.asyncio
@pytest.mark.parametrize("scale", [1.0, 1.5])
async def test_replay_scrubber_and_toolbar_buttons_fit_narrow_windows(
    window_at_scale: Any, scale: float
) -> None:
    window = window_at_scale(scale)
    demo = dict(demo_files())["batching"]
    driver = window.recordings.replay
    driver.open(load_recording(demo), speed=4.0)
    assert driver.player is not None
    driver.player.pause()  # the layout is what is checked, not the playback
    sizes = [(1280, 720), (1024, 768)] if scale == 1.0 else [(1280, 720)]
    for size in sizes:
        window.resize(*size)
        await wait_until(lambda s=size: window.size().toTuple() == s, 5, f"resized to {size}")
        await wait_until(lambda: not problems(window), 5, f"toolbars fit at {size}×{scale}")
    # The buttons' whole wordings stay where they fit (a wide window).
    window.resize(1900, 1000)
    await wait_until(lambda: driver.bar.close_button.text() == "✕ Close replay", 5)
    assert driver.bar.banner.text().startswith("REPLAY of ")


@pytest.mark.asyncio
@pytest.mark.parametrize("profile", list(PROFILES))
async def test_every_profile_name_leaves_the_toolbar_whole_on_a_projector(
    window_at_scale: Any, profile: str
) -> None:
    """1280×720 at --scale 1.5 with each built-in profile's name on the endpoint button
    ("compute-bound · 4×" is longer than "batching · 1×"): every button in sight, none in
    the overflow menu (an estimate of the toolbar's spacing let Present slip into it)."""
    window = window_at_scale(1.5)
    window.endpoint.set_settings(EndpointSettings(profile=profile, speed=4.0))
    window.endpoint.changed.emit()
    window.resize(1280, 720)
    await wait_until(lambda: window.size().toTuple() == (1280, 720), 5, "resized to 1280×720")
    await wait_until(
        lambda: not toolbar_problems(window._toolbar, window), 5, f"the toolbar fits with {profile}"
    )
    assert profile in window.endpoint_button.text()


@pytest.mark.asyncio
async def test_an_overflowing_toolbar_shows_its_more_button(window_at_scale: Any) -> None:
    """1024×768 at --scale 1.5 has no room for the theme and Present buttons: the overflow
    button that holds them is there to see (»), not an empty sliver."""
    window = window_at_scale(1.5)
    window.resize(1024, 768)
    ext = window._toolbar.findChild(QToolButton, "qt_toolbar_ext_button")
    assert ext is not None
    await wait_until(lambda: ext.isVisible(), 5, "the overflow button at 1024×768×1.5")
    assert ext.text() == "»" and ext.toolTip() == "More buttons"
    image = ext.grab().toImage()
    ink = {image.pixel(x, y) for x in range(image.width()) for y in range(image.height())}
    assert len(ink) > 2, "the overflow button draws nothing"
