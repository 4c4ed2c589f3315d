"""splitdesk: one combined LLM request vs N parallel requests, live and measured."""

import sys

__version__ = "0.1.0"

# ``import httpx`` imports httpx's command-line client (``httpx/__init__.py``: ``from
# ._main import main``) and with it click, rich and pygments wherever they are installed:
# ~170 ms of every splitdesk process's start where they are (``import httpx`` alone took
# 0.40 s, 0.23 s without; issue 25's cold start). splitdesk never runs that client, and
# httpx defines a stub ``main`` when the import fails (its own ``except ImportError``), so
# the module is marked absent before httpx is imported: a ``None`` in ``sys.modules``
# makes its import raise ``ImportError`` (the import system's documented behaviour,
# https://docs.python.org/3/reference/import.html#the-module-cache).
# (typeshed types the values as modules only; None is what marks one absent)
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
