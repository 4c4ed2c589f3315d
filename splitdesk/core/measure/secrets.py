"""API keys: from the OS keyring or an environment variable, never from files.

Every function here may block (the keyring talks to a D-Bus service): call them off the
GUI thread. Keys are never logged; errors name the keyring backend, not the key.
"""

from __future__ import annotations

import os

SERVICE = "splitdesk"


class KeyringError(RuntimeError):
    """No usable keyring backend; the message says why (for the user)."""


def _backend() -> object:
    """The keyring backend in use. Raises :class:`KeyringError` for the two that cannot
    keep a key: keyring's ``fail`` backend (no OS keyring found) and its ``null`` backend
    (chosen on purpose, e.g. ``PYTHON_KEYRING_BACKEND=keyring.backends.null.Keyring``:
    it accepts every key and forgets it)."""
    import keyring
    from keyring.backends import fail, null

    backend = keyring.get_keyring()
    if isinstance(backend, fail.Keyring) or "fail" in type(backend).__module__:
        raise KeyringError(
            "no OS keyring is available here (install and unlock a Secret Service such as "
            "GNOME Keyring or KWallet); the key will be kept for this session only"
        )
    if isinstance(backend, null.Keyring) or "null" in type(backend).__module__:
        raise KeyringError(
            "the keyring configured here (keyring's null backend, e.g. set by "
            "PYTHON_KEYRING_BACKEND) accepts keys and forgets them; the key will not be kept "
            "after you quit — it is kept for this session only"
        )
    return backend


def keyring_status() -> str | None:
    """``None`` when keys can be stored in the keyring, else the reason they cannot."""
    try:
        _backend()
    except KeyringError as exc:
        return str(exc)
    except Exception as exc:  # a broken backend must not break the app
        return f"the keyring failed ({type(exc).__name__}); the key is kept for this session only"
    return None


def keyring_get(account: str) -> str | None:
    """The key stored for ``account``, or ``None``. Raises :class:`KeyringError`."""
    import keyring

    _backend()
    try:
        return keyring.get_password(SERVICE, account)
    except Exception as exc:
        raise KeyringError(f"reading the keyring failed ({type(exc).__name__})") from None


def keyring_set(account: str, key: str) -> None:
    """Store ``key`` for ``account``. Raises :class:`KeyringError`."""
    import keyring

    _backend()
    try:
        keyring.set_password(SERVICE, account, key)
    except Exception as exc:
        raise KeyringError(f"writing to the keyring failed ({type(exc).__name__})") from None


def env_key(name: str) -> str | None:
    """The key in environment variable ``name`` (surrounding whitespace removed: a pasted
    newline would make an invalid header), or ``None`` when unset or empty."""
    return (os.environ.get(name) or "").strip() or None if name else None
