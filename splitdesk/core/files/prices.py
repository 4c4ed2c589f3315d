"""Prices the user entered per endpoint, persisted in ``prices.json`` beside the settings.

No defaults: an endpoint has a price only when the user typed it (a provider's prices
change and differ by contract; a built-in guess would pretend to know). Keyed by
:func:`endpoint_key` (API dialect, base URL, model), never holding an API key. Reading and
writing touch the disk: call them off the GUI thread.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from splitdesk.core.analyse.cost import Prices
from splitdesk.core.files.atomic import write_atomic
from splitdesk.core.files.settings import config_dir
from splitdesk.core.run.bounded_read import read_bounded

#: Largest prices file read (each endpoint's entry is a few dozen bytes).
MAX_PRICES_BYTES = 4 * 1024 * 1024


class PricesFileError(ValueError):
    """``prices.json`` could not be read or written (one line, names the file)."""


class _PricesFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int = 1
    endpoints: dict[str, Prices] = {}


def prices_path() -> Path:
    """Where the prices live (the settings folder, ``SPLITDESK_CONFIG_DIR`` honoured)."""
    return config_dir() / "prices.json"


def endpoint_key(api: str, base_url: str, model: str) -> str:
    """The key of one endpoint's prices: ``"api base_url model"`` (base URL without a
    trailing slash)."""
    return f"{api} {base_url.strip().rstrip('/')} {model.strip()}"


def _read(path: Path) -> _PricesFile:
    if not path.exists():
        return _PricesFile()
    try:
        raw = read_bounded(path, MAX_PRICES_BYTES, "a prices file")
        return _PricesFile.model_validate_json(raw.decode("utf-8"))
    except (OSError, ValueError, ValidationError) as exc:  # FileTooLargeError is a ValueError
        raise PricesFileError(f"{path}: cannot read the prices ({str(exc)[:120]})") from None


def load_prices(key: str, path: Path | None = None) -> Prices | None:
    """The prices entered for ``key``, ``None`` when none were. Raises
    :class:`PricesFileError` when the file exists but is unreadable."""
    return _read(path or prices_path()).endpoints.get(key)


def save_prices(key: str, prices: Prices | None, path: Path | None = None) -> None:
    """Store (``None``: forget) the prices of ``key``; written atomically. Raises
    :class:`PricesFileError` when the file cannot be read or written."""
    path = path or prices_path()
    data = _read(path)
    if prices is None:
        data.endpoints.pop(key, None)
    else:
        data.endpoints[key] = prices
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps(data.model_dump(), indent=2) + "\n")
    except OSError as exc:
        raise PricesFileError(f"{path}: cannot write the prices ({exc.strerror or exc})") from None
