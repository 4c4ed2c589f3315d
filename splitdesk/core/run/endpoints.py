"""Endpoint choices: the presets a user picks from and the settings that persist.

:class:`EndpointSettings` is what the window remembers between launches — never the API
key itself, only where it comes from (:class:`KeySource`). Presets fill the base URL and
dialect for the servers people run; environment variables (``OPENAI_API_KEY``,
``OPENAI_BASE_URL``, ``ANTHROPIC_API_KEY``, ``OLLAMA_HOST``) are picked up and the UI says
where a value came from.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field

from splitdesk.builtin_endpoint import BUILTIN_MODEL, DEFAULT_PROFILE
from splitdesk.core.run.limits import MAX_TOKENS, RETRY_429, SPEED, TEMPERATURE, TIMEOUT_S
from splitdesk.dialects import ApiName

BUILTIN: Final = "builtin"

#: The presets a settings file may name (the keys of :data:`PRESETS`).
PresetName = Literal["builtin", "openai", "vllm", "ollama", "lmstudio", "llamacpp", "tgi", "custom"]


class KeySource(enum.StrEnum):
    """Where the API key comes from. The key is never stored in settings."""

    NONE = "none"  #: no key (local servers)
    ENV = "env"  #: an environment variable, named in ``EndpointSettings.key_env``
    KEYRING = "keyring"  #: the OS keyring (service ``splitdesk``)
    SESSION = "session"  #: typed in, kept in memory for this session only


@dataclass(frozen=True)
class Preset:
    """A server family: its usual base URL and dialect, and the key variable it uses."""

    key: str
    label: str
    base_url: str
    api: str
    model: str = ""
    key_env: str = ""
    hint: str = ""


PRESETS: dict[str, Preset] = {
    p.key: p
    for p in (
        Preset(
            BUILTIN,
            "Built-in simulator",
            "",
            "openai-chat",
            BUILTIN_MODEL,
            hint="offline, no key",
        ),
        Preset(
            "openai",
            "OpenAI",
            "https://api.openai.com/v1",
            "openai-chat",
            "gpt-4o-mini",
            "OPENAI_API_KEY",
        ),
        Preset("vllm", "vLLM / SGLang (local)", "http://localhost:8000/v1", "openai-chat"),
        Preset(
            "ollama", "Ollama (OpenAI API)", "http://localhost:11434/v1", "openai-chat", "llama3.2"
        ),
        Preset("lmstudio", "LM Studio", "http://localhost:1234/v1", "openai-chat"),
        Preset("llamacpp", "llama.cpp server", "http://localhost:8080/v1", "openai-chat"),
        Preset("tgi", "TGI (Messages API)", "http://localhost:8080/v1", "openai-chat", "tgi"),
        Preset("custom", "Custom", "http://localhost:8000/v1", "openai-chat"),
    )
}


class EndpointSettings(BaseModel):
    """One endpoint as the user set it up (persisted; holds no secret).

    Times in seconds; ``max_tokens`` caps each answer (the combined request gets N times
    it); ``speed`` and ``profile`` apply to the built-in endpoint only.
    """

    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)

    preset: PresetName = BUILTIN
    base_url: str = ""
    api: ApiName = "openai-chat"
    model: str = BUILTIN_MODEL
    key_source: KeySource = KeySource.NONE
    key_env: str = ""
    profile: str = DEFAULT_PROFILE
    # bounds: core/run/limits.py (one place per kind of number)
    speed: float = Field(1.0, ge=SPEED.low, le=SPEED.high)
    max_tokens: int = Field(512, ge=MAX_TOKENS.low, le=MAX_TOKENS.high)
    temperature: float | None = Field(None, ge=TEMPERATURE.low, le=TEMPERATURE.high)
    connect_timeout: float = Field(10.0, ge=TIMEOUT_S.low, le=TIMEOUT_S.high)
    read_timeout: float = Field(300.0, ge=TIMEOUT_S.low, le=TIMEOUT_S.high)
    verify_tls: bool = True
    ca_bundle: str = ""
    headers: dict[str, str] = Field(default_factory=dict)
    retry_429: int = Field(0, ge=RETRY_429.low, le=RETRY_429.high)

    @property
    def is_builtin(self) -> bool:
        return self.preset == BUILTIN

    @property
    def verify(self) -> bool | str:
        """httpx's ``verify``: the CA bundle, True, or False when the user turned it off."""
        if not self.verify_tls:
            return False
        return self.ca_bundle or True

    @property
    def host(self) -> str:
        """Where requests go, for the toolbar and status lines: ``host:port`` of the base URL
        (no scheme, path or user info, so nothing secret), or ``built-in`` for the built-in
        endpoint; the base URL itself when it cannot be parsed."""
        if self.is_builtin:
            return "built-in"
        try:
            parts = urlsplit(self.base_url.strip())
            host, port = parts.hostname, parts.port
        except ValueError:
            return self.base_url.strip() or "no URL"
        if not host:
            return self.base_url.strip() or "no URL"
        return f"{host}:{port}" if port else host

    def keyring_account(self) -> str:
        """The keyring account this endpoint's key is stored under."""
        return f"{self.api} {self.base_url}"


@dataclass(frozen=True)
class EnvDefault:
    """A value found in the environment, and the variable it came from."""

    value: str
    source: str


def env_defaults(env: Mapping[str, str] | None = None) -> dict[str, EnvDefault]:
    """Endpoint values the environment provides, by preset key: ``openai`` base URL from
    ``OPENAI_BASE_URL``, ``ollama`` from ``OLLAMA_HOST`` (``host:port`` or a URL). Keys are
    not read here, only whether their variables are set (see :func:`key_env_present`)."""
    env = os.environ if env is None else env
    out: dict[str, EnvDefault] = {}
    if env.get("OPENAI_BASE_URL"):
        out["openai"] = EnvDefault(env["OPENAI_BASE_URL"].rstrip("/"), "OPENAI_BASE_URL")
    host = env.get("OLLAMA_HOST", "").strip()
    if host:
        if not host.startswith(("http://", "https://")):
            host = "http://" + host
        if host.count(":") < 2:  # no port given
            host += ":11434"
        out["ollama"] = EnvDefault(host.rstrip("/") + "/v1", "OLLAMA_HOST")
    return out


def key_env_present(name: str, env: Mapping[str, str] | None = None) -> bool:
    """True when the environment variable ``name`` holds a non-empty value."""
    env = os.environ if env is None else env
    return bool(name and env.get(name))


def settings_for_preset(
    key: str, current: EndpointSettings, env: Mapping[str, str] | None = None
) -> EndpointSettings:
    """``current`` switched to preset ``key``: base URL, dialect, model and key variable
    from the preset (or the environment), everything else kept. Raises ``KeyError``."""
    preset = PRESETS[key]
    found = env_defaults(env).get(key)
    key_env = preset.key_env
    key_source = KeySource.ENV if key_env and key_env_present(key_env, env) else KeySource.NONE
    if key_env and key_source is KeySource.NONE:
        key_source = KeySource.KEYRING
    return current.model_copy(
        update={
            "preset": key,
            "base_url": found.value if found else preset.base_url,
            "api": preset.api,
            "model": preset.model or current.model,
            "key_env": key_env,
            "key_source": key_source if key != BUILTIN else KeySource.NONE,
        }
    )
