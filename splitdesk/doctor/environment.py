"""``splitdesk doctor``'s checks of the user's environment: the keyring, proxy and CA
variables, and the folders splitdesk writes."""

from __future__ import annotations

import os
import threading
import urllib.parse
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
