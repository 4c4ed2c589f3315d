"""The desktop entry, AppStream metainfo and icons: valid by the freedesktop tools, and
``splitdesk --install-desktop-entry`` puts them where desktops look, for this user."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from splitdesk import desktop_entry

ROOT = Path(__file__).resolve().parent.parent
DESKTOP = ROOT / "resources" / "desktop"
SIZES = (16, 24, 32, 48, 64, 128, 256, 512)


def _tool(name: str) -> str:
    path = shutil.which(name)
    assert path, f"{name} is missing: scripts/install.sh --test installs it"
    return path


def test_shipped_desktop_entry_is_valid() -> None:
    proc = subprocess.run(
        [_tool("desktop-file-validate"), str(DESKTOP / "splitdesk.desktop")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0 and "error" not in proc.stdout, proc.stdout + proc.stderr


def test_shipped_metainfo_is_valid() -> None:
    proc = subprocess.run(
        [
            _tool("appstreamcli"),
            "validate",
            "--no-net",
            "--pedantic",
            str(DESKTOP / desktop_entry.METAINFO_FILE),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_metainfo_names_this_version_as_the_latest_release() -> None:
    import xml.etree.ElementTree as ET

    import splitdesk

    root = ET.parse(DESKTOP / desktop_entry.METAINFO_FILE).getroot()
    releases = root.findall("./releases/release")
    assert releases, "the metainfo lists no release"
    assert releases[0].get("version") == splitdesk.__version__, "add a <release> for it"


def test_icons_exist_in_every_standard_size() -> None:
    from PySide6.QtGui import QImage

    for size in SIZES:
        png = ROOT / "resources" / "icons" / "hicolor" / f"{size}x{size}" / "apps" / "splitdesk.png"
        image = QImage(str(png))
        assert not image.isNull(), png
        assert (image.width(), image.height()) == (size, size)
        assert image.hasAlphaChannel()


def test_exec_quoting_follows_the_spec() -> None:
    assert desktop_entry.exec_quote(Path("/opt/splitdesk/splitdesk")) == "/opt/splitdesk/splitdesk"
    assert desktop_entry.exec_quote(Path("/home/a b/bin/splitdesk")) == '"/home/a b/bin/splitdesk"'
    assert desktop_entry.exec_quote(Path('/x/$y"/100%')) == '"/x/\\$y\\"/100%%"'


def _splitdesk(*args: str, data_home: Path) -> subprocess.CompletedProcess[str]:
    launcher = Path(sys.executable).parent / "splitdesk"
    return subprocess.run(
        [str(launcher), *args],
        capture_output=True,
        text=True,
        env=dict(os.environ, XDG_DATA_HOME=str(data_home)),
        timeout=60,
    )


def test_install_and_uninstall_for_the_current_user(tmp_path: Path) -> None:
    home = tmp_path / "share with space"
    proc = _splitdesk("--install-desktop-entry", data_home=home)
    assert proc.returncode == 0, proc.stderr
    entry = home / "applications" / "splitdesk.desktop"
    text = entry.read_text("utf-8")
    launcher = Path(sys.executable).parent / "splitdesk"
    assert f"Exec={launcher}\n" in text
    assert f"TryExec={launcher}\n" in text
    assert "Icon=splitdesk\n" in text
    check = subprocess.run(
        [_tool("desktop-file-validate"), str(entry)], capture_output=True, text=True, timeout=60
    )
    assert check.returncode == 0, check.stdout
    for size in SIZES:
        assert (home / "icons" / "hicolor" / f"{size}x{size}" / "apps" / "splitdesk.png").is_file()
    svg = home / "icons" / "hicolor" / "scalable" / "apps" / "splitdesk.svg"
    assert svg.read_bytes() == (ROOT / "resources" / "icons" / "splitdesk.svg").read_bytes()
    assert (home / "metainfo" / desktop_entry.METAINFO_FILE).is_file()
    assert str(entry) in proc.stdout

    gone = _splitdesk("--uninstall-desktop-entry", data_home=home)
    assert gone.returncode == 0, gone.stderr
    assert not entry.exists()
    assert not [p for p in home.rglob("*") if p.is_file() and "splitdesk" in p.name]


def test_install_into_an_unwritable_place_is_one_clear_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    proc = _splitdesk("--install-desktop-entry", data_home=blocker)
    assert proc.returncode == 1
    assert proc.stderr.startswith("splitdesk: error:") and len(proc.stderr.splitlines()) == 1
    assert "Traceback" not in proc.stderr


def test_the_shell_script_installs_the_same_entry(tmp_path: Path) -> None:
    proc = subprocess.run(
        [str(ROOT / "scripts" / "install-desktop-entry.sh")],
        capture_output=True,
        text=True,
        env=dict(os.environ, XDG_DATA_HOME=str(tmp_path)),
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "applications" / "splitdesk.desktop").is_file()


#: How far one colour channel of a pixel may differ between the committed PNG and a fresh
#: render: Qt's rasterizer rounds antialiased edges differently by CPU (its SIMD path), by
#: one level on a few edge pixels of the 16 px icon between two machines here. Any edit to
#: the SVG (a colour, a shape) moves whole areas by far more (checked below).
RASTER_ROUNDING = 2


def _max_channel_difference(a: Any, b: Any) -> int:
    """The largest difference of one channel (0…255) over every pixel of two same-size
    ARGB32 QImages."""
    assert (a.width(), a.height()) == (b.width(), b.height())
    worst = 0
    for y in range(a.height()):
        for x in range(a.width()):
            p, q = a.pixel(x, y), b.pixel(x, y)
            if p != q:
                worst = max(
                    worst, *(abs(((p >> k) & 255) - ((q >> k) & 255)) for k in (0, 8, 16, 24))
                )
    return worst


@pytest.mark.usefixtures("qapp")
def test_committed_pngs_match_the_svg(tmp_path: Path) -> None:
    """The PNGs are rendered from the SVG by scripts/render_icons.py; an edited SVG
    without re-rendered PNGs fails here."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import render_icons
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    from PySide6.QtGui import QImage

    def committed(size: int) -> Any:
        path = (
            ROOT / "resources" / "icons" / "hicolor" / f"{size}x{size}" / "apps" / "splitdesk.png"
        )
        return QImage(str(path)).convertToFormat(QImage.Format.Format_ARGB32)

    for size in (16, 64, 256):
        fresh = render_icons.render(size).convertToFormat(QImage.Format.Format_ARGB32)
        worst = _max_channel_difference(committed(size), fresh)
        assert worst <= RASTER_ROUNDING, (
            f"{size}px PNG is stale (a channel differs by {worst}): run scripts/render_icons.py"
        )
    # The check catches an edit: one bar's colour changed in the SVG.
    edited = tmp_path / "edited.svg"
    edited.write_text(render_icons.SOURCE.read_text().replace("#E69F00", "#D55E00"))
    source, render_icons.SOURCE = render_icons.SOURCE, edited
    try:
        fresh = render_icons.render(16).convertToFormat(QImage.Format.Format_ARGB32)
    finally:
        render_icons.SOURCE = source
    assert _max_channel_difference(committed(16), fresh) > RASTER_ROUNDING
