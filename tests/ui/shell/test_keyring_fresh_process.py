"""The keyring in a fresh process (keyring picks its backend once per process): with the
null backend the Endpoint panel says the key will not be kept; with no backend at all, a
run that needs a key from the keyring says so before sending anything."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

PROBE = Path(__file__).with_name("keyring_probe.py")


def probe(backend: str, action: str, tmp_path: Path) -> dict[str, object]:
    env = dict(
        os.environ,
        QT_QPA_PLATFORM="offscreen",
        PYTHON_KEYRING_BACKEND=backend,
        SPLITDESK_CONFIG_DIR=str(tmp_path / "config"),
    )
    proc = subprocess.run(
        [sys.executable, str(PROBE), action],
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def test_the_null_backend_is_named_and_the_key_kept_for_this_session(tmp_path: Path) -> None:
    seen = probe("keyring.backends.null.Keyring", "store", tmp_path)
    problem = str(seen["keyring_problem"])
    assert "null backend" in problem and "accepts keys and forgets them" in problem
    note = str(seen["key_note"])
    assert "will not be kept after you quit" in note and "this session only" in note
    assert seen["key_for_this_session"] is True  # usable now, said to be forgotten later


def test_no_backend_makes_a_run_say_so_before_sending(tmp_path: Path) -> None:
    seen = probe("keyring.backends.fail.Keyring", "run", tmp_path)
    assert "no OS keyring is available here" in str(seen["keyring_problem"])
    outcomes, errors = seen["outcomes"], seen["errors"]
    assert isinstance(outcomes, list) and outcomes and set(outcomes) == {"failed"}
    assert isinstance(errors, list)
    for message in errors:
        assert "this endpoint's key comes from the OS keyring, but no OS keyring" in message
    assert "no OS keyring" in str(seen["status"])
    assert seen["connections"] == 0  # not one request left
