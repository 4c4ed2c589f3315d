"""A repeated run's nonce line (``core/repeats.py`` ``with_nonce``) is there to defeat a
server's prefix cache; the built-in endpoint reads past it, so its answer to a question
is the same with and without it (no nonce turned into a topic word), while the prompt
tokens it reports still count the line (the server did receive it)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from splitdesk.builtin_endpoint import nonce_line, split_nonce_line
from splitdesk.core.bench.repeats import new_nonce

MODEL = "splitdesk-sim"
SINGLE = "Why does a refrigerator hum at night?"
COMBINED = (
    'Answer each of these 2 questions; begin each answer with "Answer k:".\n\n'
    "1. Why does a refrigerator hum at night?\n2. How do tides work?"
)


async def _ask(client: httpx.AsyncClient, url: str, prompt: str) -> tuple[str, int]:
    r = await client.post(
        f"{url}/chat/completions",
        json={"model": MODEL, "messages": [{"role": "user", "content": prompt}], "seed": 7},
    )
    r.raise_for_status()
    body = r.json()
    return body["choices"][0]["message"]["content"], body["usage"]["prompt_tokens"]


@pytest.mark.asyncio
async def test_answer_does_not_depend_on_the_nonce_line(sim_batching: Any) -> None:
    nonce = new_nonce()
    line = nonce_line(nonce)
    assert split_nonce_line(f"{line}\n{SINGLE}") == (nonce, SINGLE)
    prompts = [SINGLE, f"{line}\n{SINGLE}", COMBINED, f"{line}\n{COMBINED}"]
    async with httpx.AsyncClient(timeout=20) as client:  # all four at once: it batches
        replies = await asyncio.gather(
            *(_ask(client, sim_batching.openai_base_url, p) for p in prompts)
        )
    for (plain, plain_tokens), (marked, marked_tokens) in (replies[0:2], replies[2:4]):
        assert marked == plain, (plain, marked)
        assert nonce not in marked and "run" not in marked.split(), marked
        # The line reached the server: it counts in the prompt, as a real server's would.
        assert marked_tokens > plain_tokens, (marked_tokens, plain_tokens)
    assert "Answer 2:" in replies[3][0]  # the nonce line does not hide the combined list
