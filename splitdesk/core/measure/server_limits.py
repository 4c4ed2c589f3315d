"""The server's configured concurrency limit, where it publishes one.

A slot-limited server (:mod:`splitdesk.core.analyse.slots`) runs at most *k* sequences at
once. Some servers say what they were configured with: llama.cpp's ``GET /props``
(``total_slots``) and ``GET /slots``, TGI's ``GET /info`` (``max_batch_size``), SGLang's
``GET /get_server_info`` (``max_running_requests``), the built-in endpoint's ``/metrics``
(``splitdesk:max_num_seqs``). Which route and key is data, ``resources/server_limits.toml``
(:func:`limit_sources`), each entry naming the source it was checked against. Bodies are
read with the standard parsers (``json``, prometheus_client's text parser).

:func:`probe_limit` asks each source in order on the server's root with one short-lived
client and returns the first positive whole number as a :class:`ServerLimit`; it never
raises (a server without any of these routes has no published limit, ``None``).
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import Any, Literal

import httpx
from prometheus_client.parser import text_string_to_metric_families
from pydantic import BaseModel, ConfigDict, model_validator

from splitdesk.core.measure.netenv import NetworkSetupError, client_settings
from splitdesk.core.measure.server_metrics import metrics_url


class LimitSource(BaseModel):
    """One place a family publishes its limit (``resources/server_limits.toml``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    family: str
    label: str
    path: str
    kind: Literal["json-key", "json-list", "prometheus"]
    key: str = ""
    names: str
    source: str

    @model_validator(mode="after")
    def _key_when_needed(self) -> LimitSource:
        if self.kind != "json-list" and not self.key:
            raise ValueError(f"{self.path}: kind {self.kind} needs a key")
        if not self.path.startswith("/"):
            raise ValueError(f"{self.path}: a path starts with /")
        return self


class _LimitFile(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    limit: list[LimitSource]


@cache
def limit_sources() -> tuple[LimitSource, ...]:
    """The sources of ``resources/server_limits.toml`` in file order. Raises
    ``ValueError`` (``pydantic.ValidationError``) when the shipped file is malformed."""
    text = files("splitdesk.resources").joinpath("server_limits.toml").read_text("utf-8")
    return tuple(_LimitFile.model_validate(tomllib.loads(text)).limit)


@dataclass(frozen=True)
class ServerLimit:
    """A configured limit the server published: ``slots`` sequences at once, read from
    ``source`` (its :class:`LimitSource`)."""

    slots: int
    source: LimitSource

    @property
    def where(self) -> str:
        """Where it was read, for a sentence: "llama.cpp server /props total_slots"."""
        key = f" {self.source.key}" if self.source.key else ""
        return f"{self.source.label} {self.source.path}{key}"

    def to_json(self) -> dict[str, Any]:
        """``{"slots", "family", "route", "key", "names"}`` (bench and sweep JSON)."""
        return {
            "slots": self.slots,
            "family": self.source.family,
            "route": self.source.path,
            "key": self.source.key or None,
            "names": self.source.names,
        }


def _whole(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if value != int(value) or value < 1:
        return None
    return int(value)


def read_limit(source: LimitSource, body: str) -> int | None:
    """The limit ``body`` (one answer of ``source.path``) holds per ``source.kind``, or
    ``None`` when it holds none (another server's page, null, not a whole number ≥ 1).
    Never raises."""
    if source.kind == "prometheus":
        try:
            for fam in text_string_to_metric_families(body):
                for sample in fam.samples:
                    if sample.name == source.key:
                        return _whole(float(sample.value))
        except ValueError:
            return None
        return None
    try:
        data = json.loads(body)
    except ValueError:
        return None
    if source.kind == "json-list":
        if isinstance(data, list) and data and all(isinstance(x, dict) for x in data):
            return len(data)
        return None
    for part in source.key.split("."):
        if not isinstance(data, dict):
            return None
        data = data.get(part)
    return _whole(data)


def server_root(base_url: str) -> str:
    """The server's root for an API base URL (scheme, host, port). Raises ``ValueError``
    for a URL without scheme or host."""
    return metrics_url(base_url).removesuffix("/metrics")


async def probe_limit(
    base_url: str, verify: bool | str = True, timeout_s: float = 2.0
) -> ServerLimit | None:
    """The first limit a source of :func:`limit_sources` answers on ``base_url``'s server,
    or ``None``. Each route gets one GET with ``timeout_s``; errors, other statuses and
    bodies without the figure count as no answer. Never raises. Ask it after a run, not
    during one: it is traffic to the server measured."""
    try:
        root = server_root(base_url)
        net = client_settings(root, verify)
    except (ValueError, NetworkSetupError):
        return None
    async with httpx.AsyncClient(
        timeout=timeout_s, verify=net.verify, trust_env=net.trust_env, proxy=net.proxy
    ) as client:
        for source in limit_sources():
            try:
                response = await client.get(root + source.path)
            except httpx.HTTPError:
                continue
            if response.status_code != 200:
                continue
            slots = read_limit(source, response.text)
            if slots is not None:
                return ServerLimit(slots, source)
    return None
