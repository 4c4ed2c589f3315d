"""The window is legible at every size and N: nothing overlaps, nothing is cut.

Each case lays the real window out offscreen at a screen size and text scale (1024×768,
1280×720 ×1.5, 1920×1080 ×1.5, 2560×1440 ×2) with N = 2, 5, 8, 16, 32 questions, fills it
with the events of a real run (recorded once per N from the built-in endpoint over
loopback HTTP, replayed through a fresh :class:`RunState` exactly as a live run feeds
it), and checks from widget geometry that toolbar buttons, pane headers, lane names,
lanes and lane labels neither overlap nor are clipped, and that every parallel pane is on
screen or reachable through a visible scroll bar and a "+k more" note.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
import pytest_asyncio
from PySide6.QtCore import QPoint, QRect, QRectF
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QAbstractButton, QApplication, QComboBox, QLabel, QWidget
from ui.conftest import tasks_left, wait_signal, wait_until

from splitdesk.core.files.settings import AppSettings
from splitdesk.core.measure.runner import RunConfig, Runner
from splitdesk.core.run.endpoints import EndpointSettings
from splitdesk.core.run.events import RunEvent
from splitdesk.core.run.labels import question_label
from splitdesk.core.run.plans import RunPlan, make_plan
from splitdesk.core.run.questions import Question, QuestionSet, builtin_sets
from splitdesk.core.run.run_state import RunState
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.providers.base import EndpointConfig
from splitdesk.ui.common.gc import GuiGarbageCollector
from splitdesk.ui.common.theme import DARK, apply_theme
from splitdesk.ui.run.controller import RunController
from splitdesk.ui.shell.main_window import MainWindow
from splitdesk.ui.stage.panes import ElidedLabel, RequestPane

SIZES = [((1024, 768), 1.0), ((1280, 720), 1.5), ((1920, 1080), 1.5), ((2560, 1440), 2.0)]
NS = [2, 5, 8, 16, 32]

#: Questions without titles: their labels are derived from the text.
UNTITLED = [
    "How does a heat pump move warm air out of a cold garden?",
    "What makes sourdough bread rise without baker's yeast?",
    "Why do cats purr when they are content?",
    "How do noise-cancelling headphones remove sound?",
    "What is the difference between weather and climate?",
    "How does GPS work out where my phone is?",
    "Why does ice float on water?",
    "How do bees find their way back to the hive?",
    "What does a compiler do with my source code?",
    "Why do onions make people cry?",
    "How does a credit score get calculated?",
    "What causes the northern lights?",
    "How do solar panels turn light into electricity?",
    "Why is the ocean salty but rivers are not?",
    "How does a vaccine cold chain keep doses usable?",
    "What makes a bridge able to carry heavy trucks?",
]


def question_set(n: int) -> QuestionSet:
    """``n`` questions: the built-in sets' titled ones first, then untitled ones."""
    sets = builtin_sets()
    titled = [
        q
        for key in ("everyday-five", "eight-technical", "three-short")
        for q in sets[key].questions
    ]
    questions = (titled + [Question(text=t) for t in UNTITLED])[:n]
    assert len(questions) == n
    return QuestionSet(title=f"{n} questions", questions=questions)


_recorded: dict[int, tuple[RunPlan, list[str], list[RunEvent]]] = {}


async def recorded_run(sim: Any, n: int) -> tuple[RunPlan, list[str], list[RunEvent]]:
    """The plan, questions and events of one real side-by-side run of ``n`` questions on
    the built-in endpoint (short, whole answers), recorded once per ``n`` for every size."""
    if n not in _recorded:
        questions = question_set(n).texts
        plan = make_plan("side-by-side", questions, CombinedTemplate(), None)
        events: list[RunEvent] = []
        endpoint = EndpointConfig(sim.openai_base_url, "openai-chat", "splitdesk-sim")
        await Runner(RunConfig(endpoint), events.append).run(questions, plan)
        _recorded[n] = (plan, questions, events)
    return _recorded[n]


@pytest.fixture(scope="module")
def sim_short() -> Iterator[Any]:
    """The built-in endpoint (batching) with short answers at 8× speed: a 32-question
    combined reply ends in about two seconds, every answer whole."""
    from splitdesk.sim.launcher import start_sim

    sim = start_sim("batching", {"speed": 8, "answer_tokens": 24})
    try:
        yield sim
    finally:
        sim.stop()


