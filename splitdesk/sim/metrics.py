"""``GET /metrics`` of the built-in endpoint: Prometheus text format, from the cost model.

Served with the Prometheus client library (``prometheus_client``): a collector reads the
scheduler's state at scrape time, so every scrape shows the engine as it is between two
steps. Names carry the ``splitdesk:`` prefix (the same ``namespace:name`` style vLLM, SGLang
and llama.cpp use); the mapping of each server family's names to running / waiting / KV
use is data (``resources/server_metrics.toml``), read by
:mod:`splitdesk.core.measure.server_metrics`.

* ``splitdesk:num_requests_running`` (gauge): sequences in the decode batch now;
* ``splitdesk:num_requests_waiting`` (gauge): sequences queued for a slot (``max_num_seqs``),
  :attr:`~splitdesk.sim.costmodel.BatchEngine.queued`: not those that arrived during the
  current step and join the batch at its end;
* ``splitdesk:kv_cache_tokens`` (gauge, tokens): context tokens the running sequences hold
  (prompt + generated), the cost model's ``t_ctx`` term. The model has no KV capacity, so
  no usage fraction is claimed;
* ``splitdesk:max_num_seqs`` (gauge): the batch size limit;
* ``splitdesk:engine_steps_total`` (counter): decode steps run so far;
* ``splitdesk:prefix_cache_queries_total`` / ``splitdesk:prefix_cache_hits_total``
  (counters, tokens; only with ``prefix_cache`` on): prompt tokens looked up in the prefix
  cache and found there, as vLLM's ``vllm:prefix_cache_queries`` / ``vllm:prefix_cache_hits``
  count them (their ratio over an interval is the hit rate).
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from splitdesk.sim.scheduler import Scheduler


class SchedulerCollector(Collector):
    """Reads a :class:`~splitdesk.sim.scheduler.Scheduler` at scrape time."""

    def __init__(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler

    def collect(self) -> Iterator[Metric]:
        engine = self.scheduler.engine
        yield GaugeMetricFamily(
            "splitdesk:num_requests_running",
            "Sequences in the decode batch now.",
            value=len(engine.running),
        )
        yield GaugeMetricFamily(
            "splitdesk:num_requests_waiting",
            "Sequences queued for a free slot (max_num_seqs).",
            value=engine.queued,
        )
        yield GaugeMetricFamily(
            "splitdesk:kv_cache_tokens",
            "Context tokens (prompt + generated) held by the running sequences.",
            value=sum(s.context for s in engine.running),
        )
        yield GaugeMetricFamily(
            "splitdesk:max_num_seqs",
            "Most sequences decoded in one step.",
            value=self.scheduler.params.max_num_seqs,
        )
        yield CounterMetricFamily(
            "splitdesk:engine_steps", "Decode steps run so far.", value=engine.steps
        )
        cache = engine.cache
        if cache is not None:
            yield CounterMetricFamily(
                "splitdesk:prefix_cache_queries",
                "Prompt tokens looked up in the prefix cache.",
                value=cache.queries,
            )
            yield CounterMetricFamily(
                "splitdesk:prefix_cache_hits",
                "Prompt tokens found in the prefix cache.",
                value=cache.hits,
            )


def metrics_registry(scheduler: Scheduler) -> CollectorRegistry:
    """A registry holding only this endpoint's collector (no process/GC metrics)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SchedulerCollector(scheduler))
    return registry


def render(registry: CollectorRegistry) -> tuple[bytes, str]:
    """The ``/metrics`` body and its content type."""
    return generate_latest(registry), CONTENT_TYPE_LATEST
