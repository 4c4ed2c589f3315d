"""The built-in endpoint's prefix cache: which leading tokens of a prompt a server already
holds from an earlier request, so their prefill is skipped.

Modelled on vLLM's automatic prefix caching (https://docs.vllm.ai/en/latest/design/prefix_caching.html):
the prompt's tokens are cut into blocks of :data:`BLOCK_TOKENS`; each *full* block is named
by a hash of its tokens and of the hash of the block before it, so a block's name stands for
the whole prefix up to its end. A request's cache hit is its longest run of leading blocks
whose names the cache holds (never the whole prompt: the last token is always computed, so
the model has logits to sample from, as vLLM does). Blocks enter the cache when a step is
given the tokens that fill them (vLLM v1's KV-cache manager registers a block's hash in
``allocate_slots``, for ``num_computed_tokens + num_new_tokens``), so a request admitted
later *in the same step* already finds them: N identical prefixes arriving together are
prefilled once, by the first one the step admits. The cache holds at most ``capacity``
tokens; the least recently used blocks go first.

Tokens are the simulated tokenizer's (:func:`splitdesk.sim.textgen.count_prompt_tokens`:
four characters each); a chat message adds :data:`MESSAGE_OVERHEAD` tokens for its role
markers, as the prompt-token count does (:func:`splitdesk.sim.wire.base.read_messages`).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

#: tokens per cache block (vLLM's default ``--block-size`` is 16)
BLOCK_TOKENS = 16
#: tokens a chat template adds around one message (role markers)
MESSAGE_OVERHEAD = 4
#: characters per simulated token (``textgen.count_prompt_tokens``)
CHARS_PER_TOKEN = 4


@dataclass(frozen=True)
class PromptPart:
    """One piece of a prompt as the model reads it, in order: ``text``; ``role`` when it
    opens a chat message (the message's role markers add :data:`MESSAGE_OVERHEAD` tokens);
    ``cache_mark`` when a cache breakpoint follows it (Anthropic's ``cache_control``: only
    the prefix up to the last breakpoint is cached or read)."""

    text: str
    role: str | None = None
    cache_mark: bool = False

    @property
    def tokens(self) -> int:
        """This part's prompt tokens: ``count_prompt_tokens(text)``, plus the role markers."""
        body = max(1, (len(self.text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN)
        return body + (MESSAGE_OVERHEAD if self.role is not None else 0)


def prompt_tokens(parts: Sequence[PromptPart]) -> int:
    """The prompt's length in tokens: the sum of its parts' (:attr:`PromptPart.tokens`)."""
    return sum(p.tokens for p in parts)


def cacheable_tokens(parts: Sequence[PromptPart], marks_only: bool) -> int:
    """How many leading tokens of the prompt may be cached or read from the cache: all of
    them, or with ``marks_only`` (Anthropic: caching is asked for explicitly) those up to
    the end of the last part with a ``cache_mark`` (0 when no part has one)."""
    if not marks_only:
        return prompt_tokens(parts)
    upto = 0
    total = 0
    for p in parts:
        total += p.tokens
        if p.cache_mark:
            upto = total
    return upto


def _tokens(parts: Iterable[PromptPart]) -> Iterable[str]:
    for p in parts:
        if p.role is not None:
            yield f"\x00<{p.role}>"
            for k in range(1, MESSAGE_OVERHEAD):
                yield f"\x00{k}"
        text = p.text
        if not text:
            yield ""
            continue
        for i in range(0, len(text), CHARS_PER_TOKEN):
            yield text[i : i + CHARS_PER_TOKEN]


def block_hashes(parts: Sequence[PromptPart], limit: int | None = None) -> tuple[bytes, ...]:
    """The names of the prompt's full blocks, in order (each hashes its
    :data:`BLOCK_TOKENS` tokens and the previous block's name), up to ``limit`` tokens
    (``None``: the whole prompt). A partial last block has no name: it is never cached."""
    out: list[bytes] = []
    parent = b""
    block: list[str] = []
    stop = prompt_tokens(parts) if limit is None else limit
    for count, tok in enumerate(_tokens(parts)):
        if count >= stop:
            break
        block.append(tok)
        if len(block) == BLOCK_TOKENS:
            h = hashlib.blake2b(parent + "\x1f".join(block).encode(), digest_size=16)
            parent = h.digest()
            out.append(parent)
            block = []
    return tuple(out)


class PrefixCache:
    """The blocks a server holds, least recently used first; ``capacity`` in tokens (a
    multiple of :data:`BLOCK_TOKENS` is used)."""

    def __init__(self, capacity: int) -> None:
        self.capacity_blocks = max(1, capacity // BLOCK_TOKENS)
        self._blocks: OrderedDict[bytes, None] = OrderedDict()
        #: prompt tokens looked up and found, since start (the server's own counters,
        #: like vLLM's ``prefix_cache_queries`` / ``prefix_cache_hits``)
        self.queries = 0
        self.hits = 0

    def __len__(self) -> int:
        return len(self._blocks)

    def lookup(self, blocks: Sequence[bytes], prompt_tokens: int) -> int:
        """Tokens of a prompt of ``prompt_tokens`` whose leading ``blocks`` the cache holds:
        the longest run of leading names found, in tokens, at most ``prompt_tokens − 1``.
        Counts the query and the hit; found blocks become the most recently used."""
        found = 0
        for name in blocks:
            if name not in self._blocks:
                break
            self._blocks.move_to_end(name)
            found += 1
        hit = min(found * BLOCK_TOKENS, max(0, prompt_tokens - 1))
        self.queries += prompt_tokens
        self.hits += hit
        return hit

    def insert(self, blocks: Iterable[bytes]) -> int:
        """Hold ``blocks`` (most recently used); evicts the least recently used beyond the
        capacity. Returns how many were new."""
        new = 0
        for name in blocks:
            if name in self._blocks:
                self._blocks.move_to_end(name)
                continue
            self._blocks[name] = None
            new += 1
        while len(self._blocks) > self.capacity_blocks:
            self._blocks.popitem(last=False)
        return new

    @property
    def tokens(self) -> int:
        """Tokens held (full blocks)."""
        return len(self._blocks) * BLOCK_TOKENS