@pytest_asyncio.fixture
async def window_at(qtbot: Any) -> AsyncIterator[Callable[..., MainWindow]]:
    """Build a window at a size and text scale (the app's theme applied at that scale as
    ``splitdesk --scale`` does); closed, and the app's look restored, afterwards."""
    app = QApplication.instance()
    assert isinstance(app, QApplication)
    saved = (app.font(), app.styleSheet(), app.palette())
    app.setQuitOnLastWindowClosed(False)  # as in splitdesk.app
    collector = GuiGarbageCollector()  # as in splitdesk.app: Qt objects die on this thread
    made: list[MainWindow] = []

    def make(size: tuple[int, int], scale: float, settings: AppSettings) -> MainWindow:
        apply_theme(app, DARK, scale)
        window = MainWindow(settings, RunController(), DARK, scale)
        window.resize(*size)
        window.show()
        made.append(window)
        return window

    yield make
    for window in made:
        if not window._closed:
            window.close()
            await wait_signal(window.closed, 10)
    left = await tasks_left()  # before the loop closes: a task left there could hang it
    assert not left, f"tasks left after closing the window: {left}"
    for window in made:
        window.deleteLater()
    app.setStyleSheet(saved[1])
    app.setFont(saved[0])
    app.setPalette(saved[2])
    collector.stop()


async def replay_into(
    window: MainWindow, plan: RunPlan, questions: list[str], events: list[RunEvent]
) -> RunState:
    """Feed a recorded run to ``window`` through its controller's signals, as a live run."""
    controller = window.controller
    controller.runPlanned.emit(plan, questions)
    state = RunState()
    controller.runStarted.emit(state)
    for ev in events:
        state.apply(ev)
    controller.runFinished.emit(state)
    await settled(window)
    return state


async def settled(window: MainWindow) -> None:
    """Wait until the layout stops changing (deferred relayouts and repaints done)."""
    last: tuple[Any, ...] | None = None
    same = 0

    def snapshot() -> tuple[Any, ...]:
        vb = window.stage.timeline.plot.getPlotItem().getViewBox()
        return (
            window.stage.grid.viewport().size().toTuple(),
            window.stage.grid._columns,
            window.stage.grid.compact,
            window.stage.grid.one_line,
            window.stage.grid.more_label.text(),
            round(vb.height()),
            window.stage.timeline.lanes_shown,
            tuple(window.stage.timeline.shown_names),
            tuple(p.stats.text() for p in window.stage.grid.panes),
        )

    def stable() -> bool:
        nonlocal last, same
        if window.stage.finishing:  # a run's end still being shown, over several turns
            same, last = 0, None
            return False
        now = snapshot()
        same = same + 1 if now == last else 0
        last = now
        return same >= 3

    await wait_until(stable, 10)
    await asyncio.sleep(0)


def rect_in(widget: QWidget, ancestor: QWidget) -> QRect:
    """``widget``'s rectangle in ``ancestor``'s coordinates."""
    return QRect(widget.mapTo(ancestor, widget.rect().topLeft()), widget.size())


def assert_disjoint(named: list[tuple[str, QRect | QRectF]], what: str) -> None:
    for i, (a, ra) in enumerate(named):
        for b, rb in named[i + 1 :]:
            inter = QRectF(ra).intersected(QRectF(rb))
            assert inter.width() < 1 or inter.height() < 1, f"{what}: {a!r} overlaps {b!r}"


def text_fits(label: QLabel) -> None:
    """The label's shown text fits its contents rectangle on one line."""
    text = label.text()
    if "<" in text:  # rich text: measure what is shown
        doc_text = label.property("plain") or QLabel().text()
        del doc_text
        from PySide6.QtGui import QTextDocument

        doc = QTextDocument()
        doc.setHtml(text)
        text = doc.toPlainText()
    advance = QFontMetrics(label.font()).horizontalAdvance(text)
    assert advance <= label.contentsRect().width() + 1, (
        f"{text!r} needs {advance} px, has {label.contentsRect().width()}"
    )


def check_pane_header(pane: RequestPane, label: str | None) -> None:
    title = pane.title
    assert isinstance(title, ElidedLabel)
    if label is not None:  # figures go before the label is cut
        assert title.text() == label, f"pane header shows {title.text()!r}, label {label!r}"
    else:
        assert title.text() in title._variants, f"header cut: {title.text()!r}"
    text_fits(title)
    text_fits(pane.state)
    stats = pane.stats
    assert stats.text() == "" or stats.text() in stats._variants, f"figures cut: {stats.text()!r}"
    text_fits(stats)
    parts = [
        ("badge", rect_in(pane.badge, pane)),
        ("title", rect_in(title, pane)),
        ("expand", rect_in(pane.focus_button, pane)),
        ("state", rect_in(pane.state, pane)),  # in the header row when the pane is tight
    ]
    if stats.text():
        parts.append(("figures", rect_in(stats, pane)))
    assert_disjoint(parts, f"header of {label or 'combined'}")
    for name, r in parts:
        assert pane.rect().contains(r), f"{name} sticks out of its pane"


