"""Disturbed runs: when a measurement says more about the machine than about the endpoint.

Two things can distort a run's wall time without the endpoint being slower, and both are
measured while the run goes:

* **endpoint slip** (``endpoint_slip_s``, the built-in endpoint only): how far its engine
  loop fell behind its own cost-model schedule during the run (``schedule_slip_s`` of
  ``GET /_splitdesk/info`` before and after, :func:`splitdesk.core.analyse.predict.
  schedule_slip_s`): CPU the endpoint did not get when a token step was due, which the
  measured makespan contains and no prediction does;
* **client lag** (``client_lag_s``): how late the measuring client's own event loop woke
  (the sum, over a :data:`~splitdesk.core.measure.loop_lag.PERIOD_S` ticker, of each wake's
  lateness beyond its tolerance, :mod:`splitdesk.core.measure.loop_lag`): a machine busy
  enough that the client built and sent requests late.

A run is **disturbed** when the endpoint's slip exceeds :data:`DISTURBED_SHARE` of its
wall time and :data:`DISTURBED_MIN_S` (shorter lateness is scheduling noise on any machine;
a third of the 10 % the tests allow between measurement and prediction), or the client's
lag exceeds :data:`CLIENT_LAG_SHARE` of it and :data:`CLIENT_LAG_MIN_S`: the client stamps
arrivals with the kernel's receive times (:mod:`splitdesk.core.measure.arrivals`), so its
own lateness only delays what it sends and it takes more of it to distort a run (measured
beside a local llama-server and three other test runs on 2 cores: 5–8 % of the wall time
with every figure in line with quieter runs). Bench and sweep measure a
disturbed run once more and keep the clean one; a run still disturbed is flagged and left
out of the medians, with the reason (:func:`disturbed_reason`), in the table, the JSON and
the plots.
"""

from __future__ import annotations

#: lateness above this share of a run's wall time disturbs it …
DISTURBED_SHARE = 0.03
#: … when it is also longer than this (seconds)
DISTURBED_MIN_S = 0.02
#: the client's own lag above this share of a run's wall time disturbs it …
CLIENT_LAG_SHARE = 0.10
#: … when it is also longer than this (seconds)
CLIENT_LAG_MIN_S = 0.1


def _late(
    lateness_s: float | None,
    wall_s: float | None,
    share: float = DISTURBED_SHARE,
    least_s: float = DISTURBED_MIN_S,
) -> bool:
    if lateness_s is None or wall_s is None:
        return False
    return lateness_s > max(share * wall_s, least_s)


def disturbed_reason(
    wall_s: float | None, endpoint_slip_s: float | None, client_lag_s: float | None = None
) -> str | None:
    """Why a run of ``wall_s`` seconds is disturbed, or ``None`` when it is not (module
    docstring): "the built-in endpoint ran 9.46 s behind its schedule in 12.3 s" or "the
    machine was busy: the measuring client ran 0.31 s late in 4.20 s". Seconds in; a
    missing figure counts as undisturbed."""
    if _late(endpoint_slip_s, wall_s):
        assert endpoint_slip_s is not None and wall_s is not None
        return (
            f"the built-in endpoint ran {_s(endpoint_slip_s)} behind its schedule in {wall_s:.2f} s"
        )
    if _late(client_lag_s, wall_s, CLIENT_LAG_SHARE, CLIENT_LAG_MIN_S):
        assert client_lag_s is not None and wall_s is not None
        return (
            f"the machine was busy: the measuring client ran {_s(client_lag_s)} late in "
            f"{wall_s:.2f} s"
        )
    return None


def _s(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"
