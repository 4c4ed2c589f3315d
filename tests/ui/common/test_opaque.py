"""A view that changes while a run streams repaints alone, not every widget behind it up
to the window (issue 25). The style sheet's background rules turned Qt's background fill
off when they polished a widget, so the fill that told Qt a view was opaque was lost: each
frame of a pane's text repainted the window, its splitters, the stage and the card."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QApplication, QVBoxLayout, QWidget
from ui.paints import PaintCounter

from splitdesk.ui.common.theme import DARK, LIGHT, apply_theme, opaque_fill
from splitdesk.ui.stage.panes import RequestPane
from splitdesk.ui.stage.summary import SummaryStrip


def styled_app() -> QApplication:
    app = QApplication.instance()
    assert isinstance(app, QApplication)
    apply_theme(app, DARK)
    return app


def test_the_fill_outlives_the_style_sheets_polish_and_a_new_theme(qtbot: Any) -> None:
    app = styled_app()
    try:
        strip = SummaryStrip(DARK)  # QFrame#summary: a style sheet background
        qtbot.addWidget(strip)
        strip.show()
        qtbot.waitUntil(lambda: strip.autoFillBackground(), timeout=2000)
        apply_theme(app, LIGHT)  # every widget polished again
        qtbot.waitUntil(lambda: strip.autoFillBackground(), timeout=2000)
        opaque_fill(strip, LIGHT.panel)  # a second call keeps one keeper, the new colour
        assert strip.palette().color(strip.backgroundRole()).name() == LIGHT.panel.lower()
    finally:
        apply_theme(app, DARK)


def test_new_text_in_a_pane_repaints_the_text_alone(qtbot: Any) -> None:
    styled_app()
    window = QWidget()
    qtbot.addWidget(window)
    box = QVBoxLayout(window)
    pane = RequestPane("Q1", "a question", "#3D8FD6", DARK)
    box.addWidget(pane)
    window.resize(500, 400)
    window.show()
    qtbot.waitExposed(window)
    pane.text.append_text("The first words of an answer")
    qtbot.wait(50)  # the first layout and paint are over
    counter = PaintCounter(window, pane, pane.text.viewport())
    for k in range(5):  # five frames of a stream
        pane.text.append_text(f" and then some more words, frame {k},")
        pane.text.viewport().repaint()
        QApplication.processEvents()
    assert counter.of(pane.text.viewport()) >= 5
    assert counter.of(pane) == 0, "the card behind the text was painted for new text"
    assert counter.of(window) == 0, "the window behind the pane was painted for new text"


def test_a_card_and_its_label_keep_their_own_fills(qtbot: Any) -> None:
    styled_app()
    card = QWidget()
    qtbot.addWidget(card)
    label = QWidget(card)
    opaque_fill(label, "#111111")
    opaque_fill(card, "#202830")  # the parent after its child: its own fill, not the child's
    card.show()
    qtbot.waitUntil(lambda: card.autoFillBackground(), timeout=2000)
    assert card.palette().color(card.backgroundRole()).name() == "#202830"
    assert label.palette().color(label.backgroundRole()).name() == "#111111"