def check_toolbar(window: MainWindow) -> None:
    bar = window.run_button.parentWidget()
    assert bar is not None
    widgets = [
        w
        for w in bar.findChildren(QWidget)
        if isinstance(w, QAbstractButton | QComboBox) and w.isVisible() and w.parentWidget() is bar
    ]
    for must in (window.run_button, window.stop_button, window.endpoint_button, window.mode):
        assert must.isVisible(), f"toolbar: {must.objectName() or must.text()} is not shown"
    for w in widgets:
        assert w.width() >= w.sizeHint().width(), f"toolbar: {w!r} clipped"
    assert_disjoint([(repr(w), rect_in(w, bar)) for w in widgets], "toolbar")


def check_timeline(window: MainWindow, n: int, labels: list[str]) -> None:
    timeline = window.stage.timeline
    assert len(timeline.lanes) == n + 1
    assert timeline.lanes[1:] == [f"Q{q + 1} {labels[q]}" for q in range(n)]
    names = timeline.lane_name_rects()
    assert names, "no lane name shown"
    for name, _r in names:
        assert "…" not in name
    if timeline.packed:
        # too many lanes to name one by one: the parallel ones are one block, "Parallel
        # (N)", and every lane is in sight (the combined bar and all N parallel bars)
        groups = timeline.lane_groups
        assert groups.count("parallel") == n
        shown = [name for name, _r in names]
        assert f"Parallel ({n})" in shown
        own = [timeline.lanes[i] for i, g in enumerate(groups) if g != "parallel"]
        rest = [x for x in shown if x != f"Parallel ({n})"]
        assert len(rest) == len(own)
        for name, full in zip(rest, own, strict=True):
            assert name in (full, full.replace(" in 1)", ")")), name
        assert timeline.lanes_shown == len(timeline.lanes) and not timeline.lane_bar.isVisible()
        packed = [r for i, r in timeline.lane_rects() if groups[i] == "parallel"]
        assert len(packed) == n and all(r.height() >= 1.5 for r in packed), (
            f"packed lanes too thin to see: {[round(r.height(), 1) for r in packed]}"
        )
    else:
        for lane, (name, _r) in enumerate(names, start=timeline.lane_top):
            full = timeline.lanes[lane]
            assert name in (full, full.split(" ", 1)[0], full.replace(" in 1)", ")")), name
    assert_disjoint([(n_, r) for n_, r in names], "lane names")
    axis = timeline.plot.getPlotItem().getAxis("left")
    left = axis.sceneBoundingRect().left()
    for name, r in names:
        assert r.left() >= left - 0.5, f"lane name {name!r} cut by the axis edge"
    lanes = timeline.lane_rects()
    assert_disjoint([(str(i), r) for i, r in lanes], "lanes")
    vb = timeline.plot.getPlotItem().getViewBox().sceneBoundingRect()
    for i, r in lanes:
        assert vb.top() - 0.5 <= r.top() and r.bottom() <= vb.bottom() + 0.5, f"lane {i} cut"
    texts = [(t, r) for t, r in timeline.text_rects() if vb.intersects(r)]
    assert_disjoint(texts, "timeline labels")
    for t, r in texts:
        assert r.right() <= vb.right() + 1, f"{t!r} cut at the right edge"
    if timeline.lanes_shown < len(timeline.lanes):  # the rest is reachable, visibly
        assert not timeline.packed
        assert timeline.lane_bar.isVisible()
        assert timeline.lane_bar.maximum() == len(timeline.lanes) - timeline.lanes_shown
    else:
        assert not timeline.lane_bar.isVisible()


