"""Text drawn on lane colours stays readable in both themes."""

from __future__ import annotations

import pytest

from splitdesk.ui.common.theme import DARK, INK_DARK, INK_LIGHT, LIGHT, ink_on, lane_hex


@pytest.mark.parametrize(
    ("background", "ink"),
    [
        ("#F0E442", INK_DARK),  # yellow lane
        ("#E69F00", INK_DARK),  # orange lane
        ("#882255", INK_LIGHT),  # wine lane
        (LIGHT.combined, INK_LIGHT),  # the ALL badge in the light theme
        (DARK.combined, INK_DARK),  # the ALL badge in the dark theme
    ],
)
def test_ink_on_picks_the_readable_text_colour(background: str, ink: str) -> None:
    assert ink_on(background) == ink


def _contrast(a: str, b: str) -> float:
    def lum(c: str) -> float:
        ch = [int(c[i : i + 2], 16) / 255 for i in (1, 3, 5)]
        lin = [x / 12.92 if x <= 0.04045 else ((x + 0.055) / 1.055) ** 2.4 for x in ch]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]

    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_every_lane_label_meets_wcag_large_text_contrast() -> None:
    for q in range(16):
        color = lane_hex(q)
        assert _contrast(color, ink_on(color)) >= 3.0, color  # WCAG 2.2 AA, large/bold text
