"""Workaround for pyqtgraph 0.14.0's SVG export on Qt >= 6.11 (pyqtgraph issue #3495).

Qt 6.11 ends closed path data with ``Z`` (``"M0,0 L496.5,0 … L0,0 Z"``), and pyqtgraph
0.14.0's ``SVGExporter.correctCoordinates`` expects every token to be an ``x,y`` pair:
every export fails with ``ValueError: not enough values to unpack``. The fix here removes
the ``Z`` tokens before pyqtgraph rewrites the coordinates and puts them back after, so the
closed paths stay closed. Fixed upstream after 0.14.0 (not yet released when this was
written): **drop this module once the pinned pyqtgraph contains the fix** (the test
``tests/ui/render/test_exports.py::test_svg_export_holds_the_lane_labels`` shows whether the stock
exporter works: remove :func:`install` and re-run it).

Isolated on purpose: :func:`install` patches one function of pyqtgraph's module, only when
that module still has the broken one, and only once.
"""

from __future__ import annotations

import sys
from typing import Any

_MARK = "_splitdesk_z_fix"


def install() -> None:
    """Patch ``pyqtgraph.exporters.SVGExporter.correctCoordinates`` (idempotent). Imports
    pyqtgraph's exporters here, on the first SVG export, not when the window starts (they
    load ``xml.dom.minidom``: about 50 ms of a cold start for a window that may never
    export)."""
    import pyqtgraph.exporters  # noqa: F401  (loads pyqtgraph.exporters.SVGExporter)

    mod = sys.modules["pyqtgraph.exporters.SVGExporter"]
    original = mod.correctCoordinates
    if getattr(original, _MARK, False):
        return

    def fixed(node: Any, defs: Any, item: Any, options: Any) -> Any:
        saved = []
        for path in node.getElementsByTagName("path"):
            tokens = path.getAttribute("d").split()
            closes = [i for i, t in enumerate(tokens) if t in ("Z", "z")]
            if closes:
                saved.append((path, closes))
                path.setAttribute("d", " ".join(t for t in tokens if t not in ("Z", "z")))
        result = original(node, defs, item, options)
        for path, closes in saved:
            tokens = path.getAttribute("d").split()
            for i in closes:
                tokens.insert(i, "Z")
            path.setAttribute("d", " ".join(tokens))
        return result

    setattr(fixed, _MARK, True)
    setattr(mod, "correctCoordinates", fixed)  # noqa: B010  (a module attribute)
