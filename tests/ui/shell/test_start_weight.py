"""What the window's cold start leaves for later (issue 25): the modules only an export
needs are not imported to show the window, and the tokens chart (hidden by default) builds
its plot the first time it is shown, then draws the run on show."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest
from ui.conftest import wait_signal

from splitdesk.core.analyse.token_curves import token_curve
from splitdesk.core.files.settings import AppSettings
from splitdesk.core.run.endpoints import EndpointSettings

#: Modules only an export uses (GIF frames, SVG and image exporters).
EXPORT_ONLY = ("PIL", "pyqtgraph.exporters", "imageio_ffmpeg")


def imported_after(entry: str, modules: tuple[str, ...], config: Any, check: str = "") -> list[str]:
    """Which of ``modules`` a fresh interpreter holds after ``import entry`` (and the
    statements ``check``), its settings in ``config``."""
    code = (
        "import json, sys\n"
        f"import {entry}\n"
        f"{check}"
        f"print(json.dumps([m for m in {modules!r} if sys.modules.get(m) is not None]))\n"
    )
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", SPLITDESK_CONFIG_DIR=str(config))
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    found: list[str] = json.loads(out.stdout.strip().splitlines()[-1])
    return found


def test_starting_the_window_imports_no_export_only_module(tmp_path: Any) -> None:
    assert imported_after("splitdesk.app", EXPORT_ONLY, tmp_path) == []


#: httpx's command-line client and what it imports where installed (rich and pygments
#: come with the test tools here): ~170 ms of a start, never used by splitdesk.
HTTPX_CLI = ("httpx._main", "click", "rich", "pygments")


@pytest.mark.parametrize("entry", ["splitdesk.app", "splitdesk.core.measure.engine_worker"])
def test_no_process_imports_the_httpx_command_line_client(tmp_path: Any, entry: str) -> None:
    """The window and the engine process import httpx, not its command-line client; httpx
    keeps its clients and its stub `main`."""
    check = "import httpx\nassert httpx.Client and httpx.AsyncClient and callable(httpx.main)\n"
    assert imported_after(entry, HTTPX_CLI, tmp_path, check) == []


@pytest.mark.asyncio
async def test_the_hidden_tokens_chart_builds_its_plot_when_first_shown(
    make_window: Any,
) -> None:
    window = make_window(AppSettings(endpoint=EndpointSettings(speed=20.0)))
    chart = window.stage.chart
    assert chart.isHidden() and chart.plot is None and chart.curves == {}
    window.run_button.click()
    (state,) = await wait_signal(window.runFinished, 60, "the default run ended")
    assert chart.plot is None  # hidden all run long: nothing built, nothing drawn
    window.stage.show_chart(True)
    assert chart.plot is not None
    for group in ("combined", "parallel"):  # drawn at once, the run's whole curves
        xs, ys = chart.curves[group].getData()
        expected = token_curve(state.group(group))
        assert len(expected) > 1 and list(zip(xs, ys, strict=True)) == expected
