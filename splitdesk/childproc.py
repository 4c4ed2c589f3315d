"""How splitdesk starts its own child processes, installed or frozen.

The window runs the built-in endpoint (``python -m splitdesk sim …``) and the measuring
engine (``python -m splitdesk.core.measure.engine_worker``) as child processes. From a source
checkout or an installed wheel ``sys.executable`` is a Python interpreter and ``-m``
works. In a frozen bundle (PyInstaller sets ``sys.frozen``) ``sys.executable`` is the
bundle's own ``splitdesk`` binary, which has no ``-m`` and no Python on PATH to lean on:
there the same children are started as ``splitdesk sim …`` and as the hidden command
``splitdesk _engine``, which :func:`splitdesk.cli.main.main` dispatches before parsing.

**The working directory never shadows the installed package.** ``python -m`` puts the
working directory first on the child's ``sys.path``; started from a folder that holds a
``splitdesk/`` directory (the folder of a clone, which is also where a desktop-menu launch
may start), the child imported *that* folder as a namespace package and failed with
``ImportError: cannot import name '__version__' from 'splitdesk' (unknown location)``.
Children therefore run in Python's safe-path mode (``-P``, and ``PYTHONSAFEPATH=1`` in
:func:`child_env` for any Python they start in turn; Python ≥ 3.11): nothing of the
working directory is on their path, and they import the same splitdesk as the parent —
an installed wheel (pipx, uv tool), an editable install, or, when splitdesk is not
installed at all (run from a source folder), the folder this module was imported from,
put on ``PYTHONPATH``. A frozen bundle has no such path entry (PyInstaller's importer
reads its own archive).

This module sits outside the layers (it imports nothing of splitdesk), so both ``core``
and ``sim`` may use it.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import sys
from collections.abc import Mapping
from pathlib import Path

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

    ``["/path/python", "-P", "-m", module]`` normally (``-P``: safe-path mode, the module
    docstring says why); in a frozen bundle the bundle binary with the arguments that stand
    for ``module``. Raises ``ValueError`` for a module the frozen binary cannot run (only
    the ones in this file's table can be). Start the child with :func:`child_env`.
    """
    if not is_frozen():
        return [sys.executable, "-P", "-m", module]
    try:
        return [sys.executable, *_FROZEN_ARGS[module]]
    except KeyError:
        raise ValueError(f"a frozen splitdesk cannot run module {module!r}") from None


@functools.cache
def _source_root() -> str | None:
    """The folder holding this ``splitdesk`` package when splitdesk is not installed (no
    distribution metadata: run from a source folder), else ``None``: the child's own
    ``site`` finds the installed package (wheel, pipx, editable)."""
    try:
        importlib.metadata.distribution("splitdesk")
    except importlib.metadata.PackageNotFoundError:
        return str(Path(__file__).resolve().parent.parent)
    return None


def child_env(base: Mapping[str, str] | None = None, **extra: str) -> dict[str, str]:
    """The environment for a child of :func:`module_command`: ``base`` (default
    ``os.environ``) plus ``extra``, with ``PYTHONSAFEPATH=1`` (so a Python the child starts
    keeps the working directory off its path too) and, when splitdesk is not installed,
    the folder it was imported from first on ``PYTHONPATH``."""
    env = dict(os.environ if base is None else base, **extra)
    env["PYTHONSAFEPATH"] = "1"
    root = None if is_frozen() else _source_root()
    if root is not None:
        rest = env.get("PYTHONPATH")
        env["PYTHONPATH"] = root + (os.pathsep + rest if rest else "")
    return env


def failure_line(stderr_lines: list[str]) -> str:
    """The one line that says why a child died, from the last lines of its stderr: the
    exception line that ends a Python traceback (``ImportError: …``), else the last
    non-blank line; ``""`` when it wrote nothing. The rest belongs in the log."""
    lines = [line.strip() for line in stderr_lines if line.strip()]
    for line in reversed(lines):
        head = line.split(":", 1)[0]
        if head.endswith(("Error", "Exception", "Interrupt", "Exit")) and " " not in head:
            return line
    return lines[-1] if lines else ""


def import_failure_fix(line: str) -> str | None:
    """The fix to name when a child's :func:`failure_line` says it could not import
    splitdesk (or a package it needs), else ``None``."""
    if not line.startswith(("ImportError", "ModuleNotFoundError")):
        return None
    return (
        "splitdesk's child process could not import what it needs; reinstall splitdesk "
        "(scripts/install.sh in a clone, or pipx reinstall splitdesk) and run it again"
    )
