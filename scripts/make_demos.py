#!/usr/bin/env python3
"""Regenerate the demo recordings in ``resources/demos/`` (the window's Demos menu).

Each demo is a real run, side by side (one combined request and one request per
question, sent at once), of the five everyday questions against the built-in endpoint
with one profile: ``batching`` (the rule), ``single-slot`` (no batching: no speed-up),
``rate-limited`` (429 above two concurrent requests; retried after Retry-After) and
``slow-network`` (1.2 s added round trip). The cost model's prediction is recorded too.
Real time, one after another: about a minute in all.

    .venv/bin/python scripts/make_demos.py [--out resources/demos] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from datetime import UTC, datetime
from pathlib import Path

from splitdesk.core.analyse.predict import predict_plan
from splitdesk.core.files.recording import (
    GZ_SUFFIX,
    SUFFIX,
    EventLog,
    QuestionRecord,
    Recording,
    RunSettingsRecord,
    encode_recording,
    endpoint_record,
    run_record,
    save_recording,
)
from splitdesk.core.measure.runner import RunConfig, Runner
from splitdesk.core.run.plans import make_plan
from splitdesk.core.run.questions import DEFAULT_SET, builtin_sets
from splitdesk.core.run.run_state import RunState
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.providers.base import EndpointConfig
from splitdesk.sim.launcher import start_sim

ROOT = Path(__file__).resolve().parent.parent
#: profile → (retries of a 429, what the demo shows)
DEMOS: dict[str, tuple[int, str]] = {
    "batching": (0, "a batching server: the parallel requests share each decoding step"),
    "single-slot": (0, "one slot, no batching: parallel requests queue, no speed-up"),
    "rate-limited": (3, "a rate-limited API: 429 above two concurrent requests, retried"),
    "slow-network": (0, "a slow network: 1.2 s round trip weighs on short answers"),
}
MAX_TOKENS = 512


async def record(profile: str, retries: int, story: str) -> Recording:
    """One side-by-side run on the built-in endpoint with ``profile``, recorded."""
    qs = builtin_sets()[DEFAULT_SET]
    questions = qs.texts
    template = qs.template or CombinedTemplate()
    sim = await asyncio.to_thread(start_sim, profile, {})
    try:
        endpoint = EndpointConfig(sim.openai_base_url, "openai-chat", "splitdesk-sim")
        plan = make_plan("side-by-side", questions, template, MAX_TOKENS)
        predictions = await predict_plan(sim.url, endpoint, plan)
        state = RunState()
        log = EventLog()
        state.subscribe(log.append)
        config = RunConfig(endpoint, marker=template.marker, retry_429=retries)
        await Runner(config, state.apply).run(questions, plan)
    finally:
        await asyncio.to_thread(sim.stop)
    return Recording(
        created_at=datetime.now(UTC),
        source="demo",
        title=f"{profile}: {story}",
        endpoint=endpoint_record(
            sim.openai_base_url,
            "openai-chat",
            "splitdesk-sim",
            preset="builtin",
            profile=profile,
            speed=1.0,
        ),
        questions=[QuestionRecord(text=q.text, title=q.title) for q in qs.questions if q.text],
        template=template,
        settings=RunSettingsRecord(mode="side-by-side", max_tokens=MAX_TOKENS, retry_429=retries),
        runs=[
            run_record(
                state,
                label="side by side",
                mode="side-by-side",
                started_at=log.started_at,
                events=log.events,
                predictions=predictions,
            )
        ],
    )


def main(argv: list[str] | None = None) -> int:
    """Record the demos; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "resources" / "demos")
    parser.add_argument("--only", nargs="*", choices=list(DEMOS), help="just these profiles")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for profile in args.only or list(DEMOS):
        retries, story = DEMOS[profile]
        print(f"recording {profile} …", file=sys.stderr, flush=True)
        recording = asyncio.run(record(profile, retries, story))
        size = len(encode_recording(recording))
        gz = size > 1_000_000
        for old in (SUFFIX, GZ_SUFFIX):
            (args.out / f"{profile}{old}").unlink(missing_ok=True)
        path = args.out / f"{profile}{GZ_SUFFIX if gz else SUFFIX}"
        written = save_recording(recording, path)
        figures = recording.runs[0].figures
        speedup = figures.get("speedup")
        shown = f"{speedup:.2f}×" if speedup else "—"
        print(f"  {path.relative_to(ROOT)}: {written / 1000:.0f} kB, speed-up {shown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
