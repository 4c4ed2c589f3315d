"""The summary strip: the run's headline in one glance, big enough for a projector.

"Combined 10.4 s · Parallel 2.2 s · 4.7× faster", then when answer N starts on each
side, TTFT and tokens both sides (so a shorter combined reply is visible), and a note
when token counts are estimates (and which: "parallel: 2 of 5 estimated"). Every figure
is read from :func:`splitdesk.core.analyse.metrics.summarize`; nothing is computed here.
"""

from __future__ import annotations

from collections.abc import Callable
from html import escape

from PySide6.QtCore import QEvent, QObject, QSize, Qt, Signal
from PySide6.QtGui import QResizeEvent, QShowEvent
from PySide6.QtWidgets import QFrame, QLabel, QVBoxLayout, QWidget

from splitdesk.core.analyse.cost import Prices, format_costs, side_tokens, token_ratio
from splitdesk.core.analyse.diagnosis import (
    Diagnosis,
    common_failure,
    decompose_groups,
    diagnose_state,
    failure_summary,
    no_markers,
    no_verdict_reason,
)
from splitdesk.core.analyse.metrics import GroupMetrics, RunSummary, summarize
from splitdesk.core.analyse.plain import fair_mode_applies, headline_verdict, plain_words
from splitdesk.core.analyse.predict import (
    RATE_LIMIT_NOTE,
    PredictedRequest,
    predicted_makespan,
    prediction_ignores_rate_limit,
)
from splitdesk.core.measure.client_cpu import ObserverEffect
from splitdesk.core.run.run_state import RunState
from splitdesk.providers.base import RequestError
from splitdesk.ui.common.theme import Theme, opaque_fill, ui_font
from splitdesk.ui.common.throttle import LIVE_TEXT_MS, Throttle
from splitdesk.ui.common.wrap import WidowlessLabel


