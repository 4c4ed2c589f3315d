"""Cost from usage (issue 12, must show): figures of a recorded run equal a hand
computation; prices persist per endpoint with no defaults."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from paths import FIXTURES
from splitdesk.core.analyse.cost import Prices, side_tokens, token_ratio, tradeoff_line
from splitdesk.core.files.prices import PricesFileError, endpoint_key, load_prices, save_prices
from splitdesk.core.files.recording import load_recording, rebuild_state

RECORDING = FIXTURES / "recordings" / "v1.splitdesk.json"


def test_cost_of_a_recorded_run_equals_the_hand_computation() -> None:
    run = load_recording(RECORDING).runs[0]
    state = rebuild_state(run)
    combined = side_tokens(state.requests, "combined")
    parallel = side_tokens(state.requests, "parallel")
    # the recording's usage, read off its events by hand: combined 64 prompt + 74 output;
    # parallel (7 + 8) prompt and (29 + 35) output
    assert (combined.prompt, combined.output) == (64, 74)
    assert (parallel.prompt, parallel.output) == (15, 64)
    prices = Prices(input_per_m=3.0, output_per_m=15.0)
    assert combined.cost(prices) == pytest.approx(64 * 3.0 / 1e6 + 74 * 15.0 / 1e6)  # 0.001302
    assert parallel.cost(prices) == pytest.approx(15 * 3.0 / 1e6 + 64 * 15.0 / 1e6)  # 0.001005
    assert combined.cost(None) is None  # no price entered: no cost
    ratio = token_ratio(combined, parallel)
    assert ratio == pytest.approx((15 + 64) / (64 + 74))
    assert tradeoff_line(4.5, 1.3) == "4.5× faster, 1.3× the tokens"
    assert tradeoff_line(4.5, None) is None


def test_a_side_without_usage_has_no_cost() -> None:
    run = load_recording(RECORDING).runs[0]
    state = rebuild_state(run)
    state.requests[1].usage_output_tokens = None  # one parallel request reported none
    parallel = side_tokens(state.requests, "parallel")
    assert not parallel.complete
    assert parallel.cost(Prices(input_per_m=1, output_per_m=1)) is None
    assert token_ratio(side_tokens(state.requests, "combined"), parallel) is None


def test_a_side_has_one_output_token_count_wherever_it_is_shown() -> None:
    """The cost line's output tokens are the figure set's (the bench table's tokens column,
    the summary): with one request's usage missing, both say the same estimate."""
    from splitdesk.core.analyse.metrics import group_metrics

    run = load_recording(RECORDING).runs[0]
    state = rebuild_state(run)
    state.requests[1].usage_output_tokens = None  # counted by its events instead
    parallel = side_tokens(state.requests, "parallel")
    figures = group_metrics([t for t in state.requests if t.group == "parallel"], "parallel", 2)
    assert parallel.output == figures.output_tokens
    assert parallel.estimated and figures.tokens_estimated
    assert parallel.output == 35 + len(state.requests[1].event_times)


def test_prices_persist_per_endpoint_without_defaults(tmp_path: Path) -> None:
    path = tmp_path / "prices.json"
    key = endpoint_key("openai-chat", "https://api.example/v1/", "m")
    assert load_prices(key, path) is None  # nothing pretends to know a price
    save_prices(key, Prices(input_per_m=0.5, output_per_m=1.5), path)
    assert load_prices(key, path) == Prices(input_per_m=0.5, output_per_m=1.5)
    assert load_prices(endpoint_key("openai-chat", "https://api.example/v1", "m"), path)
    assert load_prices(endpoint_key("openai-chat", "https://other/v1", "m"), path) is None
    assert "key" not in json.loads(path.read_text())["endpoints"][key]
    save_prices(key, None, path)
    assert load_prices(key, path) is None


def test_a_broken_prices_file_is_one_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "prices.json"
    path.write_text("{not json")
    with pytest.raises(PricesFileError, match="cannot read the prices"):
        load_prices("k", path)
    assert path.read_text() == "{not json"  # nothing lost


def test_costs_are_formatted_by_one_function_that_tells_the_sides_apart() -> None:
    from splitdesk.core.analyse.cost import format_costs

    # the run: 0.0004 on both sides in the window while bench said 0.000427/0.000405
    assert format_costs([0.000427, 0.000405]) == ["0.000427", "0.000405"]
    assert format_costs([0.0004271, 0.0004269]) == ["0.0004271", "0.0004269"]
    assert format_costs([12.5, 3.25]) == ["12.50", "3.25"]
    assert format_costs([0.12, 0.12]) == ["0.120", "0.120"]  # equal costs may print equal
    assert format_costs([]) == []
