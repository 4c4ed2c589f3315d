"""Sweep results on disk: the saved sweep document, its CSV, the folder that keeps them.

A sweep run from the window is kept as its JSON document (the one ``splitdesk sweep
--json`` writes, :func:`splitdesk.core.bench.sweep.sweep_document`) in ``<data folder>/sweeps``
(:func:`sweeps_dir`, beside the auto-saved recordings), so its view can be opened again.
Reading one validates it with pydantic (:class:`SweepDocument`: the keys every view and
export needs; keys added later are kept); a file that is not a sweep is a
:class:`SweepFileError` naming the file and the field.
"""

from __future__ import annotations

import csv
import io
import json
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from splitdesk.core.files.atomic import write_atomic
from splitdesk.core.files.recording import data_dir
from splitdesk.core.run.bounded_read import FileTooLargeError, read_bounded

#: Largest sweep document read (a sweep of 64 rows of medians is a few hundred kB).
MAX_SWEEP_BYTES = 64 * 1024 * 1024

#: The CSV's columns, in order: N, median walls (s), measured and predicted speed-up (×),
#: and the ideal speed-up (= N).
CSV_COLUMNS = (
    "n",
    "combined_wall_s",
    "parallel_wall_s",
    "speedup",
    "predicted_speedup",
    "ideal_speedup",
    "disturbed",
)


class SweepFileError(ValueError):
    """A sweep file could not be read, written or is not a sweep; the message names it."""


class SweepRowModel(BaseModel):
    """A row of a sweep document (:mod:`splitdesk.core.bench.sweep`): times in seconds, speed-ups
    as ratios, ``None`` where unknown."""

    model_config = ConfigDict(extra="allow")

    n: int
    speedup: float | None
    predicted_speedup: float | None
    combined_wall_s: float | None
    parallel_wall_s: float | None
    failed: bool = False
    stopped: bool = False


class SweepDocument(BaseModel):
    """A sweep's JSON document, as far as reading it back needs (keys may be added)."""

    model_config = ConfigDict(extra="allow")

    version: str
    endpoint: dict[str, str]
    max_n: int
    repeat: int
    questions: list[str]
    generated_questions: int
    rows: list[SweepRowModel]
    client: dict[str, str] | None = None


def sweeps_dir() -> Path:
    """Where the window keeps its sweeps: ``<data folder>/sweeps`` (``SPLITDESK_DATA_DIR``
    overrides the data folder, as for recordings)."""
    return data_dir() / "sweeps"


def sweep_name(doc: dict[str, Any], now: float | None = None) -> str:
    """A file name for ``doc``: ``sweep-YYYYMMDD-HHMMSS-n1-<max_n>.json`` (local time)."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    return f"sweep-{stamp}-n1-{doc['max_n']}.json"


def sweep_json(doc: dict[str, Any]) -> str:
    """The document's JSON text (as ``splitdesk sweep --json`` writes it, newline ended)."""
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def write_sweep(doc: dict[str, Any], path: Path) -> Path:
    """Write ``doc`` as JSON to ``path`` (folders made); returns ``path``. Blocks (call it
    off the GUI thread); raises :class:`SweepFileError`."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, sweep_json(doc))
    except OSError as exc:
        raise SweepFileError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path


def save_sweep(doc: dict[str, Any], folder: Path | None = None, now: float | None = None) -> Path:
    """Keep ``doc`` in ``folder`` (default :func:`sweeps_dir`) under :func:`sweep_name`
    for ``now`` (epoch seconds; default the current time); a second one in the same
    second gets ``-2``, ``-3`` …. Returns its path. Blocks; raises :class:`SweepFileError`."""
    folder = folder or sweeps_dir()
    name = sweep_name(doc, now)
    path, k = folder / name, 2
    while path.exists():
        path, k = folder / f"{name.removesuffix('.json')}-{k}.json", k + 1
    return write_sweep(doc, path)


def read_sweep(path: Path) -> dict[str, Any]:
    """The sweep document in ``path``, validated (:class:`SweepDocument`) and returned as
    read (added keys kept). Blocks; raises :class:`SweepFileError` naming the file and,
    for a document that is not a sweep, the first field that is wrong."""
    try:
        data = json.loads(read_bounded(path, MAX_SWEEP_BYTES, "a sweep", path.name))
    except FileTooLargeError as exc:
        raise SweepFileError(str(exc)) from None
    except OSError as exc:
        raise SweepFileError(f"cannot read {path}: {exc.strerror or exc}") from None
    except RecursionError:
        raise SweepFileError(f"{path.name} is not JSON: nested too deeply") from None
    except ValueError as exc:  # UnicodeDecodeError is a ValueError
        raise SweepFileError(f"{path.name} is not JSON: {exc}") from None
    try:
        SweepDocument.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        raise SweepFileError(f"{path.name} is not a sweep: `{where}` {first['msg']}") from None
    return dict(data)


def saved_sweeps(folder: Path | None = None) -> list[Path]:
    """The sweeps kept in ``folder`` (default :func:`sweeps_dir`), newest first."""
    folder = folder or sweeps_dir()
    try:
        found = [p for p in folder.glob("sweep-*.json") if p.is_file()]
    except OSError:
        return []
    return sorted(found, key=lambda p: p.stat().st_mtime, reverse=True)


def sweep_csv(doc: dict[str, Any]) -> str:
    """The document's rows as CSV (:data:`CSV_COLUMNS`; an unknown figure is empty)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for row in doc["rows"]:
        # runs the machine disturbed (left out of the row's medians), with their reasons
        disturbed = "; ".join(row.get("disturbed") or ())
        values = {**row, "ideal_speedup": row["n"], "disturbed": disturbed or None}
        writer.writerow(["" if values.get(c) is None else values[c] for c in CSV_COLUMNS])
    return buf.getvalue()
