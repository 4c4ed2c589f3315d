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
* the built-in endpoint: it starts as a child process and answers a chat completion over
  loopback HTTP, through the same proxy settings a run uses; and the engine process starts.

Exit status 0 when nothing is a problem (notes are allowed), 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from splitdesk import __version__
from splitdesk.childproc import is_frozen, module_command

Status = Literal["ok", "note", "problem"]

#: Characters whose glyphs prove a font covers the script (U+4E2D 中, U+3042 あ, U+1F600 😀).
CJK_PROBE = 0x4E2D
EMOJI_PROBE = 0x1F600


@dataclass(frozen=True)
class Finding:
    """One checked thing: ``area`` (short label), ``status``, what was found, and for a
    note or a problem the fix a user can apply."""

    area: str
    status: Status
    detail: str
    fix: str | None = None


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

    how = "frozen bundle" if is_frozen() else f"Python package in {Path(__file__).parent}"
    return (
        f"splitdesk {__version__}\n"
        f"Python {platform.python_version()}, PySide6 {pyside_version}, Qt {qVersion()}\n"
        f"{how}"
    )


# -- Qt (in a child process) ----------------------------------------------------------------


def qt_probe() -> dict[str, Any]:
    """Open a ``QGuiApplication`` on the platform Qt picks and describe what it has.

    Returns a JSON-able dict: ``qt``, ``platform``, ``plugins`` (platform plugin names
    found), ``png`` (can write PNG), ``svg_icon`` (an SVG icon renders), ``fonts``:
    ``{"latin"|"cjk"|"emoji": [family, …]}`` (families that hold the probe glyph)."""
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
    }
    del app
    return result


def _has_display() -> bool:
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def check_qt() -> list[Finding]:
    """Qt version, platform plugin, PNG/SVG support and fonts, probed in a child."""
    out: list[Finding] = []
    env = dict(os.environ)
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
        tail = " | ".join(line for line in proc.stderr.strip().splitlines()[-4:])
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
            Finding("fonts", "ok", f"Latin: {len(fonts['latin'])} families ({fonts['latin'][0]})")
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


# -- keyring ------------------------------------------------------------------------------------


