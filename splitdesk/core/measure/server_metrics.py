"""The server's own view: its Prometheus ``/metrics`` read as running / waiting / KV use.

LLM servers publish Prometheus text at ``/metrics``; each family names the same three
things differently. Which name means what is data, ``resources/server_metrics.toml``
(:func:`families`), checked against each project's source (its ``source`` field). Parsing
uses the Prometheus client library's text-format parser
(``prometheus_client.parser.text_string_to_metric_families``), never a hand-written one.

A server with several engines or label sets (vLLM's ``engine="0"``/``"1"``, one series per
model) publishes one sample per series; :func:`read_load` adds the running and waiting
counts over them and takes the largest KV use.

Polling (:class:`MetricsPoller`) runs on its own thread with its own HTTP client, off the
engine's measuring loop, at a modest rate (4 Hz by default); samples carry the monotonic
``time.perf_counter_ns`` clock every run event uses, so a view places them on a run's axis
with ``(t_ns - t0_ns) / 1e9`` (:func:`load_series`).

A run's samples are kept in its recording as :class:`ServerSeriesRecord` (columns of
numbers and the family id, never the URL; :func:`series_record` / :func:`series_of`), so a
replay draws the lane and the Chrome trace carries them as counters.
"""

from __future__ import annotations

import threading
import time
import tomllib
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from importlib.resources import files
from typing import Literal
from urllib.parse import urlsplit

import httpx
from prometheus_client.parser import text_string_to_metric_families
from pydantic import BaseModel, ConfigDict, Field, model_validator

from splitdesk.core.measure import responses
from splitdesk.core.measure.netenv import NetworkSetupError, client_settings


