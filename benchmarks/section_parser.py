"""The answer-section parser's cost per chunk (core/sections.py), on a combined reply shaped
like a real one: N answers under decorated template markers, each body a few paragraphs
with numbered lists and lines starting with "Q3" (the lines the parser must look at
twice). Prints µs per chunk and characters per second for a few chunk sizes and
templates. Goal: ≤ 10 µs per chunk (a token event arrives every few ms per stream).
Shared, noisy machine: compare figures from one run.
"""

from __future__ import annotations

import argparse
import time

from splitdesk.core.run.sections import SectionParser

TEMPLATES = ("Answer {k}:", "[{k}]", "Q{k}.", "#{k}")
PARAGRAPH = (
    "The answer has several parts, each explained in turn.\n"
    "1. first step, in some detail\n2. second step; Q3 figures back it up\n\n"
)


def reply(marker: str, n: int, paragraphs: int) -> str:
    """A combined reply of ``n`` answers, each marker in bold, ``paragraphs`` per answer."""
    answers = [
        f"**{marker.replace('{k}', str(k))}** {PARAGRAPH * paragraphs}" for k in range(1, n + 1)
    ]
    return "Sure, here they are.\n\n" + "\n\n".join(answers)


def measure(text: str, marker: str, n: int, size: int, repeats: int) -> float:
    """Best seconds over ``repeats`` to parse ``text`` fed in ``size``-character chunks."""
    chunks = [text[i : i + size] for i in range(0, len(text), size)]
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        parser = SectionParser(n, marker)
        for i, chunk in enumerate(chunks):
            parser.feed(chunk, float(i))
        parser.finish(float(len(chunks)))
        best = min(best, time.perf_counter() - start)
        if sorted(parser.sections) != list(range(n)):
            raise SystemExit(f"{marker!r}: found {sorted(parser.sections)}, expected 0..{n - 1}")
    return best


def main() -> None:
    """Print the figures (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--answers", type=int, default=8, help="answers in the reply (default 8)")
    ap.add_argument("--paragraphs", type=int, default=20, help="paragraphs per answer")
    ap.add_argument("--repeats", type=int, default=7, help="best of this many runs")
    args = ap.parse_args()
    print("template       chunk  chars   chunks   µs/chunk   Mchar/s")
    for marker in TEMPLATES:
        text = reply(marker, args.answers, args.paragraphs)
        for size in (1, 4, 16):
            seconds = measure(text, marker, args.answers, size, args.repeats)
            chunks = -(-len(text) // size)
            print(
                f"{marker:<14} {size:>5} {len(text):>6} {chunks:>8} "
                f"{seconds / chunks * 1e6:>10.2f} {len(text) / seconds / 1e6:>9.2f}"
            )


if __name__ == "__main__":
    main()
