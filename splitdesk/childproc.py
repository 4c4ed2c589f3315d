"""How splitdesk starts its own child processes, installed or frozen.

The window runs the built-in endpoint (``python -m splitdesk sim …``) and the measuring
engine (``python -m splitdesk.core.measure.engine_worker``) as child processes. From a source
checkout or an installed wheel ``sys.executable`` is a Python interpreter and ``-m``
works. In a frozen bundle (PyInstaller sets ``sys.frozen``) ``sys.executable`` is the
bundle's own ``splitdesk`` binary, which has no ``-m`` and no Python on PATH to lean on:
there the same children are started as ``splitdesk sim …`` and as the hidden command
``splitdesk _engine``, which :func:`splitdesk.cli.main.main` dispatches before parsing.

This module sits outside the layers (it imports nothing of splitdesk), so both ``core``
and ``sim`` may use it.
"""

from __future__ import annotations

import sys

#: The hidden first argument that makes the ``splitdesk`` binary run the engine worker.
ENGINE_COMMAND = "_engine"

# What the frozen binary is given in place of ``-m MODULE`` (the binary *is* ``-m splitdesk``).
_FROZEN_ARGS: dict[str, list[str]] = {
    "splitdesk": [],
    "splitdesk.core.measure.engine_worker": [ENGINE_COMMAND],
}


def is_frozen() -> bool:
    """True inside a PyInstaller (or similar) bundle, where ``sys.executable`` is the app."""
    return bool(getattr(sys, "frozen", False))


def module_command(module: str) -> list[str]:
    """The argv prefix that runs ``python -m module`` in a child process.

    ``["/path/python", "-m", module]`` normally; in a frozen bundle the bundle binary with
    the arguments that stand for ``module``. Raises ``ValueError`` for a module the frozen
    binary cannot run (only the ones in this file's table can be).
    """
    if not is_frozen():
        return [sys.executable, "-m", module]
    try:
        return [sys.executable, *_FROZEN_ARGS[module]]
    except KeyError:
        raise ValueError(f"a frozen splitdesk cannot run module {module!r}") from None
