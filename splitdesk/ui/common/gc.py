"""Run Python's cyclic garbage collector on the GUI thread only.

Python collects cycles on whichever thread happens to allocate when a threshold is
crossed — here often the engine thread. When a cycle holds Qt objects (a widget and a
lambda connected to its signal), their C++ destructors then run on that thread and Qt
complains ("Timers cannot be stopped from another thread") or crashes. A collection in the
engine thread also pauses it while it should be timestamping arrivals.

:class:`GuiGarbageCollector` switches automatic collection off and collects from a timer
on the GUI thread instead (the recipe PyQt/PySide applications such as Anki use).

Once the window is built, :func:`freeze_built_window` moves everything alive then
(modules, the window and its widgets: ~110,000 objects) out of the collector's sight with
``gc.freeze`` (https://docs.python.org/3/library/gc.html#gc.freeze), as the engine worker
and the built-in endpoint do. A full collection scanned them all for nothing: 33 ms each,
about 7 % of the window's CPU over the default run (``benchmarks/window_cpu.py``, counted
with ``gc.callbacks``), and a pause of a frame or two while tokens stream.
"""

from __future__ import annotations

import gc

from PySide6.QtCore import QObject, QTimer

INTERVAL_MS = 500


def freeze_built_window() -> None:
    """Collect everything, then keep every object alive now out of later collections
    (module docstring). Call once, when the window is built: what is frozen is never freed
    by the collector, so a cycle among those objects that later becomes garbage stays (the
    window's lasting parts do not). :meth:`GuiGarbageCollector.stop` unfreezes."""
    gc.collect()
    gc.freeze()


class GuiGarbageCollector(QObject):
    """Collects garbage on the GUI thread every ``INTERVAL_MS``; the generation to collect
    follows Python's own thresholds. :meth:`stop` restores automatic collection."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._was_enabled = gc.isenabled()
        self.threshold = gc.get_threshold()
        gc.disable()
        self._timer = QTimer(self)
        self._timer.timeout.connect(self.check)
        self._timer.start(INTERVAL_MS)

    def check(self) -> None:
        """Collect the youngest generation whose count exceeds its threshold."""
        counts = gc.get_count()
        for generation in (2, 1, 0):
            if counts[generation] > self.threshold[generation]:
                gc.collect(generation)
                return

    def stop(self) -> None:
        """Collect everything now and give collection back to Python."""
        self._timer.stop()
        gc.unfreeze()
        gc.collect()
        if self._was_enabled:
            gc.enable()
