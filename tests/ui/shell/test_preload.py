"""The window's start imports what does not use Qt before PySide6 (``splitdesk.preload``),
so PySide6 does not read those modules' source (issue 25's cold start). A fresh
interpreter, as the app starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys

ORDER = """
import json, sys
import splitdesk.app
order = list(sys.modules)
feature = sys.modules["shibokensupport.feature"].pyside_feature_dict
print(json.dumps({"order": order, "read": sorted(feature)}))
"""


def test_numpy_pydantic_httpx_and_core_come_before_pyside6() -> None:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    out = subprocess.run(
        [sys.executable, "-c", ORDER], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    order: list[str] = seen["order"]
    qt = order.index("PySide6")
    for name in ("splitdesk.preload", "numpy", "pydantic", "httpx", "splitdesk.core.run.plans"):
        assert order.index(name) < qt, f"{name} was imported after PySide6"
    read = set(seen["read"])
    # their internals are never named after PySide6, so PySide6 reads none of them
    inner = [m for m in read if m.startswith(("numpy._core", "pydantic_core", "httpcore", "anyio"))]
    assert inner == [], inner
