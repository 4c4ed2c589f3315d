"""``splitdesk doctor``'s checks of the user's environment: the keyring, proxy and CA
variables, and the folders splitdesk writes."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from splitdesk.doctor.finding import Finding


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

    from splitdesk.core.measure.secrets import SERVICE, keyring_get, keyring_set

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


def _redacted(url: str) -> str:
    """A proxy URL without its user name and password."""
    from splitdesk.core.measure.netenv import shown_proxy

    return shown_proxy(url, keep_user=False)  # never raises, whatever the variable holds


#: Where the built-in endpoint listens; a proxy the environment sets for it breaks runs.
LOOPBACK_URL = "http://127.0.0.1:8000/v1"


def _split_fix(message: str) -> tuple[str, str | None]:
    """``core.netenv``'s sentences end in "— what to do": (what is wrong, the fix)."""
    what, sep, fix = message.partition(" — ")
    return (what, fix) if sep else (message, None)


def check_network_env() -> list[Finding]:
    """Proxy and CA variables, judged by :mod:`splitdesk.core.measure.netenv` (the same rules a
    run applies; ``NO_PROXY`` as :mod:`splitdesk.core.measure.no_proxy` reads it)."""
    from urllib.request import getproxies

    from splitdesk.core.measure.netenv import (
        environment_proxies,
        proxy_for,
        proxy_problem,
        tls_problem,
    )

    out: list[Finding] = []
    proxies = {k: v for k, v in getproxies().items() if k in ("http", "https", "all", "no")}
    used = {k: v for k, v in proxies.items() if k != "no"}
    if not used:
        out.append(Finding("proxy", "ok", "no proxy variables set"))
    else:
        shown = ", ".join(f"{k.upper()}_PROXY={_redacted(v)}" for k, v in used.items())
        out.append(Finding("proxy", "ok", shown + f"; NO_PROXY={proxies.get('no', '')!r}"))
        for key, value in used.items():
            url = value if "://" in value else f"http://{value}"
            problem = proxy_problem(url, f"{key.upper()}_PROXY")
            if problem:
                what, fix = _split_fix(problem)
                out.append(Finding("proxy", "problem", _redacted_text(what, value), fix))
        unreadable = environment_proxies()[1].unreadable
        if unreadable:
            out.append(
                Finding(
                    "proxy",
                    "note",
                    f"NO_PROXY entries no form reads are ignored: {', '.join(unreadable)}",
                    "write each as a host name (.example.com), an IP address or a CIDR range "
                    "(10.0.0.0/8, fd00::/8), optionally with :port",
                )
            )
        through = proxy_for(LOOPBACK_URL)
        if through is not None:
            out.append(
                Finding(
                    "proxy",
                    "problem",
                    f"{through[1]} also applies to 127.0.0.1: requests to the built-in "
                    "endpoint and to local servers go through the proxy",
                    "export NO_PROXY=127.0.0.1,localhost,::1 (keep its other entries)",
                )
            )
    problem = tls_problem()
    if problem:
        what, fix = _split_fix(problem)
        out.append(Finding("TLS", "problem", what, fix or "unset it or point it at CA files"))
    else:
        named = [
            f"{v}={os.environ[v]}" for v in ("SSL_CERT_FILE", "SSL_CERT_DIR") if os.environ.get(v)
        ]
        where = ", ".join(named) if named else "the system's (SSL_CERT_FILE/DIR not set)"
        out.append(Finding("TLS", "ok", f"CA certificates: {where}"))
    return out


def _redacted_text(text: str, proxy: str) -> str:
    """``text`` with ``proxy`` (and its password-only redaction) shown without credentials."""
    from splitdesk.core.measure.netenv import shown_proxy

    url = proxy if "://" in proxy else f"http://{proxy}"
    for shown in (shown_proxy(url), url, proxy):  # as core.netenv showed it, or as given
        text = text.replace(shown, _redacted(url))
    return text


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

    from splitdesk.core.files.recording import data_dir
    from splitdesk.core.files.settings import config_dir

    log_override = os.environ.get("SPLITDESK_LOG_DIR")
    folders = {
        "settings": (config_dir(), "SPLITDESK_CONFIG_DIR"),
        "logs": (
            Path(log_override) if log_override else platformdirs.user_log_path("splitdesk"),
            "SPLITDESK_LOG_DIR",
        ),
        "data": (data_dir(), "SPLITDESK_DATA_DIR"),  # where recordings are auto-saved
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


def check_ffmpeg() -> list[Finding]:
    """The ffmpeg that MP4 export runs (imageio-ffmpeg's own binary, else the system's; a
    bundle built without it relies on the system's)."""
    try:
        import imageio_ffmpeg

        exe = imageio_ffmpeg.get_ffmpeg_exe()
    except (ImportError, RuntimeError, OSError):
        return [
            Finding(
                "ffmpeg",
                "note",
                "no ffmpeg found: MP4 export is unavailable (GIF, PNG, SVG, CSV, JSON work)",
                "install ffmpeg (Debian/Ubuntu: apt install ffmpeg) or set IMAGEIO_FFMPEG_EXE "
                "to an ffmpeg binary",
            )
        ]
    return [Finding("ffmpeg", "ok", f"MP4 export uses {exe}")]
