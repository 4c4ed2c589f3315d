"""``splitdesk doctor``: what a user runs first when something is off.

Checks, each printed as one line (``ok``, ``note`` or ``PROBLEM``) with a fix under every
problem and note:

* the program: splitdesk and Python versions, installed or frozen bundle;
* Qt: version, the platform plugin that opens (``xcb``, ``wayland``, ``offscreen``),
  PNG writing (screenshots), the SVG icon engine, and fonts for Latin, CJK and emoji text
  (``QFontDatabase``). Qt runs in a child process (``splitdesk doctor --qt-probe``): a
  platform plugin that cannot load aborts its process, and the doctor must report that,
  not die of it;
* the keyring: its backend, and whether it keeps a key (a throw-away entry is written,
  read back and deleted);
* the network environment: ``HTTP(S)_PROXY``/``ALL_PROXY``/``NO_PROXY`` as httpx reads them
  (credentials in proxy URLs are never printed), and ``SSL_CERT_FILE``/``SSL_CERT_DIR``;
* the folders splitdesk writes (settings, logs, data; ``platformdirs``);
* the ffmpeg that MP4 export runs;
* the built-in endpoint: it starts as a child process and answers a chat completion over
  loopback HTTP, through the same proxy settings a run uses; and the engine process starts.

Exit status 0 when nothing is a problem (notes are allowed), 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from pathlib import Path
from typing import Any

from splitdesk import __version__
from splitdesk.childproc import is_frozen
from splitdesk.doctor.endpoint import check_endpoint
from splitdesk.doctor.environment import (
    check_ffmpeg,
    check_folders,
    check_keyring,
    check_network_env,
)
from splitdesk.doctor.finding import Finding
from splitdesk.doctor.qt import check_qt, qt_probe

__all__ = ["Finding", "collect", "dispatch", "register", "render", "run", "version_text"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``splitdesk doctor``."""
    parser.add_argument(
        "--skip-endpoint",
        action="store_true",
        help="do not start the built-in endpoint and the engine process (quicker)",
    )
    parser.add_argument("--qt-probe", action="store_true", help=argparse.SUPPRESS)


def version_text() -> str:
    """What ``splitdesk --version`` prints: splitdesk, Python, PySide6/Qt, how installed."""
    from PySide6 import __version__ as pyside_version
    from PySide6.QtCore import qVersion

    package = Path(__file__).resolve().parent.parent  # splitdesk/, not splitdesk/doctor/
    how = "frozen bundle" if is_frozen() else f"Python package in {package}"
    return (
        f"splitdesk {__version__}\n"
        f"Python {platform.python_version()}, PySide6 {pyside_version}, Qt {qVersion()}\n"
        f"{how}"
    )


def collect(skip_endpoint: bool = False) -> list[Finding]:
    """Every check's findings, in the order they are printed."""
    how = "frozen bundle" if is_frozen() else "Python package"
    findings = [
        Finding(
            "splitdesk",
            "ok",
            f"{__version__} ({how}; Python {platform.python_version()}, {sys.executable})",
        )
    ]
    findings += check_qt()
    findings += check_keyring()
    findings += check_network_env()
    findings += check_folders()
    findings += check_ffmpeg()
    if not skip_endpoint:
        findings += check_endpoint()
    return findings


def render(findings: list[Finding]) -> str:
    """The report as text: one line per finding, a ``fix:`` line under notes and problems,
    and a closing count."""
    labels = {"ok": "ok     ", "note": "note   ", "problem": "PROBLEM"}
    lines = []
    for f in findings:
        lines.append(f"{labels[f.status]} {f.area:10} {f.detail}")
        if f.fix and f.status != "ok":
            lines.append(f"{'':8}{'':11}fix: {f.fix}")
    problems = sum(f.status == "problem" for f in findings)
    notes = sum(f.status == "note" for f in findings)
    lines.append(
        f"{problems} problem{'s' if problems != 1 else ''}, {notes} note{'s' if notes != 1 else ''}"
    )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Run ``splitdesk doctor``; 0 when no problem was found, else 1."""
    if args.qt_probe:
        print(json.dumps(qt_probe()), flush=True)
        return 0
    findings = collect(skip_endpoint=args.skip_endpoint)
    print(render(findings), flush=True)
    return 1 if any(f.status == "problem" for f in findings) else 0


class _VersionAction(argparse.Action):
    """``--version``: print :func:`version_text` and exit 0 (imports Qt only when asked)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        print(version_text(), flush=True)
        parser.exit(0)


def register(parser: argparse.ArgumentParser, sub: Any) -> None:
    """Add ``--version``, ``--install-desktop-entry``/``--uninstall-desktop-entry`` and the
    ``doctor`` command to the ``splitdesk`` parser (``sub``: its subparsers action)."""
    parser.add_argument(
        "--version", action=_VersionAction, help="print splitdesk's, Python's and Qt's versions"
    )
    entry = parser.add_mutually_exclusive_group()
    entry.add_argument(
        "--install-desktop-entry",
        action="store_true",
        help="add splitdesk to this user's desktop menu (entry and icons in XDG_DATA_HOME)",
    )
    entry.add_argument(
        "--uninstall-desktop-entry",
        action="store_true",
        help="remove what --install-desktop-entry added",
    )
    doctor = sub.add_parser(
        "doctor",
        help="check this installation and say how to fix what is wrong",
        description="Check Qt (platform plugin, fonts), the keyring, proxy and TLS settings, "
        "the settings/log/data folders and the built-in endpoint; print a fix for each "
        "problem. Exit status 1 when a problem is found.",
    )
    add_arguments(doctor)


def dispatch(args: argparse.Namespace) -> int | None:
    """Run ``doctor`` or the desktop-entry options when ``args`` asks for them; ``None``
    when it asks for something else."""
    if args.command == "doctor":
        return run(args)
    if args.install_desktop_entry or args.uninstall_desktop_entry:
        from splitdesk import desktop_entry

        return desktop_entry.run(remove=args.uninstall_desktop_entry)
    return None
