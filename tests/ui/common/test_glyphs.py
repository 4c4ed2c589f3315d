"""Every character the window can show has a glyph in the fonts installed with splitdesk
(``scripts/install.sh``: DejaVu, WenQuanYi Micro Hei, Noto Color Emoji): no empty "tofu"
box on a button, a pane header or a caption in the back row of a talk."""

from __future__ import annotations

import ast
from typing import Any

import pytest
from PySide6.QtGui import QAction, QTextLayout
from PySide6.QtWidgets import QAbstractButton, QApplication

from paths import ROOT
from splitdesk.core.files.settings import AppSettings
from splitdesk.ui.common.theme import DARK, apply_theme, ui_font

#: Where the window's words come from: the views, and the core texts they show (summary,
#: diagnosis, labels, scenarios' captions).
SOURCES = [
    *sorted((ROOT / "splitdesk" / "ui").rglob("*.py")),
    *sorted((ROOT / "splitdesk" / "core").rglob("*.py")),
]


def shown_characters() -> dict[str, str]:
    """Each non-ASCII character in a string literal of :data:`SOURCES` → the first file
    (relative path) that holds it. Docstrings count too: harmless, and simpler."""
    found: dict[str, str] = {}
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                for ch in node.value:
                    if ord(ch) > 127 and ch.isprintable():
                        found.setdefault(ch, str(path.relative_to(ROOT)))
    return found


def has_glyph(text: str) -> bool:
    """Whether Qt draws ``text`` in the interface font (with its font fallback) without
    the missing-glyph box (glyph index 0)."""
    layout = QTextLayout(text, ui_font())
    layout.beginLayout()
    layout.createLine()
    layout.endLayout()
    runs = layout.glyphRuns()
    return bool(runs) and all(0 not in run.glyphIndexes() for run in runs)


def test_every_shown_character_has_a_glyph(qapp: QApplication) -> None:
    apply_theme(qapp, DARK)
    chars = shown_characters()
    assert "→" in chars and "·" in chars, "the scan found the window's texts"
    missing = {f"{ch} (U+{ord(ch):04X})": where for ch, where in chars.items() if not has_glyph(ch)}
    assert not missing, f"no glyph in the installed fonts (drawn as an empty box): {missing}"


@pytest.mark.asyncio
async def test_every_button_and_menu_text_of_the_window_has_a_glyph(
    qapp: QApplication, make_window: Any
) -> None:
    """The texts the live window puts on its buttons, toolbar and menus (set at run time
    too, such as a pane's expand arrow or the server lane's fold arrow): each character is
    drawn by the interface font or Qt's fallback, never as an empty box."""
    window = make_window(AppSettings())
    texts: dict[str, str] = {}
    for button in window.findChildren(QAbstractButton):
        texts[button.text()] = type(button).__name__
    for action in window.findChildren(QAction):
        texts[action.text()] = "action"
    for lane_text in ("▾", "▸"):  # the server lane's fold arrow, both states
        window.stage.server_lane.set_fold("line" if lane_text == "▸" else "open")
        texts[window.stage.server_lane.fold_button.text()] = "server lane"
    assert any("Present" in t for t in texts), "the toolbar's Present action was found"
    missing = {
        f"{ch} (U+{ord(ch):04X}) in {text!r}": where
        for text, where in texts.items()
        for ch in text
        if ord(ch) > 127 and ch.isprintable() and not has_glyph(ch)
    }
    assert not missing, f"drawn as an empty box: {missing}"
