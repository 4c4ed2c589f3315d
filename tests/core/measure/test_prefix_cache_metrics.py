"""The prefix-cache hit rate of the server lane: read from each family's own counters or
gauge (``resources/server_metrics.toml``), over the run only, recorded and replayed."""

from __future__ import annotations

from paths import FIXTURES
from splitdesk.core.measure.server_metrics import (
    LoadSample,
    PrefixCacheReading,
    ServerLoad,
    cache_hit_rates,
    load_series,
    read_load,
    series_of,
    series_record,
)

METRICS = FIXTURES / "metrics"


def test_llamacpp_counts_computed_and_cached_prompt_tokens_apart() -> None:
    """Real capture (``metrics/README.md``): 2,922 computed + 2,896 cached prompt tokens."""
    load = read_load((METRICS / "llamacpp-prompt-cache.txt").read_text("utf-8"))
    assert load is not None and load.family == "llamacpp" and load.kv_usage is None
    assert load.cache == PrefixCacheReading(queries=2922.0 + 2896.0, hits=2896.0)


def test_vllm_v0_with_prefix_caching_off_publishes_no_hit_rate() -> None:
    """The October 2024 capture has ``enable_prefix_caching="False"`` and the gauge at -1."""
    load = read_load((METRICS / "vllm.txt").read_text("utf-8"))
    assert load is not None and load.cache is None


def test_vllm_v1_counters_give_the_hit_rate() -> None:
    text = (
        "# TYPE vllm:num_requests_running gauge\n"
        'vllm:num_requests_running{engine="0",model_name="m"} 5.0\n'
        "# TYPE vllm:num_requests_waiting gauge\n"
        'vllm:num_requests_waiting{engine="0",model_name="m"} 0.0\n'
        "# TYPE vllm:prefix_cache_queries counter\n"
        'vllm:prefix_cache_queries_total{engine="0",model_name="m"} 31000.0\n'
        'vllm:prefix_cache_queries_total{engine="1",model_name="m"} 1000.0\n'
        "# TYPE vllm:prefix_cache_hits counter\n"
        'vllm:prefix_cache_hits_total{engine="0",model_name="m"} 24800.0\n'
    )  # written here: no published v1 capture with these counters was found
    load = read_load(text)
    assert load is not None and load.cache == PrefixCacheReading(32000.0, 24800.0)


def test_the_hit_rate_counts_only_the_runs_own_lookups() -> None:
    before = PrefixCacheReading(10_000.0, 9_000.0)  # an earlier run's lookups
    readings = [
        before,
        None,
        PrefixCacheReading(10_000.0, 9_000.0),  # nothing looked up yet in this run
        PrefixCacheReading(16_000.0, 9_000.0),  # the first request: all computed
        PrefixCacheReading(40_000.0, 28_200.0),  # four more read it from cache
    ]
    assert cache_hit_rates(readings) == [None, None, None, 0.0, 19_200 / 30_000]
    assert cache_hit_rates([None, None]) == []
    gauge = [PrefixCacheReading(hit_rate=0.25), PrefixCacheReading(hit_rate=0.5)]
    assert cache_hit_rates(gauge) == [0.25, 0.5]


def test_the_lane_series_keeps_the_hit_rate_through_a_recording() -> None:
    def sample(t: int, q: float, h: float) -> LoadSample:
        return LoadSample(
            t, ServerLoad("splitdesk", 1.0, 0.0, 10.0, "tokens", PrefixCacheReading(q, h))
        )

    series = load_series([sample(10, 100, 0), sample(20, 600, 400), sample(30, 1100, 800)], 0)
    assert series.has_cache and series.cache_hit_rate == [None, 0.8, 0.8]
    assert series.last_cache_hit_rate == 0.8
    record = series_record(series)
    assert record is not None and record.cache_hit_rate == [None, 0.8, 0.8]
    again = series_of(record)
    assert again is not None and again.cache_hit_rate == series.cache_hit_rate
    assert series.until(1.5e-8).cache_hit_rate == [None]
    plain = load_series([LoadSample(5, ServerLoad("tgi", 1.0, 0.0, None, "fraction"))], 0)
    assert not plain.has_cache and series_record(plain).cache_hit_rate is None  # type: ignore[union-attr]
