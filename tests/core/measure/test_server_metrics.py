"""The server's own view: ``/metrics`` of each family read as running / waiting / KV use,
and the poller against the built-in endpoint's real ``/metrics`` during a real run."""

from __future__ import annotations

import asyncio
import time

import pytest

from paths import FIXTURES
from splitdesk.core.measure.runner import RunConfig, Runner
from splitdesk.core.measure.server_metrics import (
    MetricsPoller,
    PrefixCacheReading,
    ServerLoad,
    families,
    metrics_url,
    read_load,
    samples_between,
)
from splitdesk.core.run.plans import make_plan
from splitdesk.core.run.run_state import RunState
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.providers.base import EndpointConfig
from splitdesk.sim.launcher import start_sim

FIXTURES = FIXTURES / "metrics"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        # real captures (README.md says where each was published); values read by hand
        # vLLM (October 2024), idle: KV only under the older name gpu_cache_usage_perc, 0.0
        ("vllm.txt", ServerLoad("vllm", 0.0, 0.0, 0.0, "fraction")),
        # SGLang's own docs, under load: 162 running, 2826 queued, token_usage 0.28, and
        # its prefix-cache hit-rate gauge 0.0075
        (
            "sglang.txt",
            ServerLoad(
                "sglang",
                162.0,
                2826.0,
                0.28,
                "fraction",
                PrefixCacheReading(None, None, 0.007507552643049313),
            ),
        ),
        # ik_llama.cpp's llama-server (a llama.cpp fork that still publishes the KV ratio)
        ("llamacpp.txt", ServerLoad("llamacpp", 0.0, 0.0, 0.491063, "fraction")),
        # hand-written (no published TGI capture found): TGI has no KV gauge
        ("tgi.txt", ServerLoad("tgi", 4.0, 3.0, None, "fraction")),
        ("splitdesk.txt", ServerLoad("splitdesk", 3.0, 0.0, 133.0, "tokens")),
    ],
)
def test_each_family_reads_as_running_waiting_kv(name: str, expected: ServerLoad) -> None:
    assert read_load((FIXTURES / name).read_text("utf-8")) == expected


def test_every_mapped_family_has_a_fixture_and_each_name_is_in_it() -> None:
    ids = {f.id for f in families()}
    assert ids == {"splitdesk", "vllm", "sglang", "tgi", "llamacpp"}
    for fam in families():
        text = (FIXTURES / f"{fam.id}.txt").read_text("utf-8")
        assert fam.running[0] in text and fam.waiting[0] in text


def test_vllm_deprecated_kv_name_is_used_when_the_new_one_is_missing() -> None:
    """The October 2024 capture has only ``vllm:gpu_cache_usage_perc`` (before
    ``kv_cache_usage_perc`` existed): its 0.0 is read as KV use, not as "none"; with the
    capture's value changed in memory to 0.42, 0.42 is read."""
    text = (FIXTURES / "vllm.txt").read_text("utf-8")
    assert "vllm:kv_cache_usage_perc" not in text
    load = read_load(text)
    assert load is not None and load.kv_usage == 0.0
    line = 'vllm:gpu_cache_usage_perc{model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.0'
    assert line in text
    load = read_load(text.replace(line, line.removesuffix("0.0") + "0.42"))
    assert load is not None and load.kv_usage == 0.42


def test_several_engines_add_their_counts_and_the_new_kv_name_wins() -> None:
    """vLLM v1 labels each data-parallel engine (``engine="0"``, ``"1"``) and publishes the
    KV use under both names: the lane shows the server's total batch and queue and the
    fullest engine's ``kv_cache_usage_perc``. Text written for the test (names, labels and
    HELP texts of vLLM v1's metrics logger; values chosen to tell the rules apart)."""
    text = """\
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 3.0
vllm:num_requests_running{engine="1",model_name="m"} 2.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} 1.0
vllm:num_requests_waiting{engine="1",model_name="m"} 0.0
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.0421
vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.0188
# HELP vllm:gpu_cache_usage_perc GPU KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{engine="0",model_name="m"} 0.5
"""
    assert read_load(text) == ServerLoad("vllm", 5.0, 1.0, 0.0421, "fraction")


def test_unknown_server_and_bad_text() -> None:
    assert read_load("# TYPE up gauge\nup 1\n") is None
    with pytest.raises(ValueError, match="not Prometheus text format"):
        read_load("this is { not prometheus\n")


@pytest.mark.parametrize(
    ("base", "url"),
    [
        ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/metrics"),
        ("https://gpu.example:443/openai/deployments/x", "https://gpu.example:443/metrics"),
        ("http://[::1]:8080", "http://[::1]:8080/metrics"),
        ("http://localhost:11434/api", "http://localhost:11434/metrics"),
    ],
)
def test_metrics_url_is_the_server_root(base: str, url: str) -> None:
    assert metrics_url(base) == url


def test_metrics_url_refuses_a_non_url() -> None:
    with pytest.raises(ValueError, match="not an http"):
        metrics_url("localhost")


def test_poller_sees_batch_of_n_in_parallel_phase_and_1_in_combined() -> None:
    """Must show (issue 12): on the built-in endpoint, one after another, the server's
    batch is 1 while the combined request runs and N while the N parallel ones do."""
    sim = start_sim("batching", {"speed": 2.0})
    try:
        n = 5
        questions = [f"Question {i}: explain tides in a paragraph." for i in range(n)]
        plan = make_plan("one-after-another", questions, CombinedTemplate(), 80)
        endpoint = EndpointConfig(f"{sim.url}/v1", "openai-chat", "splitdesk-sim", None)
        state = RunState()
        poller = MetricsPoller(f"{sim.url}/metrics", rate_hz=8.0).start()
        try:
            asyncio.run(Runner(RunConfig(endpoint), state.apply).run(questions, plan))
        finally:
            poller.stop()
        assert poller.status == "ok", poller.status
        assert state.info is not None
        t0 = state.info.t0_ns
        combined = [t for t in state.requests if t.group == "combined"]
        parallel = [t for t in state.requests if t.group == "parallel"]
        assert all(t.outcome == "done" for t in state.requests)
        c_start = combined[0].t_send
        c_end = combined[0].t_end
        p_start = min(t.t_send or 0.0 for t in parallel)
        p_first_end = min(t.t_end or 0.0 for t in parallel)
        assert c_start is not None and c_end is not None
        # inside the combined request's life (its first and last 0.2 s left out)
        during_c = samples_between(poller.samples, t0, c_start + 0.2, c_end - 0.2)
        assert len(during_c) >= 3, "too few samples while the combined request ran"
        assert {s.load.running for s in during_c} == {1.0}
        # from all parallel requests admitted until the first one ends
        during_p = samples_between(poller.samples, t0, p_start + 0.15, p_first_end - 0.1)
        assert during_p, "no sample while all parallel requests ran"
        assert {s.load.running for s in during_p} == {float(n)}
        assert all(s.load.waiting == 0.0 for s in poller.samples)
        assert all(s.load.family == "splitdesk" for s in poller.samples)
    finally:
        sim.stop()


def test_poller_gives_up_on_a_server_without_metrics() -> None:
    poller = MetricsPoller("http://127.0.0.1:9/metrics", rate_hz=20.0, give_up=3).start()
    deadline = time.monotonic() + 10
    while poller.running and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not poller.running, "waited 10 s for the poller to give up on a closed port"
    assert "not reachable" in poller.status and poller.samples == []
