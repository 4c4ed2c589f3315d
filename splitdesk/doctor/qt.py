"""``splitdesk doctor``'s Qt checks: version, platform plugin, PNG/SVG support, fonts.

Qt runs in a child process (``splitdesk doctor --qt-probe``): a platform plugin that
cannot load aborts its process, and the doctor must report that, not die of it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from splitdesk.childproc import child_env, failure_line, import_failure_fix, module_command
from splitdesk.doctor.finding import Finding

#: Characters whose glyphs prove a font covers the script (U+4E2D 中, U+1F600 😀).
CJK_PROBE = 0x4E2D
EMOJI_PROBE = 0x1F600


def qt_probe() -> dict[str, Any]:
    """Open a ``QGuiApplication`` on the platform Qt picks and describe what it has.

    Returns a JSON-able dict: ``qt``, ``platform``, ``plugins`` (platform plugin names
    found), ``png`` (can write PNG), ``svg_icon`` (an SVG icon renders), ``fonts``:
    ``{"latin"|"cjk"|"emoji": [family, …]}`` (families that hold the probe glyph),
    ``default_font`` (the family Qt uses for text)."""
    from importlib.resources import as_file, files

    from PySide6.QtCore import QLibraryInfo, qVersion
    from PySide6.QtGui import (
        QFont,
        QFontDatabase,
        QFontMetrics,
        QGuiApplication,
        QIcon,
        QImageWriter,
    )

    app = QGuiApplication(sys.argv[:1])
    plugin_dir = Path(QLibraryInfo.path(QLibraryInfo.LibraryPath.PluginsPath)) / "platforms"
    plugins = sorted(p.name.removeprefix("libq").split(".")[0] for p in plugin_dir.glob("libq*.so"))
    writes = {bytes(f.data()).decode() for f in QImageWriter.supportedImageFormats()}
    with as_file(files("splitdesk.resources").joinpath("icons/splitdesk.svg")) as svg:
        svg_icon = not QIcon(str(svg)).pixmap(32, 32).isNull()

    def covering(families: list[str], char: int, limit: int = 400) -> list[str]:
        found = []
        for family in families[:limit]:
            if QFontMetrics(QFont(family)).inFontUcs4(char):
                found.append(family)
        return found

    db = QFontDatabase
    latin = list(db.families(QFontDatabase.WritingSystem.Latin))
    cjk = covering(list(db.families(QFontDatabase.WritingSystem.SimplifiedChinese)), CJK_PROBE)
    every = list(db.families())
    named_emoji = [f for f in every if "emoji" in f.lower()]
    emoji = covering(named_emoji, EMOJI_PROBE) or covering(every, EMOJI_PROBE)
    result = {
        "qt": qVersion(),
        "platform": app.platformName(),
        "plugins": plugins,
        "png": "png" in writes,
        "svg_icon": svg_icon,
        "fonts": {"latin": latin, "cjk": cjk, "emoji": emoji},
        "default_font": QFontDatabase.systemFont(QFontDatabase.SystemFont.GeneralFont).family(),
    }
    del app
    return result


def _has_display() -> bool:
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def check_qt() -> list[Finding]:
    """Qt version, platform plugin, PNG/SVG support and fonts, probed in a child."""
    out: list[Finding] = []
    env = child_env()
    chosen = env.get("QT_QPA_PLATFORM")
    if not chosen and not _has_display():
        out.append(
            Finding(
                "display",
                "problem",
                "no DISPLAY or WAYLAND_DISPLAY and no QT_QPA_PLATFORM: the window cannot open",
                "run it inside a desktop session, or under Xvfb (xvfb-run -a splitdesk), or "
                "offscreen for screenshots (QT_QPA_PLATFORM=offscreen splitdesk --run "
                "--screenshot out.png --quit); the checks below ran offscreen",
            )
        )
        env["QT_QPA_PLATFORM"] = "offscreen"
    try:
        proc = subprocess.run(
            [*module_command("splitdesk"), "doctor", "--qt-probe"],
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
            env=env,
            timeout=60,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return [
            *out,
            Finding(
                "Qt",
                "problem",
                "starting Qt did not finish within 60 s",
                "a display server that does not answer? try QT_QPA_PLATFORM=offscreen",
            ),
        ]
    last = proc.stdout.strip().splitlines()[-1:] or [""]
    try:
        info = json.loads(last[0])
    except ValueError:
        lines = proc.stderr.strip().splitlines()[-40:]
        cause = failure_line(lines)
        fix = import_failure_fix(cause)
        if fix is not None:  # the probe never got as far as Qt
            return [
                *out,
                Finding("Qt", "problem", f"the Qt check could not run: {cause}", fix),
            ]
        tail = " | ".join(lines[-4:])
        return [
            *out,
            Finding(
                "Qt",
                "problem",
                f"Qt could not start (exit status {proc.returncode}): {tail or 'no message'}",
                "install the system libraries Qt needs (Debian/Ubuntu: scripts/install.sh "
                "lists them; 'could not connect to display' means no display is reachable: "
                "use xvfb-run or QT_QPA_PLATFORM=offscreen)",
            ),
        ]
    plugins = ", ".join(info["plugins"]) or "none found"
    out.append(
        Finding(
            "Qt",
            "ok",
            f"Qt {info['qt']}, platform plugin '{info['platform']}' (available: {plugins})",
        )
    )
    if not info["png"]:
        out.append(
            Finding(
                "images",
                "problem",
                "Qt cannot write PNG: --screenshot will fail",
                "reinstall PySide6 (pip install --force-reinstall PySide6-Essentials)",
            )
        )
    if not info["svg_icon"]:
        out.append(
            Finding(
                "icon",
                "note",
                "the SVG icon engine is missing: the window shows no icon",
                "reinstall PySide6 (its plugins/iconengines/libqsvgicon.so)",
            )
        )
    fonts = info["fonts"]
    if fonts["latin"]:
        out.append(
            Finding(
                "fonts",
                "ok",
                f"Latin: {len(fonts['latin'])} families (default: {info['default_font']})",
            )
        )
    else:
        out.append(
            Finding(
                "fonts",
                "problem",
                "no font for Latin text: every letter shows as a box",
                "install fonts (Debian/Ubuntu: apt install fonts-dejavu-core fontconfig)",
            )
        )
    for key, label, package in (
        ("cjk", "CJK", "fonts-wqy-microhei or fonts-noto-cjk"),
        ("emoji", "emoji", "fonts-noto-color-emoji"),
    ):
        if fonts[key]:
            out.append(Finding("fonts", "ok", f"{label}: {', '.join(fonts[key][:3])}"))
        else:
            out.append(
                Finding(
                    "fonts",
                    "note",
                    f"no font with {label} glyphs: such text in answers shows as boxes",
                    f"install one (Debian/Ubuntu: apt install {package})",
                )
            )
    return out
