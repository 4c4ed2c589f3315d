"""What the measuring core and the built-in endpoint share, without importing each other.

``splitdesk.core`` never imports ``splitdesk.sim`` (an import-linter contract in
``pyproject.toml``): the core measures any endpoint, the built-in one included, and the
launcher of that endpoint is handed to it by the layer that starts things (``cli``, the
window's controller). This module sits outside the layers and imports nothing of
splitdesk, so both sides may read it: the default profile's name, the model name the
built-in endpoint answers to, and the shape of a launcher.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

#: The profile the built-in endpoint runs when none is chosen (``sim/params.py`` PROFILES).
DEFAULT_PROFILE = "batching"
#: The model name the built-in endpoint serves.
BUILTIN_MODEL = "splitdesk-sim"


class BuiltinEndpoint(Protocol):
    """A running built-in endpoint: ``url`` is its root (``http://127.0.0.1:P``)."""

    url: str

    def stop(self, timeout: float = ...) -> None:
        """Stop it (waits up to ``timeout`` seconds)."""


#: Starts a built-in endpoint with a profile name and parameter overrides; raises
#: ``RuntimeError`` when it does not come up, ``KeyError``/``ValueError`` for a bad profile
#: or parameter (``splitdesk.sim.launcher.start_sim``).
Launcher = Callable[[str, dict[str, Any]], BuiltinEndpoint]
