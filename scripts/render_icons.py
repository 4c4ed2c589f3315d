"""Render the app icon's PNG sizes from its SVG source.

    .venv/bin/python scripts/render_icons.py

Reads ``resources/icons/splitdesk.svg`` and writes
``resources/icons/hicolor/NxN/apps/splitdesk.png`` for N in 16…512 (the freedesktop
icon theme layout, so the installer copies the tree as it is). The PNGs are committed:
they ship in the wheel and the bundle. Re-run this after editing the SVG. Uses Qt's own
SVG renderer (QtSvg, already a dependency), offscreen: no display and no extra tool.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QImage, QPainter
from PySide6.QtSvg import QSvgRenderer

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "resources" / "icons" / "splitdesk.svg"
THEME = ROOT / "resources" / "icons" / "hicolor"
#: The sizes desktops look up (freedesktop icon theme spec; 512 for software centres).
SIZES = (16, 24, 32, 48, 64, 128, 256, 512)


def render(size: int) -> QImage:
    """The SVG drawn on a transparent ``size``×``size`` ARGB image."""
    renderer = QSvgRenderer(str(SOURCE))
    if not renderer.isValid():
        raise SystemExit(f"render_icons: {SOURCE} is not a valid SVG")
    image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
    renderer.render(painter)
    painter.end()
    return image


def main() -> int:
    _app = QGuiApplication(sys.argv[:1])
    for size in SIZES:
        target = THEME / f"{size}x{size}" / "apps" / "splitdesk.png"
        target.parent.mkdir(parents=True, exist_ok=True)
        if not render(size).save(str(target)):
            print(f"render_icons: could not write {target}", file=sys.stderr)
            return 1
        print(f"{target.relative_to(ROOT)} ({target.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
