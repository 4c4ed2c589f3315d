"""``splitdesk --install-desktop-entry``: a launcher in the desktop's menu, for this user.

Installs, under ``$XDG_DATA_HOME`` (default ``~/.local/share``; the freedesktop base
directory spec):

* ``applications/splitdesk.desktop`` — the entry shipped in ``resources/desktop``, with
  ``Exec``/``TryExec`` set to the absolute path of the ``splitdesk`` being run (a venv's
  script, a pipx/uv tool's shim or the bundle's binary), so it starts without PATH;
* ``icons/hicolor/{N}x{N}/apps/splitdesk.png`` (16…512) and
  ``icons/hicolor/scalable/apps/splitdesk.svg`` (the freedesktop icon theme layout);
* ``metainfo/io.github.splitdesk.splitdesk.metainfo.xml`` (AppStream, for software centres).

``--uninstall-desktop-entry`` removes exactly those files. No Qt here.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

from splitdesk.childproc import is_frozen
from splitdesk.core.files.atomic import write_atomic

DESKTOP_FILE = "splitdesk.desktop"
METAINFO_FILE = "io.github.splitdesk.splitdesk.metainfo.xml"
ICON_NAME = "splitdesk"


def data_home() -> Path:
    """``$XDG_DATA_HOME`` when set to an absolute path, else ``~/.local/share`` (the spec)."""
    value = os.environ.get("XDG_DATA_HOME", "")
    return Path(value) if os.path.isabs(value) else Path.home() / ".local" / "share"


def launcher_path() -> Path:
    """The absolute path of the ``splitdesk`` program being run.

    The bundle's binary when frozen; else ``sys.argv[0]`` when it is the ``splitdesk``
    script (venv, pipx, uv tool); else the ``splitdesk`` script next to the interpreter.
    Raises ``FileNotFoundError`` when none exists (e.g. ``python -m splitdesk`` from a
    checkout with no script installed)."""
    if is_frozen():
        return Path(sys.executable).resolve()
    argv0 = Path(sys.argv[0])
    if argv0.name == "splitdesk" and argv0.is_file():
        return argv0.absolute()
    beside = Path(sys.executable).parent / "splitdesk"
    if beside.is_file():
        return beside
    found = shutil.which("splitdesk")
    if found:
        return Path(found).absolute()
    raise FileNotFoundError(
        "no 'splitdesk' program found to point the menu entry at (install splitdesk with "
        "pip, pipx or uv first)"
    )


def exec_quote(path: Path) -> str:
    """``path`` as one argument of a desktop entry's ``Exec`` key (desktop entry spec,
    "The Exec key": quote when needed, backslash-escape ``"`` `` ` `` ``$`` ``\\``, and
    double ``%``)."""
    text = str(path).replace("%", "%%")
    if not any(c in text for c in " \t\n\"'\\><~|&;$*?#()`"):
        return text
    escaped = "".join("\\" + c if c in '"`$\\' else c for c in text)
    return f'"{escaped}"'


def desktop_entry_text(launcher: Path) -> str:
    """The shipped entry with ``Exec`` and ``TryExec`` pointing at ``launcher``."""
    source = files("splitdesk.resources").joinpath("desktop", DESKTOP_FILE).read_text("utf-8")
    lines = []
    for line in source.splitlines():
        if line.startswith("Exec="):
            line = f"Exec={exec_quote(launcher)}"
        elif line.startswith("TryExec="):
            # TryExec is a path, not a command line: no quoting (spec), only the path.
            line = f"TryExec={launcher}"
        lines.append(line)
    return "\n".join(lines) + "\n"


def _icon_files() -> list[tuple[Traversable, Path]]:
    """(shipped file, path relative to ``icons/hicolor``) for every icon size."""
    icons = files("splitdesk.resources").joinpath("icons")
    out: list[tuple[Traversable, Path]] = [
        (icons.joinpath("splitdesk.svg"), Path("scalable", "apps", f"{ICON_NAME}.svg"))
    ]
    for size_dir in sorted(icons.joinpath("hicolor").iterdir(), key=lambda t: t.name):
        png = size_dir.joinpath("apps", f"{ICON_NAME}.png")
        if png.is_file():
            out.append((png, Path(size_dir.name, "apps", f"{ICON_NAME}.png")))
    return out


def installed_paths(home: Path | None = None) -> list[Path]:
    """Every file :func:`install` writes under ``home`` (default :func:`data_home`)."""
    home = home or data_home()
    return [
        home / "applications" / DESKTOP_FILE,
        home / "metainfo" / METAINFO_FILE,
        *(home / "icons" / "hicolor" / rel for _src, rel in _icon_files()),
    ]


def _refresh_caches(home: Path) -> None:
    """Tell the desktop about the new files when its cache tools exist (best effort:
    desktops also watch these folders)."""
    for command in (
        ["update-desktop-database", "-q", str(home / "applications")],
        ["gtk-update-icon-cache", "-q", "-t", "-f", str(home / "icons" / "hicolor")],
    ):
        if shutil.which(command[0]):
            subprocess.run(command, check=False, capture_output=True, timeout=30)


def install(home: Path | None = None, launcher: Path | None = None) -> list[Path]:
    """Write the entry, icons and metainfo; returns the files written. Raises ``OSError``
    (folder not writable) or ``FileNotFoundError`` (no launcher, see :func:`launcher_path`)."""
    home = home or data_home()
    launcher = launcher or launcher_path()
    written: list[Path] = []
    entry = home / "applications" / DESKTOP_FILE
    entry.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(entry, desktop_entry_text(launcher))
    written.append(entry)
    meta = home / "metainfo" / METAINFO_FILE
    meta.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(meta, files("splitdesk.resources").joinpath("desktop", METAINFO_FILE).read_bytes())
    written.append(meta)
    for src, rel in _icon_files():
        target = home / "icons" / "hicolor" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, src.read_bytes())
        written.append(target)
    _refresh_caches(home)
    return written


def uninstall(home: Path | None = None) -> list[Path]:
    """Remove what :func:`install` wrote; returns the files removed."""
    home = home or data_home()
    removed = []
    for path in installed_paths(home):
        if path.is_file():
            path.unlink()
            removed.append(path)
    _refresh_caches(home)
    return removed


def run(remove: bool = False) -> int:
    """The command: install (or remove) and say what was done. Exit status 0, or 1 with a
    one-line error."""
    try:
        paths = uninstall() if remove else install()
    except OSError as exc:  # FileNotFoundError for a missing launcher is one
        print(f"splitdesk: error: {exc.strerror or exc}", file=sys.stderr)
        return 1
    verb = "removed" if remove else "installed"
    if remove and not paths:
        print("splitdesk: no desktop entry was installed for this user")
        return 0
    print(f"splitdesk: {verb} {len(paths)} files:")
    for path in paths:
        print(f"  {path}")
    if not remove:
        print("The menu shows 'splitdesk' now (some desktops need a new login).")
    return 0