def check_grid(window: MainWindow, n: int, labels: list[str]) -> None:
    grid = window.stage.grid
    assert len(grid.panes) == n
    inner = grid.widget()
    assert inner.width() <= grid.viewport().width(), "panes wider than the grid: cut at its edge"
    assert_disjoint([(p.badge.text(), rect_in(p, inner)) for p in grid.panes], "panes")
    # no pane shows cut in half: one in sight shows its whole header row (the rows that do
    # not fit leave empty pixels under the last whole one, never half a header)
    shown = grid._shown_rect()
    for pane in grid.panes:
        r = rect_in(pane, inner)
        if pane.isVisible() and r.intersects(shown):
            head = rect_in(pane.badge, inner).united(rect_in(pane.title, inner))
            assert shown.contains(head), f"{pane.badge.text()}'s header cut at the grid's edge"
    hidden = grid.hidden_panes()
    for q, pane in enumerate(grid.panes):
        if pane not in hidden:
            check_pane_header(pane, labels[q])
            if pane.no_text:  # refused before any text: its message instead
                assert pane.error.isVisible() and pane.error.text(), f"Q{q + 1} says nothing"
            else:
                assert pane.text.toPlainText(), f"Q{q + 1} shows no text"
    if hidden:  # reachable in a way the screen shows
        assert grid.verticalScrollBar().isVisible(), f"{len(hidden)} panes out of sight, no bar"
        assert grid.more_label.isVisible()
        assert grid.more_label.text().startswith(f"+{len(hidden)} more")
        text_fits(grid.more_label)
    else:
        assert not grid.more_label.isVisible()
    if n > 8:
        assert grid.compact, "many panes are compact"


def check_columns(window: MainWindow, combined: RequestPane) -> None:
    """Both columns' titles are one line and their panes start level; the combined pane
    shows a whole line of its text (it had been squeezed to its header, 1024×768 with 12
    questions, its title on two lines over the parallel one's one)."""
    stage = window.stage
    titles = (stage.combined_title, stage.parallel_title)
    for title in titles:
        text_fits(title)
        assert title.height() < 2 * title.fontMetrics().height(), f"{title.text()!r}: two lines"
    tops = {rect_in(w, stage).top() for w in (stage.combined_holder, stage.grid)}
    assert max(tops) - min(tops) <= 2, f"the columns' panes start at {sorted(tops)}"
    view = combined.text
    assert view.isVisible() and view.viewport().height() >= view.fontMetrics().lineSpacing(), (
        f"the combined pane's text {view.viewport().height()} px high"
    )
    assert rect_in(view, stage).bottom() <= rect_in(combined, stage).bottom()


def check_summary(window: MainWindow) -> None:
    """Every line of the summary strip is shown whole, above the status bar."""
    summary = window.stage.summary
    strip = rect_in(summary, window)
    assert strip.bottom() < window.statusBar().geometry().top(), "summary below the window"
    for label in summary.findChildren(QLabel):
        if label.isVisible() and label.text():
            r = rect_in(label, summary)
            assert summary.rect().contains(r), f"{label.text()[:40]!r} sticks out of the strip"
            need = label.heightForWidth(label.width())
            assert label.height() >= need, f"{label.text()[:40]!r} cut: {label.height()} < {need}"


def check_text_sizes(window: MainWindow) -> None:
    """The headline is the biggest text on screen; the payoff line is second."""
    summary = window.stage.summary
    assert summary.payoff.isVisible() and "appeared after" in summary.payoff.text()

    def height(w: QWidget) -> int:
        return QFontMetrics(w.font()).height()

    others = [
        w
        for w in window.findChildren(QWidget)
        if isinstance(w, QLabel | QAbstractButton | QComboBox)
        and w.isVisible()
        and w not in (summary.headline, summary.payoff)
    ]
    biggest = max(others, key=height)
    assert height(summary.headline) > height(summary.payoff) > height(biggest), (
        f"headline {height(summary.headline)} px, payoff {height(summary.payoff)} px, "
        f"{biggest!r} {height(biggest)} px"
    )


@pytest.mark.asyncio
@pytest.mark.parametrize("n", NS)
@pytest.mark.parametrize(("size", "scale"), SIZES, ids=lambda v: str(v))
async def test_every_size_and_n_is_legible(
    sim_short: Any, window_at: Any, size: tuple[int, int], scale: float, n: int
) -> None:
    plan, questions, events = await recorded_run(sim_short, n)
    qs = question_set(n)
    window = window_at(size, scale, AppSettings(question_set=qs))
    await replay_into(window, plan, questions, events)
    labels = [question_label(q.text, q.title) for q in qs.questions]
    # the sidebar hides itself on a narrow window (a projector) until the user chooses
    assert window.sidebar.isVisible() == (size[0] >= 1000 * scale)
    check_toolbar(window)
    combined = [p for p in window.stage.panes.values() if p not in window.stage.grid.panes]
    assert len(combined) == 1
    check_pane_header(combined[0], None)
    check_columns(window, combined[0])
    check_grid(window, n, labels)
    check_timeline(window, n, labels)
    # the key picture: the combined bar and every parallel bar in sight, named one by one
    # or packed into one "Parallel (N)" block, never scrolled away
    timeline = window.stage.timeline
    assert timeline.lanes_shown == len(timeline.lanes), (
        f"{timeline.lanes_shown} of {len(timeline.lanes)} lanes in sight"
    )
    check_summary(window)
    check_text_sizes(window)


