"""The API dialects splitdesk speaks, named once.

Every part that needs the list reads it here: the settings file's ``api`` field
(:class:`~splitdesk.core.run.endpoints.EndpointSettings`), the command line's ``--api``
choices, the providers (one client per name, :data:`splitdesk.providers.PROVIDERS`) and
the built-in endpoint's routes (one server side per name, ``splitdesk.sim.wire``); a test
keeps the two registries equal to this list. Like :mod:`splitdesk.builtin_endpoint` it sits
outside the layers and imports nothing of splitdesk, so the core, the providers and the
simulator may all read it.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

#: A dialect's name, as the settings file, recordings and ``--api`` spell it.
ApiName = Literal[
    "openai-chat",
    "openai-completions",
    "openai-responses",
    "azure-openai",
    "anthropic",
    "ollama-chat",
    "ollama-generate",
    "tgi",
]

#: Every dialect, in the order menus and ``--help`` list them.
API_NAMES: Final[tuple[ApiName, ...]] = get_args(ApiName)
