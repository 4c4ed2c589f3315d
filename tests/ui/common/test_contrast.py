"""Legible everywhere (WCAG 2.2 AA, success criterion 1.4.3): every colour a theme draws
text in has a contrast ratio of at least 4.5:1 on every background the theme puts text on,
in both themes and both presentation palettes; the questions' colours as answer headings,
and the numbers and badges printed on them."""

from __future__ import annotations

import pytest

from splitdesk.ui.common.theme import (
    AA_TEXT,
    DARK,
    LIGHT,
    PRESENT_DARK,
    PRESENT_LIGHT,
    TEXT_BACKGROUNDS,
    TEXT_ROLES,
    Theme,
    contrast,
    ink_on,
    lane_hex,
    readable,
)

THEMES = [DARK, LIGHT, PRESENT_DARK, PRESENT_LIGHT]


@pytest.mark.parametrize("theme", THEMES, ids=lambda t: t.name)
def test_every_text_colour_reads_at_aa_on_its_backgrounds(theme: Theme) -> None:
    low = [
        (role, bg, round(contrast(getattr(theme, role), getattr(theme, bg)), 2))
        for role in TEXT_ROLES
        for bg in TEXT_BACKGROUNDS
        if contrast(getattr(theme, role), getattr(theme, bg)) < AA_TEXT
    ]
    assert not low, f"{theme.name}: below 4.5:1 (role, background, ratio): {low}"


@pytest.mark.parametrize("theme", THEMES, ids=lambda t: t.name)
def test_answer_headings_read_at_aa_in_every_question_colour(theme: Theme) -> None:
    for k in range(16):
        text = theme.lane_text(k)
        assert contrast(text, theme.panel) >= AA_TEXT, (theme.name, k, text)
        # the nearest readable colour: the question stays recognisable
        if contrast(lane_hex(k), theme.panel) >= AA_TEXT:
            assert text == lane_hex(k)


def test_numbers_and_badges_on_question_colours_read_at_aa() -> None:
    for k in range(16):
        assert contrast(ink_on(lane_hex(k)), lane_hex(k)) >= AA_TEXT, k


def test_the_yellow_answer_heading_on_white_is_darkened_to_aa() -> None:
    yellow = lane_hex(3)  # "Answer 4:" read at 1.3:1 on the light theme's white panels
    assert contrast(yellow, LIGHT.panel) < 1.5
    fixed = readable(yellow, LIGHT.panel)
    assert AA_TEXT <= contrast(fixed, LIGHT.panel) < AA_TEXT + 1.0  # just enough
    assert int(fixed[1:3], 16) > int(fixed[5:7], 16)  # still a yellow-brown, not grey