@pytest.mark.asyncio
@pytest.mark.parametrize("n", [8, 12])
async def test_a_small_window_keeps_a_line_of_the_combined_answer(window_at: Any, n: int) -> None:
    """1024 × 768 with 12 questions: the combined column's title on two lines (beside the
    parallel one's one) had left the combined pane its header and figures only, its text
    squeezed out of sight."""
    qs = question_set(n)
    settings = AppSettings(question_set=qs, endpoint=EndpointSettings(speed=8.0))
    window = window_at((1024, 768), 1.0, settings)
    window.run_button.click()  # live: the summary's lines as a run leaves them
    await wait_signal(window.runFinished, 90, "the run to finish")
    await settled(window)
    combined = [p for p in window.stage.panes.values() if p not in window.stage.grid.panes]
    check_columns(window, combined[0])
    check_timeline(window, n, [question_label(q.text, q.title) for q in qs.questions])


CJK = [
    "为什么天空是蓝色的而不是其他颜色呢？",
    "疫苗是如何训练人体免疫系统的？",
    "通货膨胀对普通家庭的储蓄有什么影响？",
    "冰箱是怎样让食物保持低温的？",
    "为什么人需要睡觉以及睡眠不足会怎样？",
    "全球定位系统如何知道手机的位置？",
    "为什么冰会浮在水面上？",
    "蜜蜂是怎样找到回蜂巢的路的？",
]


@pytest.mark.asyncio
@pytest.mark.parametrize("n", [5, 8])
@pytest.mark.parametrize(("size", "scale"), SIZES[1:3], ids=lambda v: str(v))
async def test_chinese_questions_fit_their_panes_and_lanes(
    sim_short: Any, window_at: Any, size: tuple[int, int], scale: float, n: int
) -> None:
    """Questions with no spaces get labels a few characters long (core/run/labels.py), so
    no pane is wider than the grid and every header and lane name is whole."""
    texts = CJK[:n]
    plan = make_plan("side-by-side", texts, CombinedTemplate(), None)
    events: list[RunEvent] = []
    endpoint = EndpointConfig(sim_short.openai_base_url, "openai-chat", "splitdesk-sim")
    await Runner(RunConfig(endpoint), events.append).run(texts, plan)
    qs = QuestionSet(title="中文", questions=[Question(text=t) for t in texts])
    window = window_at(size, scale, AppSettings(question_set=qs))
    await replay_into(window, plan, texts, events)
    labels = [question_label(t) for t in texts]
    assert all(len(label) <= 6 for label in labels), labels
    check_grid(window, n, labels)
    check_timeline(window, n, labels)


@pytest.mark.asyncio
async def test_the_sidebar_choice_is_remembered(window_at: Any) -> None:
    window = window_at((1920, 1080), 1.0, AppSettings())
    await wait_until(lambda: window._sized, 5)
    assert window.sidebar.isVisible() and window.settings.sidebar_collapsed is None
    window.sidebar_button.click()
    assert not window.sidebar.isVisible()
    assert window._persisted().sidebar_collapsed is True
    again = window_at((1920, 1080), 1.0, window._persisted())
    await wait_until(lambda: again._sized, 5)
    assert not again.sidebar.isVisible()
    again.endpoint_button.click()  # choosing the endpoint brings the sidebar back
    assert again.sidebar.isVisible() and again.sidebar.currentIndex() == 1
    assert again._persisted().sidebar_collapsed is False


def assert_whole_lines(pane: RequestPane) -> None:
    """The pane's text area shows whole lines only: the last line in sight ends inside it
    (a line's last 2 px are leading below the descenders)."""
    text = pane.text
    viewport = text.viewport()
    last = text.cursorRect(text.cursorForPosition(QPoint(2, viewport.height() - 1)))
    assert last.bottom() <= viewport.height() + 1, (
        f"{pane.badge.text()}: a line from y={last.top()} to {last.bottom()} is cut at "
        f"{viewport.height()} px"
    )
    spare = text.viewportMargins().bottom()  # less than a line stays empty, never more
    assert spare < text.line_pitch(), f"{pane.badge.text()}: {spare} px left empty below"


