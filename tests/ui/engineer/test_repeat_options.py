"""The repeat dialog offers only the choices that apply to the window's run mode."""

from __future__ import annotations

from typing import Any

from splitdesk.core.bench.repeats import RepeatOptions
from splitdesk.ui.engineer.repeat_options import RepeatOptionsDialog


def test_side_by_side_offers_no_order_to_alternate(qtbot: Any) -> None:
    dialog = RepeatOptionsDialog(None, RepeatOptions(alternate=True), mode="side-by-side")
    qtbot.addWidget(dialog)
    dialog.show()
    assert not dialog.alternate.isVisible()  # both sides go together: nothing to alternate
    assert dialog.together_note.isVisible()
    assert "no order to alternate" in dialog.together_note.text()
    assert dialog.options().alternate is False


def test_one_after_another_offers_the_alternation(qtbot: Any) -> None:
    dialog = RepeatOptionsDialog(None, RepeatOptions(alternate=True), mode="one-after-another")
    qtbot.addWidget(dialog)
    dialog.show()
    assert dialog.alternate.isVisible() and not dialog.together_note.isVisible()
    assert dialog.options() == RepeatOptions()
