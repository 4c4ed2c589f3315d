"""What the measuring core and the built-in endpoint share, without importing each other.

``splitdesk.core`` never imports ``splitdesk.sim`` (an import-linter contract in
``pyproject.toml``): the core measures any endpoint, the built-in one included, and the
launcher of that endpoint is handed to it by the layer that starts things (``cli``, the
window's controller). This module sits outside the layers and imports nothing of
splitdesk, so both sides may read it: the default profile's name, the model name the
built-in endpoint answers to, the shape of a launcher, and the shape of the per-run nonce
line a repeated comparison opens its prompts with (the core writes it, the built-in
endpoint reads past it so its answers do not depend on the nonce).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

#: The profile the built-in endpoint runs when none is chosen (``sim/params.py`` PROFILES).
DEFAULT_PROFILE = "batching"
#: The model name the built-in endpoint serves.
BUILTIN_MODEL = "splitdesk-sim"

#: A repeated run's nonce line is ``NONCE_LINE_PREFIX + nonce + NONCE_LINE_SUFFIX``, the
#: first line of every prompt of that run (``core/repeats.py`` ``with_nonce``).
NONCE_LINE_PREFIX = "[run "
NONCE_LINE_SUFFIX = "]"


def nonce_line(nonce: str) -> str:
    """The line (without its newline) that opens every prompt of a run with ``nonce``."""
    return f"{NONCE_LINE_PREFIX}{nonce}{NONCE_LINE_SUFFIX}"


def split_nonce_line(prompt: str) -> tuple[str | None, str]:
    """(the nonce, the rest of the prompt) when ``prompt`` opens with a :func:`nonce_line`
    followed by a newline; ``(None, prompt)`` otherwise."""
    first, sep, rest = prompt.partition("\n")
    if (
        sep
        and len(first) > len(NONCE_LINE_PREFIX) + len(NONCE_LINE_SUFFIX)
        and first.startswith(NONCE_LINE_PREFIX)
        and first.endswith(NONCE_LINE_SUFFIX)
        and " " not in first[len(NONCE_LINE_PREFIX) : -len(NONCE_LINE_SUFFIX)]
    ):
        return first[len(NONCE_LINE_PREFIX) : -len(NONCE_LINE_SUFFIX)], rest
    return None, prompt


class BuiltinEndpoint(Protocol):
    """A running built-in endpoint: ``url`` is its root (``http://127.0.0.1:P``)."""

    url: str

    def stop(self, timeout: float = ...) -> None:
        """Stop it (waits up to ``timeout`` seconds)."""


#: Starts a built-in endpoint with a profile name and parameter overrides; raises
#: ``RuntimeError`` when it does not come up, ``KeyError``/``ValueError`` for a bad profile
#: or parameter (``splitdesk.sim.launcher.start_sim``).
Launcher = Callable[[str, dict[str, Any]], BuiltinEndpoint]