@pytest.mark.asyncio
async def test_a_projector_shows_every_lane_at_five_questions(
    sim_short: Any, window_at: Any
) -> None:
    """1280×720 ×1.5 with 5 questions and the server lane polling the built-in endpoint's
    /metrics: the timeline shows all 6 lanes without scrolling; the server lane gives way
    (folded or hidden, and View → Server lane says so); a parallel pane stays in sight and
    every pane in sight shows whole lines of text."""
    plan, questions, events = await recorded_run(sim_short, 5)
    window = window_at((1280, 720), 1.5, AppSettings(question_set=question_set(5)))
    controller = window.controller
    controller.runPlanned.emit(plan, questions)
    state = RunState()
    controller.runStarted.emit(state)
    lane = window.stage.server_lane
    lane.start(state, window.endpoint.settings(), sim_short.url)  # as a live run on the sim
    assert lane.polling()
    for ev in events:
        state.apply(ev)
    controller.runFinished.emit(state)
    await settled(window)
    timeline = window.stage.timeline
    assert len(timeline.lanes) == 6
    assert timeline.lanes_shown == 6 and timeline.lane_top == 0, (
        f"{timeline.lanes_shown} of 6 lanes in sight"
    )
    assert not timeline.lane_bar.isVisible()
    check_timeline(window, 5, [question_label(q.text, q.title) for q in question_set(5).questions])
    assert lane.fold in ("line", "off")
    assert lane.isVisible() == (lane.fold == "line")
    assert lane.action.isChecked() == (lane.fold == "line")
    hidden = window.stage.grid.hidden_panes()
    assert len(hidden) < 5, "no parallel pane in sight"
    check_summary(window)
    for pane in window.stage.panes.values():
        if pane.isVisible() and pane not in hidden:
            assert_whole_lines(pane)
    # the user's choice wins: View → Server lane shows it whole; the lanes then scroll
    if lane.fold == "line":  # shown as its caption line (checked): the first choice hides
        lane.action.trigger()
        await settled(window)
        assert lane.fold == "off" and not lane.isVisible()
    lane.action.trigger()
    await settled(window)
    assert lane.fold == "open" and lane.fold_by_user == "open" and lane.isVisible()
    assert lane.plot.isVisible()
    if timeline.lanes_shown < 6:
        assert timeline.lane_bar.isVisible()


@pytest.mark.asyncio
async def test_dependent_questions_leave_no_empty_parallel_column(
    sim_short: Any, window_at: Any
) -> None:
    """Combined vs the chain (dependent questions) has no parallel request: the parallel
    column is hidden and the combined and sequential panes take the width; the next
    side-by-side run brings it back."""
    window = window_at((1920, 1080), 1.5, AppSettings())
    questions = question_set(2).texts
    plan = make_plan("dependent", questions, CombinedTemplate(), None)
    window.controller.runPlanned.emit(plan, questions)
    await settled(window)
    right = window.stage.grid.parentWidget()
    assert right is not None and not right.isVisible()
    left = window.stage.pane_split.widget(0)
    assert left.width() >= window.stage.pane_split.width() - 2, "the panes do not take the width"
    assert len(set(window.stage.panes.values())) == 2  # combined, and one pane for the chain
    side = make_plan("side-by-side", questions, CombinedTemplate(), None)
    window.controller.runPlanned.emit(side, questions)
    await settled(window)
    assert right.isVisible() and len(window.stage.grid.panes) == 2


@pytest.fixture(scope="module")
def sim_single_slot() -> Iterator[Any]:
    """The built-in endpoint with one slot (short answers, 8×): its summary says the most
    (the plain words, the Why line, the one-after-another offer), leaving the panes least."""
    from splitdesk.sim.launcher import start_sim

    sim = start_sim("single-slot", {"speed": 8, "answer_tokens": 24})
    try:
        yield sim
    finally:
        sim.stop()


