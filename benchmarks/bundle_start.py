"""Cold start of the frozen bundle to its window, and its size on disk.

Starts a private Xvfb, launches ``dist/splitdesk/splitdesk`` on it (the real xcb platform
plugin, as on a desktop) and measures the time from launching the process to the main
window being mapped on the X server (``xwininfo`` reports ``Map State: IsViewable``,
polled every 10 ms). Each launch gets fresh settings/log folders; the window is then
closed with SIGTERM (the app's clean shutdown). The first launch after a build is the
coldest this can get without dropping the machine's page cache (not done: the machine is
shared). For comparison, the same for the checkout's ``.venv/bin/splitdesk``.

Goals: cold start to window ≤ 1.5 s; bundle ≤ 250 MB unpacked.

    packaging/build.sh && .venv/bin/python benchmarks/bundle_start.py [--runs 5]

Needs Xvfb and xwininfo (Debian: xvfb x11-utils).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUNDLE = ROOT / "dist" / "splitdesk" / "splitdesk"
TITLE = "splitdesk — one combined request vs N parallel requests"


def start_xvfb() -> tuple[subprocess.Popen[bytes], str]:
    """A private Xvfb on the first free display from :73 up; returns it and its DISPLAY
    (other people's ``xvfb-run -a`` take the low numbers)."""
    for number in range(73, 200):
        if Path(f"/tmp/.X{number}-lock").exists() or Path(f"/tmp/.X11-unix/X{number}").exists():
            continue
        display = f":{number}"
        xvfb = subprocess.Popen(
            ["Xvfb", display, "-screen", "0", "1600x1000x24", "-nolisten", "tcp", "-noreset"],
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and xvfb.poll() is None:
            probe = ["xwininfo", "-display", display, "-root"]
            if subprocess.run(probe, capture_output=True, check=False).returncode == 0:
                return xvfb, display
            time.sleep(0.05)
        xvfb.kill()
        xvfb.wait(10)
    raise SystemExit(
        "Xvfb did not start on any display :73-:199 (is it installed? apt install xvfb)"
    )


def xvfb_gone(display: str) -> bool:
    return not Path(f"/tmp/.X11-unix/X{display[1:]}").exists()


def mapped(display: str) -> bool:
    out = subprocess.run(
        ["xwininfo", "-display", display, "-name", TITLE],
        capture_output=True,
        text=True,
        check=False,
    )
    return "IsViewable" in out.stdout


def cpu_s(pid: int) -> float:
    """User + system CPU seconds the process ``pid`` has used so far (``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def launch(program: Path, display: str, timeout: float = 60.0) -> tuple[float, float]:
    """(wall seconds from launching ``program`` to its window mapped on ``display``, CPU
    seconds the process used until then). The CPU figure barely moves with the machine's
    load; the wall figure does."""
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(
            os.environ,
            DISPLAY=display,
            QT_QPA_PLATFORM="xcb",
            SPLITDESK_CONFIG_DIR=f"{tmp}/config",
            SPLITDESK_LOG_DIR=f"{tmp}/log",
        )
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [str(program)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        try:
            while not mapped(display):
                if xvfb_gone(display):
                    raise SystemExit(f"the X server {display} went away")
                if proc.poll() is not None:
                    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
                    raise SystemExit(
                        f"{program} exited ({proc.returncode}) before its window: {err[-500:]}"
                    )
                if time.perf_counter() - t0 > timeout:
                    raise SystemExit(f"{program}: no window mapped within {timeout:g} s")
                time.sleep(0.01)
            return time.perf_counter() - t0, cpu_s(proc.pid)
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
            if proc.stderr is not None:
                proc.stderr.close()


def size_mb(folder: Path) -> float:
    return (
        sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink()) / 1e6
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="launches after the first (default 5)")
    args = parser.parse_args()
    if not BUNDLE.is_file():
        print("no bundle: run packaging/build.sh first", file=sys.stderr)
        return 1
    for tool in ("Xvfb", "xwininfo"):
        if not shutil.which(tool):
            print(f"{tool} is missing (Debian: apt install xvfb x11-utils)", file=sys.stderr)
            return 1
    print(f"bundle: {size_mb(BUNDLE.parent):.0f} MB unpacked in {BUNDLE.parent} (goal <= 250 MB)")
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    xvfb, display = start_xvfb()
    try:
        for label, program in (
            ("bundle", BUNDLE),
            ("venv  ", ROOT / ".venv" / "bin" / "splitdesk"),
        ):
            first, first_cpu = launch(program, display)
            runs = [launch(program, display) for _ in range(args.runs)]
            rest = [wall for wall, _cpu in runs]
            cpu = [c for _wall, c in runs]
            print(
                f"{label} start to window: first {first:.2f} s ({first_cpu:.2f} s CPU), then "
                f"median {statistics.median(rest):.2f} s (min {min(rest):.2f}, max {max(rest):.2f}, "
                f"n={len(rest)}; CPU median {statistics.median(cpu):.2f} s) (goal <= 1.5 s)"
            )
    finally:
        xvfb.terminate()
        xvfb.wait(10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
