"""What the window remembers between launches, as one versioned JSON file.

The file lives in the user's config folder (``platformdirs``; override with the
``SPLITDESK_CONFIG_DIR`` environment variable) and never holds an API key. Reading and
writing block: the window calls them off its GUI thread (or before its loop starts).
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Literal

import platformdirs
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from splitdesk.core.endpoints import EndpointSettings
from splitdesk.core.questions import QuestionSet

FILE_NAME = "settings.json"


class AppSettings(BaseModel):
    """Everything persisted: endpoint, run mode, look, the last question set."""

    model_config = ConfigDict(extra="ignore")

    version: int = 1
    endpoint: EndpointSettings = Field(default_factory=EndpointSettings)
    mode: Literal["side-by-side", "one-after-another"] = "side-by-side"
    with_sequential: bool = False
    theme: Literal["dark", "light"] = "dark"
    font_scale: float = Field(1.0, ge=0.6, le=3.0)
    question_set: QuestionSet | None = None
    #: The window's last size in pixels, (width, height); None: fit the screen.
    window_size: tuple[int, int] | None = None


def config_dir() -> Path:
    """The folder holding the settings file."""
    override = os.environ.get("SPLITDESK_CONFIG_DIR")
    return Path(override) if override else platformdirs.user_config_path("splitdesk")


def load_settings(path: Path | None = None) -> tuple[AppSettings, str | None]:
    """The saved settings, or defaults; the second item explains a file that could not be
    used (it is then left in place, renamed ``settings.json.bad``)."""
    path = path or config_dir() / FILE_NAME
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return AppSettings(), None
    except OSError as exc:
        return AppSettings(), f"could not read {path}: {exc.strerror or exc}"
    try:
        return AppSettings.model_validate(json.loads(raw)), None
    except (ValueError, ValidationError) as exc:
        with contextlib.suppress(OSError):
            path.replace(path.with_suffix(".json.bad"))
        return AppSettings(), f"{path.name} was not valid and was set aside ({type(exc).__name__})"


def save_settings(settings: AppSettings, path: Path | None = None) -> None:
    """Write ``settings`` atomically. Raises ``OSError``."""
    path = path or config_dir() / FILE_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(settings.model_dump_json(indent=2), encoding="utf-8")
    tmp.replace(path)
