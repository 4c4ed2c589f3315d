"""Lines of big type never break between a number and its unit, nor leave one short
word (or half a bracket) alone on a line — at every width a window can give them."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtGui import QFontMetrics, QTextDocument

from splitdesk.ui.common.theme import ui_font
from splitdesk.ui.common.wrap import WidowlessLabel, keep_units, no_orphans_html, no_orphans_text

HEADLINES = [
    "Combined <b>3.6 s</b> · Parallel <b>6.9 s</b> · <span style='color:#9aa4b2'>no verdict:"
    " the server ran one request at a time</span>",
    "Combined <b>12.0 s</b> · Parallel <b>2.7 s</b> · <span style='color:#3ddc97'>Parallel"
    " finished 4.5× sooner</span> <span style='color:#9aa4b2; font-size:small'>(predicted"
    " 4.5×)</span>",
    "Combined <b>11.8 s</b> <span style='color:#9aa4b2; font-size:small'>cost 0.000427</span>"
    " · Parallel <b>11.3 s</b> <span style='color:#9aa4b2; font-size:small'>cost"
    " 0.000405</span> · <span style='color:#9aa4b2'>no speed-up (1.05×)</span>",
]
MEASURED = [
    "Measured: no speed-up (1.05×): 11.8 s against 11.3 s",
    "Measured: Parallel finished 4.5× sooner: 12.0 s against 2.7 s",
]


HEADLINE_FONT = (5.0, True)  # the summary's headline: ui_font(scale, 5, bold=True)
MEASURED_FONT = (1.5, False)  # the caption bar's measured line


def _lines(
    html: str, width: int, rich: bool, font: tuple[float, bool] = HEADLINE_FONT
) -> list[str]:
    """The lines Qt lays ``html`` out in at ``width`` px in ``font`` at scale 1.5."""
    doc = QTextDocument()
    doc.setDefaultFont(ui_font(1.5, font[0], bold=font[1]))
    doc.setDocumentMargin(0)
    if rich:
        doc.setHtml(html)
    else:
        doc.setPlainText(html)
    doc.setTextWidth(width)
    doc.size()  # lays the document out
    text = doc.toPlainText()
    lines = []
    block = doc.begin()
    while block.isValid():
        layout = block.layout()
        for i in range(layout.lineCount()):
            line = layout.lineAt(i)
            start = block.position() + line.textStart()
            lines.append(text[start : start + line.textLength()].strip())
        block = block.next()
    return [ln.replace("\u00a0", " ") for ln in lines]


def _bad(lines: list[str]) -> str | None:
    for i, line in enumerate(lines):
        words = line.split()
        if i and i == len(lines) - 1 and len(words) == 1:
            return f"the last word alone on the last line: {lines}"
        if words and (words[0] in ("s", "ms", "tokens", "tok/s") or words[0].endswith("×)")):
            return f"a unit or a bracket's end torn from its number: {lines}"
    return None


@pytest.mark.parametrize("html", HEADLINES)
def test_a_headline_never_leaves_a_widow(qapp: Any, html: str) -> None:
    seen = 0
    for width in range(420, 1500, 10):
        lines = _lines(no_orphans_html(html), width, rich=True)
        assert _bad(lines) is None, (width, _bad(lines))
        seen += len(lines) > 1
    assert seen  # the widths tried do wrap it
    # the same text without the rule does leave one at some width (the test can fail)
    assert any(_bad(_lines(html, w, rich=True)) for w in range(420, 1500, 10))


@pytest.mark.parametrize("text", MEASURED)
def test_a_measured_line_keeps_its_numbers_whole(qapp: Any, text: str) -> None:
    kept = no_orphans_text(text)
    # every width that holds the line's longest unbreakable run ("11.8 s against 11.3 s")
    metrics = QFontMetrics(ui_font(1.5, MEASURED_FONT[0], bold=MEASURED_FONT[1]))
    narrowest = max(metrics.horizontalAdvance(run) for run in kept.split(" ")) + 4
    assert narrowest < 400  # the caption bar's column at 1280×720 is wider
    for width in range(narrowest, 1000, 10):
        lines = _lines(kept, width, rich=False, font=MEASURED_FONT)
        assert _bad(lines) is None, (width, _bad(lines))
    assert any(
        _bad(_lines(text, w, rich=False, font=MEASURED_FONT)) for w in range(narrowest, 1000, 10)
    )


def test_the_words_are_kept_and_tags_untouched() -> None:
    html = HEADLINES[1]
    out = no_orphans_html(html)
    assert out.replace("&nbsp;", " ") == html  # only spaces change
    assert "<span style='color:#9aa4b2; font-size:small'>" in out  # attributes as given
    assert keep_units("57 tok/s, 676 tokens in 11.8 s; 3 ms") == (
        "57\u00a0tok/s, 676\u00a0tokens in 11.8\u00a0s; 3\u00a0ms"
    )
    assert keep_units("5 sides") == "5 sides"  # a word that starts like a unit is none


def test_the_label_reads_back_what_it_was_given(qtbot: Any) -> None:
    label = WidowlessLabel()
    qtbot.addWidget(label)
    label.setText(HEADLINES[0])
    assert label.text() == HEADLINES[0]
    assert "&nbsp;" not in label.text()