class MetricsFamily(BaseModel):
    """One server family's names (``resources/server_metrics.toml``): the first name of each
    list present in a scrape is used."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    label: str
    running: list[str] = Field(min_length=1)
    waiting: list[str] = Field(min_length=1)
    kv_usage: list[str] = Field(default_factory=list)
    kv_unit: Literal["fraction", "tokens"] = "fraction"
    #: prefix-cache counters (tokens, cumulative): looked up, found, and not found (a
    #: family that counts computed and cached tokens apart: queries = hits + misses)
    cache_queries: list[str] = Field(default_factory=list)
    cache_hits: list[str] = Field(default_factory=list)
    cache_misses: list[str] = Field(default_factory=list)
    #: a prefix-cache hit-rate gauge (0–1) the server computes itself
    cache_hit_rate: list[str] = Field(default_factory=list)
    source: str


class _MappingFile(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    family: list[MetricsFamily]


@cache
def families() -> tuple[MetricsFamily, ...]:
    """The families of ``resources/server_metrics.toml``, in file order. Raises
    ``ValueError`` (``pydantic.ValidationError``) when the shipped file is malformed."""
    text = files("splitdesk.resources").joinpath("server_metrics.toml").read_text("utf-8")
    return tuple(_MappingFile.model_validate(tomllib.loads(text)).family)


@dataclass(frozen=True)
class ServerLoad:
    """One scrape read through a family's names.

    ``running``: requests in the batch (summed over series); ``waiting``: queued requests;
    ``kv_usage``: KV-cache use in ``kv_unit`` (a 0–1 fraction or tokens), ``None`` when the
    family or this build publishes none.
    """

    family: str
    running: float
    waiting: float
    kv_usage: float | None
    kv_unit: str
    cache: PrefixCacheReading | None = None


@dataclass(frozen=True)
class PrefixCacheReading:
    """A scrape's prefix-cache figures: cumulative ``queries`` and ``hits`` counters
    (tokens; vLLM's ``vllm:prefix_cache_queries`` / ``vllm:prefix_cache_hits``, llama.cpp's
    computed + cached prompt tokens), or a ``hit_rate`` gauge (0–1, SGLang's
    ``sglang:cache_hit_rate``); ``None`` where the server publishes none."""

    queries: float | None = None
    hits: float | None = None
    hit_rate: float | None = None


def read_prefix_cache(
    values: dict[str, list[float]], fam: MetricsFamily
) -> PrefixCacheReading | None:
    """The :class:`PrefixCacheReading` of one scrape's samples through ``fam``'s names
    (counters summed over series, the gauge's largest value), ``None`` when the family or
    this build publishes none."""

    def total(names: list[str]) -> float | None:
        for name in names:
            if name in values:
                return sum(values[name])
        return None

    hits = total(fam.cache_hits)
    queries = total(fam.cache_queries)
    misses = total(fam.cache_misses)
    if queries is None and hits is not None and misses is not None:
        queries = hits + misses
    rate = next((max(values[n]) for n in fam.cache_hit_rate if n in values), None)
    if rate is not None and not 0.0 <= rate <= 1.0:
        rate = None  # vLLM v0 publishes -1 while prefix caching is off: no figure
    if (queries is None or hits is None) and rate is None:
        return None
    return PrefixCacheReading(
        queries if hits is not None else None, hits if queries is not None else None, rate
    )


def _samples(text: str) -> dict[str, list[float]]:
    """Every sample value by sample name. Raises ``ValueError`` for text that is not the
    Prometheus text format (the parser's own error)."""
    out: dict[str, list[float]] = {}
    if looks_like_html(text):
        raise ValueError("an HTML page, not Prometheus text (a proxy's or another server's)")
    try:
        for fam in text_string_to_metric_families(text):
            for sample in fam.samples:
                out.setdefault(sample.name, []).append(float(sample.value))
    except ValueError:
        # the parser's own message quotes the offending line: never a body in a status line
        raise ValueError("not Prometheus text format") from None
    return out


def looks_like_html(text: str) -> bool:
    """Whether a body is an HTML page (``<!DOCTYPE``, ``<html``, any tag first): what a
    proxy or a web UI answers on ``/metrics`` instead of Prometheus text."""
    head = text.lstrip()[:64].lower()
    return head.startswith("<")


def read_load(text: str) -> ServerLoad | None:
    """The :class:`ServerLoad` of one ``/metrics`` body, or ``None`` when no known family's
    running/waiting names appear in it. Raises ``ValueError`` when ``text`` is not the
    Prometheus text format."""
    values = _samples(text)

    def first(names: list[str]) -> list[float] | None:
        for name in names:
            if name in values:
                return values[name]
        return None

    for fam in families():
        running, waiting = first(fam.running), first(fam.waiting)
        if running is None and waiting is None:
            continue
        kv = first(fam.kv_usage)
        return ServerLoad(
            fam.id,
            sum(running or [0.0]),
            sum(waiting or [0.0]),
            max(kv) if kv else None,
            fam.kv_unit,
            read_prefix_cache(values, fam),
        )
    return None


def metrics_url(base_url: str) -> str:
    """Where a server with API base URL ``base_url`` serves ``/metrics``: its root
    (scheme, host, port) + ``/metrics`` — vLLM, SGLang, TGI, llama.cpp and the built-in
    endpoint all serve it there. Raises ``ValueError`` for a URL without scheme or host."""
    parts = urlsplit(base_url)
    if not parts.scheme or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {base_url!r}")
    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}/metrics"


@dataclass(frozen=True)
class LoadSample:
    """A :class:`ServerLoad` and when its answer arrived (``time.perf_counter_ns``)."""

    t_ns: int
    load: ServerLoad


class MetricsPoller:
    """Polls ``url`` every ``1 / rate_hz`` seconds on its own thread until :meth:`stop`.

    ``samples`` grows as answers arrive (read it from any thread: appends are atomic);
    ``on_sample`` (optional) is called on the poller's thread with each one. ``status`` says
    what the last attempt found: ``"ok"``, ``"no metrics"`` (the server answered, but not
    with a known family's names), or a one-line error (not reachable, HTTP status). The
    poller never raises; it stops by itself after ``give_up`` failed attempts in a row
    (a server without ``/metrics`` is not polled for the whole run).
    """

    def __init__(
        self,
        url: str,
        rate_hz: float = 4.0,
        verify: bool | str = True,
        on_sample: Callable[[LoadSample], None] | None = None,
        give_up: int = 8,
    ) -> None:
        if not 0 < rate_hz <= 20:
            raise ValueError("rate_hz must be in (0, 20]")
        self.url = url
        self.period_s = 1.0 / rate_hz
        self.verify = verify
        self.on_sample = on_sample
        self.give_up = give_up
        self.samples: list[LoadSample] = []
        self.status = "not started"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="metrics-poller", daemon=True)

    def start(self) -> MetricsPoller:
        """Start polling; returns ``self``."""
        self._thread.start()
        return self

    def stop(self, timeout: float = 2.0) -> None:
        """Stop and wait up to ``timeout`` seconds for the thread to end."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    @property
    def running(self) -> bool:
        """True while the thread polls."""
        return self._thread.is_alive()

    @property
    def started(self) -> bool:
        """True once :meth:`start` ran (the server was asked, or is being asked)."""
        return self._thread.ident is not None

    def _run(self) -> None:
        try:
            net = client_settings(self.url, self.verify)
        except NetworkSetupError as exc:
            self.status = str(exc)
            return
        failures = 0
        with httpx.Client(
            timeout=max(self.period_s, 1.0),
            verify=net.verify,
            trust_env=net.trust_env,
            proxy=net.proxy,
        ) as client:
            next_t = time.monotonic()
            while not self._stop.is_set():
                ok = self._poll_once(client)
                failures = 0 if ok else failures + 1
                if failures >= self.give_up:
                    return
                next_t += self.period_s
                self._stop.wait(max(0.0, next_t - time.monotonic()))

    def _poll_once(self, client: httpx.Client) -> bool:
        try:
            response = client.get(self.url)
            t_ns = time.perf_counter_ns()
            responses.unbind(response)  # read and closed: freed now, not by a collection
            if response.status_code != 200:
                self.status = f"/metrics answered HTTP {response.status_code}"
                return False
            kind = response.headers.get("content-type", "")
            if "text/html" in kind:
                self.status = "/metrics answered with an HTML page, not Prometheus text"
                return False
            load = read_load(response.text)
        except httpx.HTTPError as exc:
            self.status = f"/metrics not reachable ({type(exc).__name__})"
            return False
        except ValueError as exc:  # read_load's own words, never the body
            self.status = f"/metrics answered {exc}"
            return False
        if load is None:
            self.status = "no metrics"
            return False
        self.status = "ok"
        sample = LoadSample(t_ns, load)
        self.samples.append(sample)
        if self.on_sample is not None:
            self.on_sample(sample)
        return True


def samples_between(
    samples: list[LoadSample], t0_ns: int, start_s: float, end_s: float
) -> list[LoadSample]:
    """The samples taken from ``start_s`` to ``end_s`` seconds after ``t0_ns``."""
    lo, hi = t0_ns + int(start_s * 1e9), t0_ns + int(end_s * 1e9)
    return [s for s in samples if lo <= s.t_ns <= hi]


@dataclass(frozen=True)
class LoadSeries:
    """What the server lane draws: per sample, seconds since the run's origin, the server's
    running (batch size) and waiting (queue) counts and its KV-cache use, in time order.

    ``kv``: one value per sample in ``kv_unit`` (``"fraction"`` 0–1 or ``"tokens"``),
    ``None`` where the scrape had no KV figure; an empty list when the source has no KV
    column at all. ``family``: the server family the samples were read as (``""`` when
    there are none).
    """

    t_s: list[float]
    running: list[float]
    waiting: list[float]
    kv: list[float | None] = field(default_factory=list)
    kv_unit: str = "fraction"
    family: str = ""
    #: the prefix-cache hit rate (0–1) per sample (:func:`cache_hit_rates`), ``None`` where
    #: not known yet; an empty list when the server publishes no prefix-cache figure
    cache_hit_rate: list[float | None] = field(default_factory=list)

    @property
    def has_cache(self) -> bool:
        """Whether any sample has a prefix-cache hit rate."""
        return any(v is not None for v in self.cache_hit_rate)

    @property
    def last_cache_hit_rate(self) -> float | None:
        """The latest known hit rate (the run's so far, from counters), ``None`` without."""
        return next((v for v in reversed(self.cache_hit_rate) if v is not None), None)

    @property
    def peak_running(self) -> float:
        """The largest batch sampled (0 before any sample)."""
        return max(self.running, default=0.0)

    @property
    def peak(self) -> float:
        """The largest count of either kind sampled (the lane's y range)."""
        return max(self.peak_running, max(self.waiting, default=0.0))

    @property
    def has_kv(self) -> bool:
        """Whether any sample has a KV-cache figure (a server that publishes none: False,
        and the lane says nothing about KV)."""
        return any(v is not None for v in self.kv)

    @property
    def peak_kv(self) -> float | None:
        """The largest KV-cache use sampled, in ``kv_unit``; ``None`` without any."""
        values = [v for v in self.kv if v is not None]
        return max(values) if values else None

    def at(self, start_s: float, end_s: float) -> list[float]:
        """The batch sizes sampled from ``start_s`` to ``end_s``."""
        return [r for t, r in zip(self.t_s, self.running, strict=True) if start_s <= t <= end_s]

    def until(self, t_s: float) -> LoadSeries:
        """The samples taken up to ``t_s`` seconds (a replay's playback position)."""
        n = bisect_right(self.t_s, t_s)
        return LoadSeries(
            self.t_s[:n],
            self.running[:n],
            self.waiting[:n],
            self.kv[:n],
            self.kv_unit,
            self.family,
            self.cache_hit_rate[:n],
        )


def cache_hit_rates(readings: list[PrefixCacheReading | None]) -> list[float | None]:
    """The prefix-cache hit rate at each of a run's samples, in time order: from counters,
    the tokens found over the tokens looked up *since the run's first sample* (so an
    earlier run's lookups do not count; ``None`` until a lookup happened in the run); from
    a gauge, its value. An empty list when no sample has a reading."""
    if not any(r is not None for r in readings):
        return []
    base: tuple[float, float] | None = None
    out: list[float | None] = []
    for r in readings:
        if r is None:
            out.append(None)
            continue
        if r.queries is not None and r.hits is not None:
            if base is None:
                base = (r.queries, r.hits)
            dq, dh = r.queries - base[0], r.hits - base[1]
            out.append(min(1.0, max(0.0, dh / dq)) if dq > 0 else None)
        else:
            out.append(r.hit_rate)
    return out


def load_series(samples: list[LoadSample], t0_ns: int) -> LoadSeries:
    """The :class:`LoadSeries` of ``samples`` on a run's axis (origin ``t0_ns``); samples
    taken before the origin are left out, except that the last of them, when there is one,
    is the baseline of the prefix-cache hit rate (:func:`cache_hit_rates`: the counters as
    the run began, so its first requests' lookups count too)."""
    ordered = sorted(samples, key=lambda s: s.t_ns)
    kept = [s for s in ordered if s.t_ns >= t0_ns]
    before = [s for s in ordered if s.t_ns < t0_ns][-1:]  # the counters as the run began
    last = kept[-1].load if kept else None
    return LoadSeries(
        [(s.t_ns - t0_ns) / 1e9 for s in kept],
        [s.load.running for s in kept],
        [s.load.waiting for s in kept],
        [s.load.kv_usage for s in kept],
        last.kv_unit if last else "fraction",
        last.family if last else "",
        cache_hit_rates([s.load.cache for s in before + kept])[len(before) :],
    )


class ServerSeriesRecord(BaseModel):
    """A run's server-lane samples as a recording keeps them (``RunRecord.server``),
    column by column: ``t_s`` seconds since the run's origin (ascending), ``running`` and
    ``waiting`` request counts, ``kv`` the KV-cache use in ``kv_unit`` per sample (``None``
    where a scrape had none) or ``None`` for the whole run when the server published no
    KV figure. ``family``: the ``id`` of ``resources/server_metrics.toml`` the samples were
    read as. Only numbers and the family id: never the URL polled. Raises
    ``pydantic.ValidationError`` for columns of different lengths or non-finite values."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    family: str
    kv_unit: Literal["fraction", "tokens"] = "fraction"
    t_s: list[float]
    running: list[float]
    waiting: list[float]
    kv: list[float | None] | None = None
    #: the prefix-cache hit rate per sample (0–1, ``None`` where unknown), or ``None`` for
    #: the whole run when the server published no prefix-cache figure
    cache_hit_rate: list[float | None] | None = None

    @model_validator(mode="after")
    def _same_lengths(self) -> ServerSeriesRecord:
        n = len(self.t_s)
        if len(self.running) != n or len(self.waiting) != n:
            raise ValueError("t_s, running and waiting must have one value per sample")
        if self.kv is not None and len(self.kv) != n:
            raise ValueError("kv must have one value per sample")
        if self.cache_hit_rate is not None and len(self.cache_hit_rate) != n:
            raise ValueError("cache_hit_rate must have one value per sample")
        return self


def series_record(series: LoadSeries) -> ServerSeriesRecord | None:
    """The :class:`ServerSeriesRecord` of ``series`` (times rounded to the microsecond),
    or ``None`` when it has no sample."""
    if not series.t_s:
        return None
    unit: Literal["fraction", "tokens"] = "tokens" if series.kv_unit == "tokens" else "fraction"
    return ServerSeriesRecord(
        family=series.family,
        kv_unit=unit,
        t_s=[round(t, 6) for t in series.t_s],
        running=list(series.running),
        waiting=list(series.waiting),
        kv=list(series.kv) if series.has_kv else None,
        cache_hit_rate=list(series.cache_hit_rate) if series.has_cache else None,
    )


def series_of(record: ServerSeriesRecord | None) -> LoadSeries | None:
    """The :class:`LoadSeries` a recording's samples draw (``None`` for ``None``: an older
    recording, or a run whose server published no metrics)."""
    if record is None:
        return None
    kv: list[float | None] = list(record.kv) if record.kv is not None else []
    rates = list(record.cache_hit_rate) if record.cache_hit_rate is not None else []
    return LoadSeries(
        list(record.t_s),
        list(record.running),
        list(record.waiting),
        kv,
        record.kv_unit,
        record.family,
        rates,
    )