@pytest.mark.asyncio
@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize(("size", "scale"), SIZES[1:3], ids=lambda v: str(v))
async def test_a_few_questions_under_the_tallest_summary_are_all_in_sight(
    sim_single_slot: Any, window_at: Any, size: tuple[int, int], scale: float, n: int
) -> None:
    """Two parallel panes fit side by side even when the summary under them takes most of
    the height (a single-slot run at 1280×720 ×1.5 showed one pane, wide, and "+1 more ↓
    scroll" beside empty room for the other); three are whole or reachable. A grid a few
    pixels either side of two columns lays out once (its scroll bar flipping on and off
    had re-laid it out until the stack overflowed)."""
    questions = question_set(n).texts
    plan = make_plan("side-by-side", questions, CombinedTemplate(), None)
    events: list[RunEvent] = []
    endpoint = EndpointConfig(sim_single_slot.openai_base_url, "openai-chat", "splitdesk-sim")
    await Runner(RunConfig(endpoint), events.append).run(questions, plan)
    qs = question_set(n)
    window = window_at(size, scale, AppSettings(question_set=qs))
    await replay_into(window, plan, questions, events)
    assert "one request at a time" in window.stage.summary.headline.text()
    labels = [question_label(q.text, q.title) for q in qs.questions]
    check_grid(window, n, labels)  # three: what does not fit is reachable, visibly
    if n == 2:  # two panes fit side by side at both sizes: both in sight
        assert window.stage.grid.hidden_panes() == [], "a parallel pane out of sight"
    check_summary(window)
    # every width around it, in steps of 3 px, lays out once and stays consistent
    for width in range(size[0] - 60, size[0] + 1, 3):
        window.resize(width, size[1])
        await settled(window)
        check_grid(window, n, labels)


@pytest.fixture(scope="module")
def sim_batching() -> Iterator[Any]:
    """The built-in endpoint as the app starts it (batching, answers of their own length)
    at 8×: the default run's summary, plain words and Why line in two lines each."""
    from splitdesk.sim.launcher import start_sim

    sim = start_sim("batching", {"speed": 8})
    try:
        yield sim
    finally:
        sim.stop()


@pytest.mark.asyncio
@pytest.mark.parametrize(("size", "scale"), SIZES[1:3], ids=lambda v: str(v))
async def test_the_why_line_gives_way_to_every_lane(
    sim_batching: Any, window_at: Any, size: tuple[int, int], scale: float
) -> None:
    """The default run of five questions: at 1280×720 ×1.5 the Why line gives way to the
    strip's tooltip, after the details line, so every timeline lane stays in sight (the
    five parallel lanes were packed into slivers under a summary of six lines); at
    1920×1080 it stays. The plain words stay at both."""
    questions = question_set(5).texts
    plan = make_plan("side-by-side", questions, CombinedTemplate(), None)
    events: list[RunEvent] = []
    endpoint = EndpointConfig(sim_batching.openai_base_url, "openai-chat", "splitdesk-sim")
    await Runner(RunConfig(endpoint), events.append).run(questions, plan)
    window = window_at(size, scale, AppSettings(question_set=question_set(5)))
    await replay_into(window, plan, questions, events)
    summary, timeline = window.stage.summary, window.stage.timeline
    assert summary.why_text.startswith("<b>Why:</b>")
    assert timeline.lanes_shown == len(timeline.lanes) == 6 and not timeline.packed, (
        f"{timeline.lanes_shown} of {len(timeline.lanes)} lanes in sight, packed {timeline.packed}"
    )
    assert summary.plain and summary.plain in summary.explain.text()  # always stays
    if size == (1280, 720):
        assert not summary.why_shown and "Why:" not in summary.explain.text()
        assert summary.why_text in summary.toolTip()  # on hover
    else:
        assert summary.why_shown and summary.why_text in summary.explain.text()
    check_summary(window)


