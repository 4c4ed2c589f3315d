"""Cost in the window (issue 12): with prices entered for the endpoint, each side's cost
from usage beside its time, and the trade-off line; no prices, no cost."""

from __future__ import annotations

from typing import Any

import pytest
from ui.conftest import wait_signal

from splitdesk.core.analyse.cost import Prices, side_tokens, token_ratio
from splitdesk.core.files.prices import save_prices
from splitdesk.core.files.settings import AppSettings
from splitdesk.core.run.endpoints import EndpointSettings
from splitdesk.ui.engineer.menu import EngineerMenu


@pytest.mark.asyncio
async def test_costs_and_tradeoff_in_the_summary(make_window: Any) -> None:
    settings = AppSettings(endpoint=EndpointSettings(speed=8.0))
    prices = Prices(input_per_m=3.0, output_per_m=15.0)
    save_prices(EngineerMenu.prices_key(settings.endpoint), prices)  # the test's config dir
    window = make_window(settings)
    window.mode.setCurrentIndex(window.mode.findData("one-after-another"))
    window.run_button.click()
    (state,) = await wait_signal(window.runFinished, 90, "the run finished")
    text = window.stage.summary.headline.text()
    for side in ("combined", "parallel"):
        tokens = side_tokens(state.requests, side)
        assert tokens.complete
        cost = tokens.prompt * 3.0 / 1e6 + tokens.output * 15.0 / 1e6  # by hand
        assert f"cost {cost:.4f}" in text
    ratio = token_ratio(
        side_tokens(state.requests, "combined"), side_tokens(state.requests, "parallel")
    )
    assert ratio is not None
    # the speed-up is the headline's verdict, said once; the tokens trade-off is a detail
    details = window.stage.summary.details.text()
    assert f"parallel used {ratio:.1f}× the tokens" in details
    assert "× the tokens" not in text


@pytest.mark.asyncio
async def test_no_prices_no_cost(make_window: Any) -> None:
    window = make_window(AppSettings(endpoint=EndpointSettings(speed=8.0)))
    window.run_button.click()
    await wait_signal(window.runFinished, 90, "the run finished")
    assert "cost " not in window.stage.summary.headline.text()
    assert window.stage.summary.prices is None


@pytest.mark.asyncio
async def test_prices_entered_in_the_dialog_persist(make_window: Any) -> None:
    from PySide6.QtWidgets import QDialogButtonBox, QDoubleSpinBox
    from ui.conftest import wait_until

    from splitdesk.core.files.prices import load_prices

    settings = AppSettings(endpoint=EndpointSettings(speed=8.0))
    window = make_window(settings)
    dialog = window.engineer.edit_prices()
    boxes = dialog.findChildren(QDoubleSpinBox)
    boxes[0].setValue(0.15)
    boxes[1].setValue(0.6)
    dialog.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Save).click()
    key = EngineerMenu.prices_key(settings.endpoint)
    await wait_until(lambda: load_prices(key) is not None, 10, "prices.json written")
    assert load_prices(key) == Prices(input_per_m=0.15, output_per_m=0.6)
    assert window.stage.summary.prices == Prices(input_per_m=0.15, output_per_m=0.6)


@pytest.mark.asyncio
async def test_a_cached_input_price_is_entered_and_kept(make_window: Any) -> None:
    """The dialog's third box: the cached-input price (issue 24), saved and shown again;
    at its minimum it says the input price applies and saves none."""
    from PySide6.QtWidgets import QDialogButtonBox, QDoubleSpinBox
    from ui.conftest import wait_until

    from splitdesk.core.files.prices import load_prices

    settings = AppSettings(endpoint=EndpointSettings(speed=8.0))
    window = make_window(settings)
    key = EngineerMenu.prices_key(settings.endpoint)
    dialog = window.engineer.edit_prices()
    boxes = dialog.findChildren(QDoubleSpinBox)
    assert boxes[2].text() == "same as input"  # nothing entered: no cached price
    boxes[0].setValue(2.5)
    boxes[1].setValue(10.0)
    boxes[2].setValue(1.25)
    dialog.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Save).click()
    want = Prices(input_per_m=2.5, output_per_m=10.0, cached_input_per_m=1.25)
    await wait_until(lambda: load_prices(key) == want, 10, "prices.json with the cached price")
    assert window.stage.summary.prices == want

    again = window.engineer.edit_prices()  # opened again: the cached price is there
    boxes = again.findChildren(QDoubleSpinBox)
    assert boxes[2].value() == 1.25
    boxes[2].setValue(boxes[2].minimum())  # back to "same as input"
    again.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Save).click()
    plain = Prices(input_per_m=2.5, output_per_m=10.0)
    await wait_until(lambda: load_prices(key) == plain, 10, "prices.json without a cached price")
