"""Where the tests find the project: its root (README, resources) and the fixtures, from
any folder of ``tests/`` (the tests mirror the source tree's folders)."""

from __future__ import annotations

from pathlib import Path

#: ``tests/``
TESTS = Path(__file__).resolve().parent
#: The project's root (README.md, resources/, splitdesk/).
ROOT = TESTS.parent
#: ``tests/fixtures/``: real stream shapes, metrics captures, recordings.
FIXTURES = TESTS / "fixtures"
#: ``tests/fixtures/recordings/``: recordings of every format version.
RECORDINGS = FIXTURES / "recordings"
