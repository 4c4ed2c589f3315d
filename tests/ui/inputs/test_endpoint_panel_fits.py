"""The Endpoint panel fits the window's sidebar at the sizes people use: 1920×1080 and
1280×720 at 1.5× type (a projector). No sideways scroll bar, no label cut ("se URL"), the
model's whole name, the Test-connection result whole."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtWidgets import QApplication, QLabel, QScrollArea, QWidget
from ui.conftest import wait_until

from splitdesk.core.files.settings import AppSettings
from splitdesk.core.run.endpoints import EndpointSettings
from splitdesk.ui.common.theme import DARK, apply_theme

MODEL = "tiny-random-llama-f16.gguf"  # the model name llama-server answers with
RESULT = (
    "✓ http://127.0.0.1:18081/v1 answered in 3 ms, 1 model(s) — but it does not list "
    "“qwen2.5-7b-instruct-q4_k_m”"
)


def visible_width(w: QWidget) -> int:
    """How much of ``w`` the scroll area's viewport shows across (pixels)."""
    area = w
    while area is not None and not isinstance(area, QScrollArea):
        area = area.parentWidget()
    assert isinstance(area, QScrollArea)
    left = w.mapTo(area.viewport(), w.rect().topLeft()).x()
    right = left + w.width()
    return max(0, min(right, area.viewport().width()) - max(left, 0))


@pytest.mark.asyncio
@pytest.mark.parametrize(("size", "scale"), [((1920, 1080), 1.0), ((1280, 720), 1.5)])
async def test_the_endpoint_panel_fits_the_sidebar(
    qtbot: Any, make_window: Any, size: tuple[int, int], scale: float
) -> None:
    app = QApplication.instance()
    assert isinstance(app, QApplication)
    apply_theme(app, DARK, scale)
    try:
        await check_fits(qtbot, make_window, size, scale)
    finally:
        apply_theme(app, DARK, 1.0)


async def check_fits(qtbot: Any, make_window: Any, size: tuple[int, int], scale: float) -> None:
    settings = AppSettings(
        endpoint=EndpointSettings(
            preset="llamacpp", base_url="http://127.0.0.1:18081/v1", model=MODEL
        )
    )
    window = make_window(settings, scale)
    window.resize(*size)
    window.set_sidebar_shown(True, remember=False)
    window.sidebar.setCurrentIndex(1)  # the Endpoint tab
    panel = window.endpoint
    panel.test_note.setText(RESULT)
    await wait_until(lambda: panel.isVisible() and panel.width() > 0, 10, "the panel shows")
    area = panel.parentWidget().parentWidget()
    assert isinstance(area, QScrollArea)
    await wait_until(
        lambda: 0 < panel.width() <= area.viewport().width(), 10, "the panel is laid out"
    )
    # no sideways scrolling: the panel is no wider than the sidebar shows
    assert not area.horizontalScrollBar().isVisible()
    assert panel.minimumSizeHint().width() <= area.viewport().width()
    # every label whole (none cut to "se URL" or "dialect")
    for label in panel.findChildren(QLabel):
        if not label.isVisible() or not label.text() or label.wordWrap():
            continue
        need = label.fontMetrics().horizontalAdvance(label.text())
        assert label.width() >= need, (label.text(), label.width(), need)
        assert visible_width(label) >= need, label.text()
    # the model's whole name fits its box; the URL and model boxes are not scrolled
    line = panel.model.lineEdit()
    assert line is not None and line.text() == MODEL
    assert line.fontMetrics().horizontalAdvance(MODEL) <= line.width() - 8, line.width()
    assert panel.base_url.cursorPosition() == 0
    # the Test-connection result is whole: wrapped to the panel, tall enough for it
    note = panel.test_note
    area.ensureWidgetVisible(note)
    await wait_until(
        lambda: note.height() >= note.heightForWidth(note.width()), 10, "the result is laid out"
    )
    assert visible_width(note) >= note.width() - 1
    assert note.width() <= area.viewport().width()