def _with_timeout(fn: Callable[[], Any], seconds: float) -> Any:
    """``fn()`` on a daemon thread; raises ``TimeoutError`` after ``seconds`` (a keyring
    waiting for an unlock dialog must not hang the doctor)."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True, name="doctor-keyring")
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise TimeoutError(f"no answer within {seconds:g} s")
    if "error" in box:
        raise box["error"]
    return box.get("value")


def check_keyring() -> list[Finding]:
    """The keyring backend, and whether it keeps a key (write, read back, delete)."""
    import secrets as token_source

    from splitdesk.core.secrets import SERVICE, keyring_get, keyring_set

    try:
        import keyring

        backend = keyring.get_keyring()
    except Exception as exc:
        return [
            Finding(
                "keyring",
                "problem",
                f"the keyring library failed to load ({type(exc).__name__}: {exc})",
                "reinstall splitdesk, or check ~/.config/python_keyring/keyringrc.cfg",
            )
        ]
    name = f"{type(backend).__module__}.{type(backend).__name__}"
    if "fail" in type(backend).__module__:
        return [
            Finding(
                "keyring",
                "note",
                f"no OS keyring ({name}): API keys are kept for one session only",
                "start and unlock a Secret Service (GNOME Keyring, KWallet), or give keys "
                "through an environment variable (the endpoint's 'key from environment')",
            )
        ]
    account = "doctor-check"
    probe = token_source.token_hex(8)
    try:
        _with_timeout(lambda: keyring_set(account, probe), 15)
        kept = _with_timeout(lambda: keyring_get(account), 15) == probe
        _with_timeout(lambda: keyring.delete_password(SERVICE, account), 15)
    except Exception as exc:  # KeyringError, TimeoutError or the backend's own
        return [
            Finding(
                "keyring",
                "problem",
                f"{name} did not keep a key: {exc}",
                "unlock the keyring (log in to the desktop session), or use an environment "
                "variable for the API key",
            )
        ]
    if not kept:
        return [
            Finding(
                "keyring",
                "problem",
                f"{name} returned something else than the key just stored",
                "check the keyring's configuration, or use an environment variable",
            )
        ]
    return [Finding("keyring", "ok", f"{name} keeps keys")]


# -- proxies and TLS ---------------------------------------------------------------------------


def _redacted(url: str) -> str:
    """A proxy URL without its user name and password."""
    parts = urllib.parse.urlsplit(url if "://" in url else f"http://{url}")
    if parts.username or parts.password:
        host = parts.hostname or ""
        netloc = f"***@{host}" + (f":{parts.port}" if parts.port else "")
        return urllib.parse.urlunsplit(parts._replace(netloc=netloc))
    return url


def _loopback_bypassed(no_proxy: str) -> bool:
    hosts = {h.strip().lower() for h in no_proxy.split(",")}
    return bool(hosts & {"*", "127.0.0.1", "127.0.0.0/8"})


def check_network_env() -> list[Finding]:
    """Proxy variables as httpx reads them (``urllib.request.getproxies``), and the CA
    bundle variables."""
    import importlib.util
    from urllib.request import getproxies

    out: list[Finding] = []
    proxies = {k: v for k, v in getproxies().items() if k in ("http", "https", "all", "no")}
    used = {k: v for k, v in proxies.items() if k != "no"}
    if not used:
        out.append(Finding("proxy", "ok", "no proxy variables set"))
    else:
        shown = ", ".join(f"{k.upper()}_PROXY={_redacted(v)}" for k, v in used.items())
        out.append(Finding("proxy", "ok", shown + f"; NO_PROXY={proxies.get('no', '')!r}"))
        for key, value in used.items():
            scheme = urllib.parse.urlsplit(value if "://" in value else f"http://{value}").scheme
            if scheme.startswith("socks") and importlib.util.find_spec("socksio") is None:
                out.append(
                    Finding(
                        "proxy",
                        "problem",
                        f"{key.upper()}_PROXY is a SOCKS proxy, which needs the socksio package",
                        "pip install 'httpx[socks]' into splitdesk's environment, or use an "
                        "HTTP proxy",
                    )
                )
            elif scheme not in ("http", "https", "socks5", "socks5h"):
                out.append(
                    Finding(
                        "proxy",
                        "problem",
                        f"{key.upper()}_PROXY has scheme {scheme!r}, which httpx cannot use",
                        "give the proxy as http://HOST:PORT",
                    )
                )
        if not _loopback_bypassed(proxies.get("no", "")):
            out.append(
                Finding(
                    "proxy",
                    "problem",
                    "NO_PROXY does not name 127.0.0.1: requests to the built-in endpoint and "
                    "to local servers go through the proxy",
                    "export NO_PROXY=127.0.0.1,localhost,::1 (keep its other entries)",
                )
            )
    for var, want_dir in (("SSL_CERT_FILE", False), ("SSL_CERT_DIR", True)):
        cert_value = os.environ.get(var)
        if not cert_value:
            continue
        path = Path(cert_value)
        good = path.is_dir() if want_dir else path.is_file()
        if good:
            out.append(Finding("TLS", "ok", f"{var}={cert_value} exists"))
        else:
            kind = "folder" if want_dir else "file"
            out.append(
                Finding(
                    "TLS",
                    "problem",
                    f"{var}={cert_value} is not an existing {kind}: HTTPS connections will fail",
                    f"point {var} at your CA bundle {kind}, or unset it",
                )
            )
    if not any(os.environ.get(v) for v in ("SSL_CERT_FILE", "SSL_CERT_DIR")):
        out.append(Finding("TLS", "ok", "system CA certificates (SSL_CERT_FILE/DIR not set)"))
    return out


# -- folders ---------------------------------------------------------------------------------------


def _writable_folder(path: Path) -> tuple[bool, str]:
    """(usable, how): an existing writable folder, or one that can be created."""
    if path.is_dir():
        return os.access(path, os.W_OK | os.X_OK), "exists"
    if path.exists():
        return False, "is not a folder"
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    return parent.is_dir() and os.access(parent, os.W_OK | os.X_OK), "created when needed"


def check_folders() -> list[Finding]:
    """The settings, log and data folders: each must exist writable or be creatable."""
    import platformdirs

    from splitdesk.core.settings import config_dir

    log_override = os.environ.get("SPLITDESK_LOG_DIR")
    folders = {
        "settings": (config_dir(), "SPLITDESK_CONFIG_DIR"),
        "logs": (
            Path(log_override) if log_override else platformdirs.user_log_path("splitdesk"),
            "SPLITDESK_LOG_DIR",
        ),
        "data": (platformdirs.user_data_path("splitdesk"), "XDG_DATA_HOME"),
    }
    out = []
    for label, (path, variable) in folders.items():
        usable, how = _writable_folder(path)
        if usable:
            out.append(Finding("folders", "ok", f"{label}: {path} ({how})"))
        else:
            out.append(
                Finding(
                    "folders",
                    "problem",
                    f"{label}: {path} {how} and is not writable",
                    f"make it writable (chmod u+rwx {path}) or set {variable} to another folder",
                )
            )
    return out


# -- built-in endpoint and engine ------------------------------------------------------------


def check_endpoint() -> list[Finding]:
    """Start the built-in endpoint, ask it one chat completion over loopback (with the
    environment's proxy settings, as a run does), and start the engine process."""
    import httpx

    from splitdesk.core.engine import EngineProcess
    from splitdesk.sim.launcher import SimStartError, start_sim

    out: list[Finding] = []
    t0 = time.perf_counter()
    try:
        sim = start_sim(timeout=30.0)
    except (SimStartError, OSError) as exc:
        return [
            Finding(
                "endpoint",
                "problem",
                f"the built-in endpoint did not start: {exc}",
                "run 'splitdesk sim' to see its own error; a firewall must allow 127.0.0.1",
            )
        ]
    started = time.perf_counter() - t0
    try:
        with httpx.Client(timeout=15.0, trust_env=True) as client:
            model = client.get(f"{sim.openai_base_url}/models").json()["data"][0]["id"]
            reply = client.post(
                f"{sim.openai_base_url}/chat/completions",
                json={
                    "model": model,
                    "messages": [{"role": "user", "content": "Say hello."}],
                    "max_tokens": 8,
                    "stream": False,
                },
            )
            reply.raise_for_status()
            text = reply.json()["choices"][0]["message"]["content"]
        answered = time.perf_counter() - t0
        out.append(
            Finding(
                "endpoint",
                "ok",
                f"built-in endpoint started in {started:.1f} s at {sim.url} and answered "
                f"({len(text)} characters) after {answered:.1f} s",
            )
        )
    except (httpx.HTTPError, ValueError, KeyError, IndexError) as exc:
        out.append(
            Finding(
                "endpoint",
                "problem",
                f"the built-in endpoint started at {sim.url} but did not answer: "
                f"{type(exc).__name__}: {exc}",
                "if a proxy is set, add 127.0.0.1 to NO_PROXY; otherwise run 'splitdesk sim' "
                "and report its output",
            )
        )
    finally:
        sim.stop()
    engine = EngineProcess()
    t0 = time.perf_counter()
    try:
        engine.start(timeout=30.0)
        out.append(
            Finding("engine", "ok", f"engine process started in {time.perf_counter() - t0:.1f} s")
        )
    except (RuntimeError, OSError) as exc:
        out.append(
            Finding(
                "engine",
                "problem",
                f"the engine process did not start: {exc}",
                "reinstall splitdesk; the window needs this process to measure runs",
            )
        )
    finally:
        engine.stop()
    return out


# -- the command -------------------------------------------------------------------------------


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
