"""What the window needs that does not use Qt, imported before PySide6 is.

PySide6 reads the source of every module the first time an import statement names it
once PySide6 is loaded, to see whether the module names PySide6
(``shibokensupport/feature.py``, ``_mod_uses_pyside``: ``inspect.getsource`` per module,
PYSIDE-2029). The window's start had it read 741 modules — numpy's, pydantic's, httpx's
and its dependencies' internals among them. Imported here first, their internals are
never named again after PySide6: 354 modules are read, and ``import splitdesk.app`` took
0.69 s instead of 0.73 s (medians of 6 interleaved runs on 2 shared cores; issue 25's
cold start).
``splitdesk.app`` imports this module before anything else; it must not import Qt
itself (the import contracts in ``pyproject.toml`` keep core and providers Qt-free).
"""

from __future__ import annotations

import numpy  # noqa: F401  (pyqtgraph's, for the timeline)
import pydantic  # noqa: F401

import splitdesk.core.analyse.diagnosis
import splitdesk.core.files.recording
import splitdesk.core.files.scenarios
import splitdesk.core.files.settings
import splitdesk.core.measure.engine_protocol
import splitdesk.core.measure.server_metrics
import splitdesk.core.run.plans
import splitdesk.core.run.run_state
import splitdesk.providers  # noqa: F401  (and httpx with it)
