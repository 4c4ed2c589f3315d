"""Scenario files: the shipped ones are valid, a bad file is an error naming the field, and
the chain plan sends request 2 with answer 1 in its prompt (real loopback HTTP)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from splitdesk.core.bench.scenarios import bench_options
from splitdesk.core.files.scenarios import (
    ScenarioError,
    builtin_scenarios,
    check_builtin,
    load_scenario,
    parse_scenario,
)
from splitdesk.core.measure.runner import RunConfig, Runner
from splitdesk.core.run.plans import chain_prompt, make_plan
from splitdesk.core.run.run_state import RunState
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.providers.base import EndpointConfig
from splitdesk.sim.params import SimParams

GOOD = """
version = 1
title = "Mine"
caption = "What to notice."
questions = "three-short"
[endpoint]
profile = "single-slot"
"""


def test_the_shipped_scenarios_are_the_issue_s_seven_in_talk_order() -> None:
    shipped = builtin_scenarios()
    assert list(shipped) == [
        "batching",
        "single-slot",
        "rate-limit",
        "slow-network",
        "compute-bound",
        "many-questions",
        "dependent",
        # issue 24: one document, batching / compute-bound, prefix cache off / on
        "document-batching",
        "document-batching-cache",
        "document-compute-bound",
        "document-compute-bound-cache",
    ]
    for s in shipped.values():
        check_builtin(s, SimParams.checked)
        assert s.caption and "\n" not in s.caption and len(s.caption) <= 200
    assert len(shipped["batching"].questions) == 5
    assert len(shipped["many-questions"].questions) == 16
    assert shipped["dependent"].spec.run.mode == "dependent"
    assert shipped["rate-limit"].spec.endpoint.params["retry_after"] == 4.0


def test_a_good_file_loads_with_its_settings(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text(GOOD, encoding="utf-8")
    s = load_scenario(path)
    assert (s.name, s.title, s.caption) == ("mine", "Mine", "What to notice.")
    assert s.questions[0] == "What is the capital of Australia?"
    opts = bench_options(s, speed=4)
    assert (opts.profile, opts.sim_params, opts.mode, opts.max_tokens) == (
        "single-slot",
        {"speed": 4},
        "one-after-another",
        512,
    )


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (('caption = "What to notice."', ""), "`caption` is missing"),
        (("[endpoint]", '[run]\nmode = "fast"\n[endpoint]'), "`run.mode` input should be"),
        (("[endpoint]", "[run]\nmax_tokens = -1\n[endpoint]"), "`run.max_tokens`"),
        (('profile = "single-slot"', "profile = 3"), "`endpoint.profile`"),
        (('profile = "single-slot"', 'profil = "x"'), "`endpoint.profil` is not a field"),
        (('questions = "three-short"', 'questions = "nine"'), "`questions` names no built-in"),
        (('questions = "three-short"', "questions = []"), "`questions` needs at least one"),
        (("version = 1", "version = 7"), "`version` 7 is newer"),
        (("title =", "title = = "), "not valid TOML"),
    ],
)
def test_a_bad_file_names_the_field(tmp_path: Path, change: tuple[str, str], words: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(GOOD.replace(*change), encoding="utf-8")
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    message = str(err.value)
    assert message.startswith("bad.toml: ") and words in message, message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (('profile = "single-slot"', 'profile = "warp"'), "`endpoint.profile`"),
        (('profile = "single-slot"', "params = { warp = 9 }"), "`endpoint.params`"),
        (('profile = "single-slot"', "params = { t_base = -1 }"), "`endpoint.params`"),
    ],
)
def test_a_bad_profile_or_parameter_names_the_field(change: tuple[str, str], field: str) -> None:
    s = parse_scenario(GOOD.replace(*change), "bad")
    with pytest.raises(ScenarioError) as err:
        check_builtin(s, SimParams.checked)
    assert str(err.value).startswith(f"bad: {field}: "), str(err.value)


def test_a_scenario_may_replay_a_recording_instead(tmp_path: Path) -> None:
    text = GOOD.replace('profile = "single-slot"', 'recording = "demo.splitdesk.json"')
    s = parse_scenario(text, "rec", tmp_path)
    assert s.recording == tmp_path / "demo.splitdesk.json"
    check_builtin(s, SimParams.checked)  # nothing to start
    with pytest.raises(ScenarioError, match="replays a recording"):
        bench_options(s)


def test_chain_prompt_carries_the_previous_answer() -> None:
    assert (
        chain_prompt("Q2?", "  Jupiter.\n") == "Answer to the previous question:\nJupiter.\n\nQ2?"
    )
    assert chain_prompt("Q2?", "") == "Q2?"  # the previous request failed: sent as is


@pytest.mark.asyncio
async def test_a_chain_sends_request_2_after_answer_1_with_it_in_the_prompt(
    sim_batching: Any,
) -> None:
    questions = ["Which planet is the largest?", "How many moons has it?"]
    endpoint = EndpointConfig(sim_batching.openai_base_url, "openai-chat", "splitdesk-sim")
    plan = make_plan("dependent", questions, CombinedTemplate(), 64)
    assert [p.name for p in plan.phases] == ["combined", "chain"]
    state = RunState()
    await Runner(RunConfig(endpoint), state.apply).run(questions, plan)
    combined, first, second = state.requests
    assert combined.group == "combined"
    assert [r.outcome for r in state.requests] == ["done", "done", "done"]
    assert (first.group, second.group) == ("sequential", "sequential")
    assert first.t_end is not None and second.t_send is not None
    assert second.t_send >= first.t_end  # one after another: it needs the answer
    # the server counted the answer's tokens in request 2's prompt
    assert first.usage_prompt_tokens is not None and second.usage_prompt_tokens is not None
    assert first.usage_output_tokens is not None
    grown = second.usage_prompt_tokens - first.usage_prompt_tokens
    assert grown >= 0.5 * first.usage_output_tokens, (grown, first.usage_output_tokens)