class SteadyBox(QWidget):
    """Holds one label and tells the layout it sits in about the label's new text only
    when the label's size hints change (the headline, the payoff and the details line).

    ``QLabel.setText`` re-lays out the label's parent layout and, through every layout up
    to the window, the whole window (Qt's ``updateGeometry``), even when the new text is
    as big as the old: the summary's headline changes ~10 times a second while a run
    streams ("Combined 3.1 s…"), as do the payoff and details lines, and each change
    re-laid out the window (issue 13). Here
    the label's parent has no layout, so its ``updateGeometry`` only posts this box a
    layout request; the box compares the label's size hint, minimum size hint and height
    for every width its layout has asked since it last told it, and passes the change on
    (its own ``updateGeometry``) only when one of them differs. To its layout the box is
    the label: same size policy, hints and height for width; the label fills it."""

    #: Widths asked since the layout was last told: beyond this many, tell it anyway.
    MAX_WIDTHS = 8

    def __init__(self, label: QLabel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.label = label
        hidden = label.isHidden() and label.testAttribute(
            Qt.WidgetAttribute.WA_WState_ExplicitShowHide
        )
        label.setParent(self)
        if hidden:  # hidden by its owner: so is the box (see eventFilter)
            label.hide()
            self.hide()
        label.installEventFilter(self)
        self.setSizePolicy(label.sizePolicy())
        self._told: tuple[QSize, QSize] | None = None
        self._heights: dict[int, int] = {}

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """The label shown or hidden by its owner (``payoff.hide()``): so is the box,
        which takes the label's place in the layout."""
        if watched is self.label:
            if event.type() == QEvent.Type.ShowToParent:
                self.show()
            elif event.type() == QEvent.Type.HideToParent:
                self.hide()
        return False

    def sizeHint(self) -> QSize:
        hint = self.label.sizeHint()
        self._told = (hint, self.label.minimumSizeHint())
        return hint

    def minimumSizeHint(self) -> QSize:
        hint = self.label.minimumSizeHint()
        self._told = (self.label.sizeHint(), hint)
        return hint

    def hasHeightForWidth(self) -> bool:
        return self.label.hasHeightForWidth()

    def heightForWidth(self, width: int) -> int:
        height = self.label.heightForWidth(width)
        self._heights[width] = height
        return height

    def _changed(self) -> bool:
        """Whether a hint the layout has read since it was last told is now different."""
        label = self.label
        if self._told is not None and self._told != (label.sizeHint(), label.minimumSizeHint()):
            return True
        if len(self._heights) > self.MAX_WIDTHS:
            return True
        return any(label.heightForWidth(w) != h for w, h in self._heights.items())

    def _tell(self) -> None:
        self._told = None
        self._heights = {}
        self.updateGeometry()

    def event(self, event: QEvent) -> bool:
        """The label's ``updateGeometry`` lands here: pass it on only on a change."""
        if event.type() == QEvent.Type.LayoutRequest:
            if self._changed():
                self._tell()
            return True
        return super().event(event)

    def showEvent(self, event: QShowEvent) -> None:
        """Shown again: what changed while hidden posted nothing; tell the layout."""
        super().showEvent(event)
        self._tell()

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self.label.setGeometry(self.rect())


def _s(x: float | None, nd: int = 1) -> str:
    return "…" if x is None else f"{x:.{nd}f} s"


class SummaryStrip(QFrame):
    """Headline figures of the current run, the diagnosis (:mod:`splitdesk.core.analyse.diagnosis`)
    and, when every request failed the same way, one banner with the cause.

    Signals:
        fairModeRequested(): the user followed the caption's offer to run the questions one
            after another (side by side on a server that ran one request at a time).
    """

    fairModeRequested = Signal()
    #: How the client sent the run (the Engineer menu's pattern), beside the speed-up.
    client_note: str = ""
    #: The endpoint's prices per million tokens (Engineer menu), for each side's cost.
    prices: Prices | None = None
    #: splitdesk's own CPU beside a local server on a busy machine (the details line
    #: says it, :meth:`observer_text`); set with :meth:`set_observer`.
    observer: ObserverEffect | None = None

    def __init__(
        self,
        theme: Theme,
        scale: float = 1.0,
        parent: QWidget | None = None,
        show_predictions: bool = True,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("summary")
        opaque_fill(self, theme.panel)  # its style sheet's background: new figures repaint it alone
        #: Say the cost model's predicted figures, the engineer's Why line, the speed-up
        #: split and the fair-mode offer (all off in the presentation look, which says the
        #: reason in plain words only).
        self.show_predictions = show_predictions
        self._unsubscribe: Callable[[], None] | None = None  #: from the run bound last
        self.theme = theme
        self.state: RunState | None = None
        self.predictions: list[PredictedRequest] | None = None
        self.summary: RunSummary | None = None
        #: The finished run's diagnosis (``None`` while running).
        self.diagnosis: Diagnosis | None = None
        #: The one error every request failed with, shown once in :attr:`banner`.
        self.shared_failure: RequestError | None = None
        #: The finished run's reason in plain words (core/analyse/plain.py), ``""`` before.
        self.plain = ""
        #: The engineer's Why line is shown (False on a stage too short for it beside every
        #: timeline lane: it then gives way, after the details line, to the summary's
        #: tooltip; the plain words stay).
        self.why_shown = True
        #: The Why line as last written (with its notes), shown or not.
        self.why_text = ""
        #: The speed-up split line ("4.38× = 1.03× … × 4.24× …") is shown (False on a stage
        #: too short for every line: it gives way to the tooltip, :meth:`set_split_shown`).
        self.split_shown = True
        #: The split line as last written, shown or not (``""``: none).
        self.split_text = ""
        #: The payoff line is shown (False on a stage too short for every line, where even
        #: the Why line has given way; its text stays in :attr:`payoff`).
        self.payoff_shown = True
        self._explained: tuple[RunState, RunSummary, Diagnosis, bool] | None = None
        self._diagnosed_at = -1
        self.banner = QLabel("")
        self.banner.setObjectName("banner")
        self.banner.setFont(ui_font(scale, 1.5, bold=True))
        self.banner.setWordWrap(True)
        self.banner.setTextFormat(Qt.TextFormat.PlainText)  # an error's text is not markup
        self.banner.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.banner.setStyleSheet(
            f"QLabel#banner {{ color: {theme.error}; border: 2px solid {theme.error};"
            " border-radius: 6px; padding: 6px 10px; }"
        )
        self.banner.hide()
        # a narrow window wraps it rather than growing; never "(predicted" / "4.5×)" or a
        # last word alone on a line (ui/common/wrap.py)
        self.headline = WidowlessLabel()
        self.headline.setTextFormat(Qt.TextFormat.RichText)
        self.headline.setText("Press ▶ Run (Ctrl+Enter) to send the questions both ways.")
        self.headline.setFont(ui_font(scale, 5, bold=True))
        #: The headline's box: a new headline as big as the last re-lays out nothing.
        self.headline_box = SteadyBox(self.headline)
        #: The payoff line, second-biggest text on screen: when the last answer appeared
        #: in the combined reply vs in parallel.
        self.payoff = QLabel("")
        self.payoff.setFont(ui_font(scale, 2.5))
        self.payoff.setTextFormat(Qt.TextFormat.RichText)
        self.payoff.setWordWrap(True)
        self.payoff.hide()
        self.payoff_box = SteadyBox(self.payoff)
        #: What happened and why: the diagnosis line, the speed-up split with the
        #: sequential baseline, and the fair-mode offer when side by side compared nothing.
        self.explain = QLabel("")
        self.explain.setFont(ui_font(scale, 1))
        self.explain.setTextFormat(Qt.TextFormat.RichText)
        self.explain.setWordWrap(True)
        self.explain.setTextInteractionFlags(Qt.TextInteractionFlag.LinksAccessibleByMouse)
        self.explain.linkActivated.connect(self._link)
        self.explain.hide()
        self.details = QLabel("")
        self.details.setObjectName("hint")
        self.details.setFont(ui_font(scale, 0.5))
        self.details.setTextFormat(Qt.TextFormat.RichText)
        self.details.setWordWrap(True)
        self.details_box = SteadyBox(self.details)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(14, 8, 14, 10)
        lay.setSpacing(2)
        lay.addWidget(self.banner)
        lay.addWidget(self.headline_box)
        lay.addWidget(self.payoff_box)
        lay.addWidget(self.explain)
        lay.addWidget(self.details_box)
        # live figures at the pace a reader takes them in; the end is flushed at once
        self.throttle = Throttle(self.refresh, LIVE_TEXT_MS, self)

    def unbind(self) -> None:
        """Stop following the run bound last (its events no longer reach this strip)."""
        unsubscribe, self._unsubscribe = self._unsubscribe, None
        if unsubscribe is not None:
            unsubscribe()

    def set_observer(self, effect: ObserverEffect | None) -> None:
        """What splitdesk's own processes cost a local server on a busy machine
        (:func:`splitdesk.core.measure.client_cpu.observer_effect`), said at the end of
        the details line from the next refresh on (``None``: nothing to say)."""
        if effect != self.observer:
            self.observer = effect
            self.throttle.request()

    def observer_text(self) -> str:
        """The details line's sentence about :attr:`observer` (formatting only), ``""``
        when there is nothing to say."""
        e = self.observer
        if e is None:
            return ""
        if e.endpoint_share is not None:  # the built-in endpoint is the server measured
            beside = f"beside the built-in endpoint's {round(100 * e.endpoint_share)} %"
        else:
            beside = "while the local server ran"
        return (
            f"splitdesk used {round(100 * e.client_share)} % of a core {beside}, the "
            f"{e.cpus} CPUs {round(100 * e.machine_busy)} % busy; results may be slower than "
            "without the window — <code>splitdesk bench</code> measures without it"
        )

    def clear(self, text: str = "") -> None:
        """Show ``text`` and no figures (a new run is about to start)."""
        self.unbind()
        self.observer = None
        self.state = None
        self.predictions = None
        self.headline.setText(text)
        self.details.setText("")
        self.payoff.setText("")
        self.payoff.hide()
        self._reset_explanation()

    def _reset_explanation(self) -> None:
        self.diagnosis = None
        self.plain = ""
        self.why_text = ""
        self._explained = None
        self.shared_failure = None
        self._diagnosed_at = -1
        self.banner.hide()
        self.explain.hide()
        self.explain.setText("")

    def _link(self, href: str) -> None:
        if href == "fair-mode":
            self.fairModeRequested.emit()

    def bind(self, state: RunState) -> None:
        """Summarise ``state`` from now on."""
        self.state = state
        self.predictions = None
        self.observer = None
        self.headline.setText("Sending…")
        self.details.setText("")
        self.payoff.setText("")
        self.payoff.hide()
        self._reset_explanation()
        self.unbind()
        self._unsubscribe = state.subscribe_batch(lambda _events: self.throttle.request())

    def set_predictions(self, predictions: list[PredictedRequest]) -> None:
        """The cost model's predicted requests (index order), said beside the measured
        figures; ignored when :attr:`show_predictions` is off."""
        if not self.show_predictions:
            return
        self.predictions = predictions
        self.throttle.request()

    def _predicted(self, group: str) -> float | None:
        if self.state is None or self.predictions is None:
            return None
        mine = [
            p
            for r, p in zip(self.state.requests, self.predictions, strict=False)
            if r.group == group
        ]
        return predicted_makespan(mine) if mine else None

    def refresh(self) -> None:
        state = self.state
        if state is None or state.info is None:
            return
        self.summary = summary = summarize(state)
        c, p = summary.groups.get("combined"), summary.groups.get("parallel")
        t = self.theme
        finished = state.ended is not None
        done = {g: m.finished == m.requests for g, m in summary.groups.items()}
        heads = []
        # each finished side's cost, formatted together so two costs never read alike
        costs: dict[str, float] = {}
        for g in summary.groups:
            cost = side_tokens(state.requests, g).cost(self.prices) if done[g] else None
            if cost is not None:
                costs[g] = cost
        shown = dict(zip(costs, format_costs(list(costs.values())), strict=True))
        for g, label in (
            ("combined", "Combined"),
            ("parallel", "Parallel"),
            ("sequential", "Sequential"),
        ):
            m = summary.groups.get(g)
            if m is None:
                continue
            failures = failure_summary(state.group(g)) if done[g] else None  # type: ignore[arg-type]
            if failures is not None:  # a time over the requests that got through misleads
                heads.append(f"{label}: <span style='color:{t.error}'>{failures}</span>")
            elif done[g]:
                money = (  # core/analyse/cost.py: the figure and its formatting
                    f" <span style='color:{t.muted}; font-size:small'>cost {shown[g]}</span>"
                    if g in shown
                    else ""
                )
                heads.append(f"{label} <b>{_s(m.makespan_s)}</b>{money}")
            else:
                heads.append(f"{label} <span style='color:{t.muted}'>{_s(m.makespan_s)}…</span>")
        line = " · ".join(heads)
        shared = state.info.mode == "side-by-side"
        diagnosis = self._diagnose(state) if finished else None
        if (
            summary.speedup is not None
            and done.get("combined", True)
            and done.get("parallel", True)
            and self._complete(c)
            and self._complete(p)
        ):
            v = headline_verdict(summary.speedup, diagnosis, shared)  # core/analyse/plain.py
            color = {"sooner": t.good, "same": t.muted, "no-verdict": t.muted}.get(
                v.kind, t.muted if shared else t.error
            )
            line += f" · <span style='color:{color}'>{v.text}</span>"
            if v.kind != "no-verdict":
                split = decompose_groups(summary.groups)
                if (
                    diagnosis is not None
                    and diagnosis.one_at_a_time
                    and v.kind == "sooner"
                    and (split is None or split.concurrency_factor < 1.05)
                ):  # faster, one request at a time: where it came from, as the split says
                    line += (
                        f" <span style='color:{t.muted}'>— from the prompt's shape, "
                        "not concurrency</span>"
                    )
                pc, pp = self._predicted("combined"), self._predicted("parallel")
                if pc and pp:  # the cost model knows no 429s (core/predict.py)
                    said = (
                        RATE_LIMIT_NOTE
                        if prediction_ignores_rate_limit(self.predictions, state.requests)
                        else f"predicted {pc / pp:.1f}×"
                    )
                    line += f" <span style='color:{t.muted}; font-size:small'>({said})</span>"
        elif not finished:
            line += f" · <span style='color:{t.muted}'>running…</span>"
        if state.ended is not None and state.ended.stopped:
            line += f" · <span style='color:{t.muted}'>stopped</span>"
        self.headline.setText(line)
        details = self._details(c, p, len(state.info.questions), finished)
        self.details.setText(" · ".join(x for x in (details, self.observer_text()) if x))
        if not self.show_predictions:  # the presentation look: no engineer's detail line
            self.details.setText("")
        if diagnosis is not None:
            self._explain(state, summary, diagnosis, shared)

    def _diagnose(self, state: RunState) -> Diagnosis:
        """The finished run's diagnosis, computed once per run (it walks every event)."""
        if self.diagnosis is None or self._diagnosed_at != state.events_applied:
            self.diagnosis = diagnose_state(state)
            self._diagnosed_at = state.events_applied
        return self.diagnosis

    def why_px(self, width: int) -> int:
        """Pixels the Why line takes in the explanation at ``width`` (0: none written)."""
        return self.line_px(self.explain, self.why_text, width)

    def line_px(self, label: QLabel, text: str, width: int) -> int:
        """Pixels ``text`` takes as a line of ``label``'s font at ``width`` (0: no text)."""
        if not text:
            return 0
        probe = QLabel()
        probe.setFont(label.font())
        probe.setTextFormat(Qt.TextFormat.RichText)
        probe.setWordWrap(True)
        probe.setText(text)
        return probe.heightForWidth(max(width, 1))

    def set_split_shown(self, shown: bool) -> None:
        """Show the speed-up split line, or leave it out (its text then in
        :attr:`split_text`, for the strip's tooltip)."""
        if shown != self.split_shown:
            self.split_shown = shown
            if self._explained is not None:
                self._explain(*self._explained)

    def set_payoff_shown(self, shown: bool) -> None:
        """Show the payoff line (when it has a text), or leave it out (for the tooltip)."""
        if shown != self.payoff_shown:
            self.payoff_shown = shown
            self.payoff.setVisible(shown and bool(self.payoff.text()))

    def set_why_shown(self, shown: bool) -> None:
        """Show the Why line, or leave it out (its text then in :attr:`why_text`, for the
        strip's tooltip); the explanation is written again at once."""
        if shown != self.why_shown:
            self.why_shown = shown
            if self._explained is not None:
                self._explain(*self._explained)

    def _explain(self, state: RunState, summary: RunSummary, d: Diagnosis, shared: bool) -> None:
        """The banner (one shared failure), the speed-up split and the diagnosis line."""
        self._explained = (state, summary, d, shared)
        self.why_text = ""
        t = self.theme
        self.shared_failure = failure = common_failure(state.requests)
        if failure is not None:
            self.banner.setText(
                f"✕ All {len(state.requests)} requests failed the same way: {failure.message}"
            )
            self.banner.show()
        else:
            self.banner.hide()
        lines = []
        self.split_text = ""
        dec = decompose_groups(summary.groups) if self.show_predictions else None
        if dec is not None:
            self.split_text = (
                f"<b>{dec.speedup:.2f}×</b> = <b>{dec.prompt_shape_factor:.2f}×</b> from the "
                "prompt's shape (combined → sequential) × "
                f"<b>{dec.concurrency_factor:.2f}×</b> from concurrency (sequential → parallel)"
            )
            if self.split_shown:
                lines.append(self.split_text)
        if failure is None:  # the banner already says why
            self.plain = plain_words(state, summary, d)  # core/analyse/plain.py
            lines.insert(0, f"<b>{escape(self.plain, quote=False)}</b>")
            if self.show_predictions:  # the engineer's line, with its measurements
                why = f"<b>Why:</b> {escape(d.text, quote=False)}"
                for note in d.notes:
                    why += f"<br>Also: {escape(note.text, quote=False)}"
                self.why_text = why
                if self.why_shown:
                    lines.append(why)
        if self.show_predictions and fair_mode_applies(state, d):
            # the headline names the cause ("no verdict: both ways shared the server", "…
            # ran one request at a time") and the Why line explains it; this line offers
            # the fair measurement in as few words (one line on a projector)
            offer = (
                f"<a href='fair-mode' style='color:{t.accent}'>Run them one after another</a>"
                " to measure each way on an idle server."
            )
            if not d.one_at_a_time:  # the Why line said nothing of the shared server
                offer = f"Sharing the server changes the ratio. {offer}"
            lines.append(offer)
        self.explain.setText("<br>".join(lines))
        self.explain.setVisible(bool(lines))

    def _why_missing(self, question: int) -> str:
        """ "no answer (HTTP 429)": why the parallel request for ``question`` never answered."""
        state = self.state
        trace = next(
            (t for t in (state.group("parallel") if state else []) if t.questions == (question,)),
            None,
        )
        if trace is None or trace.error is None:
            return "no answer"
        e = trace.error
        return f"no answer (HTTP {e.status})" if e.status else f"no answer ({e.kind})"

    @staticmethod
    def _context_read(c: GroupMetrics | None, p: GroupMetrics | None) -> str:
        """With a shared context: how many prompt tokens each side's server read and how
        many its cache served (``GroupMetrics.prompt``, the servers' usage; formatting
        only). ``""`` without a context or a prompt count."""
        said = []
        for g, name in ((c, "combined"), (p, "parallel")):
            pt = g.prompt if g is not None else None
            if pt is None or not pt.context_chars:
                continue
            text = f"{name} {pt.prompt:,}"
            if pt.cached is not None:
                text += f", {pt.cached:,} from cache"
            if not pt.complete:
                text += f" ({pt.reported} of {pt.requests} reported)"
            said.append(text)
        if not said:
            return ""
        return "prompt tokens with the shared context: " + " / ".join(said)

    @staticmethod
    def _complete(g: GroupMetrics | None) -> bool:
        return g is not None and g.failed == 0 and g.stopped == 0 and g.makespan_s is not None

    def _details(
        self, c: GroupMetrics | None, p: GroupMetrics | None, n: int, finished: bool
    ) -> str:
        parts = []
        last = n - 1
        if c is not None and p is not None:
            cs, ps = c.answer_start_s.get(last), p.answer_start_s.get(last)
            if cs is not None or ps is not None:
                c_at, p_at = _s(cs, 2), _s(ps, 2)
                if finished:  # over: a missing start is an answer that never came, not "…"
                    # a combined reply with text but no markers: its answers may be there,
                    # where each starts cannot be told (core/analyse/diagnosis.no_markers)
                    combined = self.state.group("combined") if self.state else []
                    unmarked = any(no_markers(r) for r in combined)
                    c_at = c_at if cs is not None else ("no markers" if unmarked else "no answer")
                    p_at = p_at if ps is not None else self._why_missing(last)
                missing = any(w in c_at + p_at for w in ("no answer", "no markers"))
                lead = f"answer {n} appeared after" if not missing else f"answer {n}:"
                self.payoff.setText(
                    f"{lead} <b>{c_at}</b> in the combined reply vs <b>{p_at}</b> in parallel"
                )
                self.payoff.setVisible(self.payoff_shown)
            if c.all_started_s is not None and p.all_started_s is not None:
                parts.append(
                    f"all answers started {_s(c.all_started_s, 2)} vs {_s(p.all_started_s, 2)}"
                )
        ttft = []
        for g, name in ((c, "combined"), (p, "parallel")):
            if g is not None and g.ttft_range_s is not None:
                low, high = (f"{x:.2f}" for x in g.ttft_range_s)  # one figure if they print alike
                ttft.append(f"{name} {low} s" if low == high else f"{name} {low}–{high} s")
        if ttft:
            parts.append("TTFT " + " / ".join(ttft))
        read = self._context_read(c, p)
        if read:
            parts.insert(0, read)
        toks = []
        notes = []
        for g, name in ((c, "combined"), (p, "parallel")):
            if g is not None:
                toks.append(f"{name} {g.output_tokens}")
                if g.estimated_note:
                    notes.append((name, g.estimated_note))
        if self.client_note:  # how the client sent (Engineer menu)
            parts.append(f"client: {self.client_note}")
        state = self.state
        if state is not None and c is not None and p is not None:
            ratio = token_ratio(
                side_tokens(state.requests, "combined"), side_tokens(state.requests, "parallel")
            )
            if ratio is not None:  # the speed-up is the headline's; here only the tokens
                parts.append(f"parallel used {ratio:.1f}× the tokens")
        if toks:
            note = ""
            if finished and notes:
                if all(n == "all estimated" for _, n in notes):
                    note = " (estimated: the server reported no usage)"
                else:  # say which side and how many: one failed request is not the side
                    note = " (" + ", ".join(f"{name}: {n}" for name, n in notes) + ")"
            parts.append("output tokens " + " / ".join(toks) + note)
        failed = sum(g.failed for g in (c, p) if g is not None)
        if failed:
            parts.append(
                f"<span style='color:{self.theme.error}'>{failed} request(s) failed</span>"
            )
            for g, name in ((c, "combined"), (p, "parallel")):
                # the headline counts the failures; the time of the rest is only a detail
                if g is not None and g.failed and g.makespan_s is not None:
                    answered = g.requests - g.failed - g.stopped
                    parts.append(f"{name} {g.makespan_s:.2f} s over the {answered} that answered")
        speedup = self.summary.speedup if self.summary else None
        info = self.state.info if self.state else None
        d = self.diagnosis
        if (
            finished
            and speedup is not None
            and speedup < 1.1
            and info is not None
            and info.mode == "side-by-side"
            and no_verdict_reason(d, True) is None  # the caption says it then
        ):
            parts.append(
                "side by side, both ways share the server: “one after another” measures each on an idle one"
            )
        return " · ".join(parts)
