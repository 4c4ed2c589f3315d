"""Every character the window can show has a glyph in the fonts installed with splitdesk
(``scripts/install.sh``: DejaVu, WenQuanYi Micro Hei, Noto Color Emoji): no empty "tofu"
box on a button, a pane header or a caption in the back row of a talk."""

from __future__ import annotations

import ast
from pathlib import Path

from PySide6.QtGui import QTextLayout
from PySide6.QtWidgets import QApplication

from splitdesk.ui.theme import DARK, apply_theme, ui_font

ROOT = Path(__file__).resolve().parent.parent.parent
#: Where the window's words come from: the views, and the core texts they show (summary,
#: diagnosis, labels, scenarios' captions).
SOURCES = [
    *sorted((ROOT / "splitdesk" / "ui").glob("*.py")),
    *sorted((ROOT / "splitdesk" / "core").glob("*.py")),
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
