"""The timeline's SVG as other programs read it, not only Qt.

pyqtgraph's ``SVGExporter`` writes what Qt's painter says (SVG Tiny 1.2): a root with a
``viewBox`` but no ``width``/``height``, a background ``<rect width="100%"
height="100%">``, and text in ``font-family="Sans Serif"`` (Qt's name for its default,
quoted as ``&quot;Sans Serif&quot;`` in places). A browser, an SVG editor or a slide
program then picks its own viewport and, finding no font of that name, its default serif
face; QtSvg itself filled only a corner with the dark background behind white labels.
:func:`portable_svg` gives the root its size, the background the ``viewBox``'s
rectangle, and every font family a generic fallback. It edits the parsed document
(:mod:`xml.dom.minidom`), never the text, and leaves everything else as written.
"""

from __future__ import annotations

import xml.dom.minidom

#: What a text element asks for instead of Qt's "Sans Serif": the faces Qt itself uses
#: on Linux, macOS and Windows, then CSS's generic family.
FONT_FAMILY = "'DejaVu Sans', 'Helvetica Neue', Helvetica, Arial, sans-serif"
_QT_DEFAULT_NAMES = {"sans serif", '"sans serif"', "'sans serif'"}


def portable_svg(data: bytes) -> bytes:
    """``data`` (an SVG document, UTF-8) with its root sized from its ``viewBox``, the
    full-size background rectangle in user units, and Qt's ``Sans Serif`` (or a family
    with no generic fallback) ending in ``sans-serif``. Raises
    ``xml.parsers.expat.ExpatError`` when ``data`` is not XML."""
    doc = xml.dom.minidom.parseString(data)
    root = doc.documentElement
    if root is None:  # an empty document: nothing to size
        return data
    box = (root.getAttribute("viewBox") or "").split()
    if len(box) == 4:
        x, y, w, h = box
        if not root.getAttribute("width"):
            root.setAttribute("width", w)
        if not root.getAttribute("height"):
            root.setAttribute("height", h)
        for rect in doc.getElementsByTagName("rect"):
            if rect.getAttribute("width") == "100%" and rect.getAttribute("height") == "100%":
                rect.setAttribute("x", x)
                rect.setAttribute("y", y)
                rect.setAttribute("width", w)
                rect.setAttribute("height", h)
    for element in doc.getElementsByTagName("*"):
        family = element.getAttribute("font-family")
        if not family:
            continue
        if family.strip().lower() in _QT_DEFAULT_NAMES:
            element.setAttribute("font-family", FONT_FAMILY)
        elif not family.rstrip().endswith(("sans-serif", "serif", "monospace")):
            element.setAttribute("font-family", f"{family}, sans-serif")
    return doc.toxml(encoding="utf-8")
