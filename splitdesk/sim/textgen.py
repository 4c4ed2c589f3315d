"""Deterministic, readable pseudo-answers for the built-in endpoint.

An answer is built from the phrase bank in ``resources/text/phrases.json`` by a random
generator seeded with the question text and the request's ``seed``, so the same question
gets the same answer in a combined reply and in its own request, and across runs.

Tokens here are what the simulated model emits one per step: a word with its leading
space, or one punctuation mark, or a newline (close to what BPE tokenizers produce for
English prose).
"""

from __future__ import annotations

import functools
import hashlib
import json
import random
import re
from dataclasses import dataclass
from importlib.resources import files

_TOKEN_RE = re.compile(r"\n|[^\S\n]*[\w']+|[^\S\n]*[^\w\s]")
_WORD_RE = re.compile(r"[^\W\d_][\w'-]*")


@dataclass(frozen=True)
class PhraseBank:
    """The sentences answers are made of (see the JSON file for the format)."""

    openings: tuple[str, ...]
    bodies: tuple[str, ...]
    closings: tuple[str, ...]
    stopwords: frozenset[str]


@functools.cache
def phrase_bank() -> PhraseBank:
    """Load the phrase bank shipped in ``splitdesk.resources`` (cached)."""
    raw = json.loads(files("splitdesk.resources").joinpath("text/phrases.json").read_text("utf-8"))
    return PhraseBank(
        tuple(raw["openings"]),
        tuple(raw["bodies"]),
        tuple(raw["closings"]),
        frozenset(raw["stopwords"]),
    )


def tokenize(text: str) -> list[str]:
    """Split ``text`` into simulated tokens; ``"".join(tokenize(t)) == t`` for text made of
    words, punctuation, single spaces and newlines."""
    return _TOKEN_RE.findall(text)


def count_prompt_tokens(text: str) -> int:
    """Prompt length in tokens, by the usual rule of thumb of ~4 characters per token."""
    return max(1, (len(text) + 3) // 4)


def _rng(question: str, seed: int, salt: str) -> random.Random:
    digest = hashlib.sha256(f"{seed}\x00{salt}\x00{question.strip()}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def answer_length(question: str, seed: int, mean: int, spread: float) -> int:
    """Target length (tokens) of the answer to ``question``: ``mean`` ± ``spread`` × mean,
    drawn from a generator seeded by the question and ``seed``; at least 8."""
    u = _rng(question, seed, "length").uniform(-1.0, 1.0)
    return max(8, round(mean * (1.0 + spread * u)))


def keywords(question: str) -> list[str]:
    """Content words of ``question``, longest first (stopwords removed), for phrase slots."""
    bank = phrase_bank()
    words = [w for w in _WORD_RE.findall(question) if w.lower() not in bank.stopwords]
    seen: dict[str, None] = {}
    for w in sorted(words, key=len, reverse=True):
        seen.setdefault(w.lower(), None)
    return list(seen) or ["this"]


def answer_text(question: str, seed: int, target_tokens: int) -> str:
    """A readable answer of about ``target_tokens`` tokens (whole sentences, ± one sentence).

    Deterministic in (``question``, ``seed``, ``target_tokens``).
    """
    bank = phrase_bank()
    rng = _rng(question, seed, "text")
    kws = keywords(question)
    kw2 = kws[1] if len(kws) > 1 else kws[0]

    def fill(sentence: str) -> str:
        return sentence.replace("{kw}", kws[0]).replace("{kw2}", kw2)

    closing = fill(rng.choice(bank.closings))
    sentences = [fill(rng.choice(bank.openings))]
    used = len(tokenize(sentences[0])) + 1 + len(tokenize(closing))
    bodies = list(bank.bodies)
    rng.shuffle(bodies)
    for body in bodies * 50:
        n = len(tokenize(body)) + 1
        if used + n // 2 > target_tokens:
            break
        sentences.append(fill(body))
        used += n
    sentences.append(closing)
    # A paragraph break after the opening when the answer is long enough for two.
    if len(sentences) > 4:
        return sentences[0] + " " + " ".join(sentences[1:3]) + "\n\n" + " ".join(sentences[3:])
    return " ".join(sentences)


def answer_tokens(
    question: str, seed: int, mean: int, spread: float, scale: float = 1.0
) -> list[str]:
    """Tokens of the answer to ``question`` (length from :func:`answer_length` × ``scale``)."""
    target = max(8, round(answer_length(question, seed, mean, spread) * scale))
    return tokenize(answer_text(question, seed, target))


def combined_tokens(
    questions: list[str], seed: int, mean: int, spread: float, compression: float, marker: str
) -> list[str]:
    """Tokens of one reply answering every question in order.

    Each answer starts with a line holding ``marker`` with ``{k}`` replaced by the question's
    number (1-based), and is the answer that question gets alone, shortened by
    ``compression`` (1.0: as long).
    """
    out: list[str] = []
    for k, q in enumerate(questions, start=1):
        if k > 1:
            out += ["\n", "\n"]
        out += tokenize(marker.replace("{k}", str(k)))
        out.append("\n")
        out += answer_tokens(q, seed, mean, spread, compression)
    return out
