"""``splitdesk doctor``'s live check: the built-in endpoint starts and answers over
loopback HTTP, and the engine process starts."""

from __future__ import annotations

import time

from splitdesk.childproc import import_failure_fix
from splitdesk.doctor.finding import Finding


def check_endpoint() -> list[Finding]:
    """Start the built-in endpoint, ask it one chat completion over loopback (with the
    environment's proxy settings, as a run does), and start the engine process (each
    checked whatever the other's result)."""
    return _check_builtin_endpoint() + _check_engine()


def _check_builtin_endpoint() -> list[Finding]:
    import httpx

    from splitdesk.core.measure.netenv import client_settings
    from splitdesk.sim.launcher import SimStartError, start_sim

    out: list[Finding] = []
    t0 = time.perf_counter()
    try:
        sim = start_sim(timeout=30.0)
    except (SimStartError, OSError) as exc:
        cause = getattr(exc, "cause", "")
        fix = import_failure_fix(cause)
        if fix is None:
            fix = (
                "run 'splitdesk sim' to see its own error"
                if "exited with status" in str(exc)
                else "run 'splitdesk sim' to see whether it starts; a firewall must allow 127.0.0.1"
            )
        return [Finding("endpoint", "problem", f"the built-in endpoint did not start: {exc}", fix)]
    started = time.perf_counter() - t0
    try:
        net = client_settings(sim.url)  # the environment's proxy rules, as a run applies them
        with httpx.Client(
            timeout=15.0, verify=net.verify, trust_env=net.trust_env, proxy=net.proxy
        ) as client:
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
    return out


def _check_engine() -> list[Finding]:
    from splitdesk.core.measure.engine import EngineProcess

    out: list[Finding] = []
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
                f"{exc}",
                import_failure_fix(getattr(exc, "cause", ""))
                or "reinstall splitdesk; the window needs this process to measure runs",
            )
        )
    finally:
        engine.stop()
    return out