@pytest.mark.asyncio
async def test_the_default_run_at_the_default_size_shows_every_parallel_pane(
    window_at: Any,
) -> None:
    """The first thing a newcomer sees: Run pressed on the default five questions, the
    built-in endpoint and its server lane, in a window of the default size (1500 × 940):
    all five parallel panes in sight, each with its last line of text whole. With two
    lines each, the fifth was out of sight ("+1 more ↓ scroll") under ~100 px of empty
    rows."""
    qs = question_set(5)
    settings = AppSettings(question_set=qs, endpoint=EndpointSettings(speed=4.0))
    window = window_at((1500, 940), 1.0, settings)
    window.run_button.click()
    await wait_signal(window.runFinished, 90, "the default run to finish")
    await settled(window)
    assert window.stage.server_lane.isVisible(), "the built-in endpoint's server lane"
    grid = window.stage.grid
    hidden = [p.badge.text() for p in grid.hidden_panes()]
    assert hidden == [], f"out of sight: {hidden}"
    assert not grid.more_label.isVisible()
    labels = [question_label(q.text, q.title) for q in qs.questions]
    check_grid(window, 5, labels)
    inner, shown = grid.widget(), grid._shown_rect()
    for pane in grid.panes:  # the text's last line in sight, whole
        text = rect_in(pane.text, inner)
        assert shown.contains(text), f"{pane.badge.text()}'s text cut at the grid's edge"
        assert pane.text.viewport().height() >= pane.text.fontMetrics().lineSpacing()
    check_summary(window)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("size", "n"), [((1500, 940), 8), ((1920, 1080), 8), ((1500, 940), 5)], ids=str
)
async def test_refused_panes_show_their_message_whole_or_clamped_never_cut(
    window_at: Any, size: tuple[int, int], n: int
) -> None:
    """The rate-limited profile refuses all but one parallel request. Each refused pane
    in sight shows its message whole, or its last line that fits ending in "…" (whole on
    hover); its empty text view is hidden (it had kept empty lines under the message,
    a scroll bar's stub in them where squeezed). Rows of 125 px had cut a three-line
    message mid-line at 1500 × 940 with eight questions."""
    qs = question_set(n)
    endpoint = EndpointSettings(profile="rate-limited", speed=4.0)
    window = window_at(size, 1.0, AppSettings(question_set=qs, endpoint=endpoint))
    window.run_button.click()
    await wait_signal(window.runFinished, 90, "the rate-limited run to finish")
    await settled(window)
    grid = window.stage.grid
    refused = [p for p in grid.panes if not p.error.isHidden()]
    assert len(refused) >= n - 2, "the profile refuses all but one or two"
    hidden = grid.hidden_panes()
    shown = grid._shown_rect()
    inner = grid.widget()
    for pane in refused:
        assert pane.no_text and not pane.text.isVisible(), f"{pane.badge.text()}: empty view"
        if pane in hidden:
            continue
        error = pane.error
        assert error.height() >= error.heightForWidth(error.width()), (
            f"{pane.badge.text()}'s message cut: {error.height()} of "
            f"{error.heightForWidth(error.width())} px"
        )
        assert error.text() == error.full_text() or error.text().endswith("…")
        assert rect_in(error, inner).bottom() <= rect_in(pane, inner).bottom()
        assert shown.contains(rect_in(pane.badge, inner)), f"{pane.badge.text()}'s header"
    labels = [question_label(q.text, q.title) for q in qs.questions]
    check_grid(window, n, labels)


@pytest.mark.asyncio
@pytest.mark.parametrize(("size", "scale"), SIZES[1:3], ids=lambda v: str(v))
async def test_three_ways_keep_the_window_the_size_asked(
    sim_batching: Any, window_at: Any, size: tuple[int, int], scale: float
) -> None:
    """Combined, sequential and parallel one after another: at 1280×720 ×1.5 the summary's
    speed-up split and Why lines give way to its tooltip so the window stays 720 pixels
    tall (its strip of eight lines had made the window 789 tall: 69 pixels off a
    projector's screen); at 1920×1080 every line stays. The plain words stay at both."""
    questions = question_set(5).texts
    plan = make_plan("one-after-another", questions, CombinedTemplate(), None, with_sequential=True)
    events: list[RunEvent] = []
    endpoint = EndpointConfig(sim_batching.openai_base_url, "openai-chat", "splitdesk-sim")
    await Runner(RunConfig(endpoint), events.append).run(questions, plan)
    window = window_at(size, scale, AppSettings(question_set=question_set(5)))
    await replay_into(window, plan, questions, events)
    summary = window.stage.summary
    assert window.size().toTuple() == size, f"the window is {window.size().toTuple()}"
    assert window.minimumSizeHint().height() <= size[1]
    assert summary.split_text and summary.why_text.startswith("<b>Why:</b>")
    assert summary.plain and summary.plain in summary.explain.text()  # always stays
    if size == (1280, 720):
        assert not summary.split_shown and summary.split_text not in summary.explain.text()
        assert not summary.why_shown and "Why:" not in summary.explain.text()
        assert summary.split_text in summary.toolTip() and summary.why_text in summary.toolTip()
    else:
        assert summary.split_shown and summary.split_text in summary.explain.text()
        assert summary.why_shown and summary.why_text in summary.explain.text()
        assert summary.payoff.isVisible() and "appeared after" in summary.payoff.text()
    check_summary(window)
