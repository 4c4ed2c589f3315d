"""The questions editor: the ordered questions a run asks, and the combined template.

Rows can be added, removed, duplicated and reordered (drag, or Ctrl+↑/↓); pasting several
lines makes one question per line; empty rows are flagged and skipped. Each question's
number badge has the colour that question has everywhere else (panes, timeline). Question
sets load from and save to TOML or plain text (:mod:`splitdesk.core.run.questions`), off the
GUI thread.

The shared context (the document the questions are about, sent first in every prompt:
:mod:`splitdesk.core.run.template`) has its own fold: its text, a file to load it from, where
it goes (user or system message), Anthropic's cache mark, and its size in tokens —
estimated (:func:`~splitdesk.core.run.template.estimated_tokens`) until a run's server
counts it (:meth:`QuestionsEditor.show_server_count`).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import ClassVar

import qasync
from pydantic import ValidationError
from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import (
    QBrush,
    QColor,
    QGuiApplication,
    QIcon,
    QKeyEvent,
    QKeySequence,
    QPainter,
    QPixmap,
)
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from splitdesk.core.files.question_sets import save_question_set
from splitdesk.core.run.labels import question_label
from splitdesk.core.run.questions import (
    DEFAULT_SET,
    Question,
    QuestionFileError,
    QuestionSet,
    builtin_sets,
    load_question_set,
    question_text,
    read_context_file,
)
from splitdesk.core.run.template import CombinedTemplate, estimated_tokens
from splitdesk.ui.common.theme import Theme, lane_color

MIN_QUESTIONS = 2
#: Item data role holding a row's title from its question set (its short label).
TITLE_ROLE = Qt.ItemDataRole.UserRole + 1
#: The text the title was given for (an edit to the text drops the title).
TITLE_TEXT_ROLE = Qt.ItemDataRole.UserRole + 2


def badge_icon(number: int, color: QColor, size: int = 22) -> QIcon:
    """A round badge with ``number`` on ``color`` (grey and empty for skipped rows)."""
    pix = QPixmap(size, size)
    pix.fill(Qt.GlobalColor.transparent)
    p = QPainter(pix)
    p.setRenderHint(QPainter.RenderHint.Antialiasing)
    p.setBrush(QBrush(color))
    p.setPen(Qt.PenStyle.NoPen)
    p.drawEllipse(1, 1, size - 2, size - 2)
    if number:
        p.setPen(QColor("#101217"))
        font = p.font()
        font.setBold(True)
        font.setPixelSize(int(size * 0.55))
        p.setFont(font)
        p.drawText(pix.rect(), Qt.AlignmentFlag.AlignCenter, str(number))
    p.end()
    return QIcon(pix)


class QuestionList(QListWidget):
    """Editable, drag-reorderable rows with keyboard editing.

    Signals:
        pasted(list): Ctrl+V with text; one question per non-empty line.
        command(str): a key asked for ``add`` (Ctrl+N), ``duplicate`` (Ctrl+D), ``remove``
            (Delete), ``up`` or ``down`` (Ctrl+↑/↓).
    """

    pasted = Signal(list)
    command = Signal(str)

    KEYS: ClassVar[dict[tuple[Qt.Key, bool], str]] = {
        (Qt.Key.Key_N, True): "add",
        (Qt.Key.Key_D, True): "duplicate",
        (Qt.Key.Key_Up, True): "up",
        (Qt.Key.Key_Down, True): "down",
        (Qt.Key.Key_Delete, False): "remove",
    }

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.matches(QKeySequence.StandardKey.Paste):
            text = QGuiApplication.clipboard().text()
            lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
            if lines:
                self.pasted.emit(lines)
                return
        ctrl = bool(event.modifiers() & Qt.KeyboardModifier.ControlModifier)
        command = self.KEYS.get((Qt.Key(event.key()), ctrl))
        if command is not None:
            self.command.emit(command)
            return
        super().keyPressEvent(event)


class QuestionsEditor(QWidget):
    """Edits the questions and the template.

    Signals:
        changed(): questions, their order or the template changed.
        message(str): something for the status bar (a file loaded, an error).
    """

    changed = Signal()
    message = Signal(str)

    def __init__(self, theme: Theme, scale: float = 1.0, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.theme = theme
        self.scale = scale
        self._sets = builtin_sets()
        self._title = "Untitled"
        self._updating = False
        self._locked = False

        self.set_combo = QComboBox()
        self.set_combo.setToolTip("Built-in question sets")
        for key, qs in self._sets.items():
            self.set_combo.addItem(qs.title, key)
        self.set_combo.activated.connect(self._choose_set)
        open_button = QToolButton()
        open_button.setText("Open…")
        open_button.setToolTip(
            "Load a question set (TOML, or plain text with one question per line)"
        )
        open_button.clicked.connect(self._open)
        save_button = QToolButton()
        save_button.setText("Save…")
        save_button.setToolTip("Save these questions and the template as a TOML question set")
        save_button.clicked.connect(self._save)
        top = QHBoxLayout()
        top.addWidget(self.set_combo, 1)
        files_row = QHBoxLayout()
        files_row.addWidget(open_button)
        files_row.addWidget(save_button)
        files_row.addStretch(1)
        self.set_combo.setMinimumContentsLength(12)
        self.set_combo.setSizeAdjustPolicy(
            QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon
        )

        self.list = QuestionList()
        self.list.setDragDropMode(QAbstractItemView.DragDropMode.InternalMove)
        self.list.setDefaultDropAction(Qt.DropAction.MoveAction)
        self.list.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.list.setWordWrap(True)
        self.list.setIconSize(QSize(int(22 * scale), int(22 * scale)))
        self.list.setSpacing(2)
        self.list.setEditTriggers(
            QAbstractItemView.EditTrigger.DoubleClicked
            | QAbstractItemView.EditTrigger.EditKeyPressed
            | QAbstractItemView.EditTrigger.SelectedClicked
        )
        self.list.itemChanged.connect(self._item_changed)
        self.list.model().rowsMoved.connect(lambda *_: self._renumber())
        self.list.pasted.connect(self.paste_lines)

        def button(text: str, tip: str, slot: object) -> QToolButton:
            b = QToolButton()
            b.setText(text)
            b.setToolTip(tip)
            b.clicked.connect(slot)
            self._buttons.append(b)
            return b

        for b in (open_button, save_button):
            b.setMinimumWidth(b.sizeHint().width())  # never "Op…": the sidebar grows instead

        self._buttons: list[QToolButton] = [open_button, save_button]
        row = QHBoxLayout()
        row.setSpacing(4)
        row.addWidget(button("+ Add", "Add a question (Ctrl+N)", self.add_empty))
        row.addWidget(button("Copy", "Duplicate the selected question (Ctrl+D)", self.duplicate))
        for text, tip, slot in (
            ("↑", "Move up (Ctrl+↑)", lambda: self.move_row(-1)),
            ("↓", "Move down (Ctrl+↓)", lambda: self.move_row(1)),
            ("✕", "Remove the selected question (Delete)", self.remove),
        ):
            b = button(text, tip, slot)
            b.setProperty("compact", True)  # one symbol: less side padding (style sheet)
            row.addWidget(b)
        for b in self._buttons[2:]:  # a squeezed row would elide "+ Add" to "+…d"
            b.setMinimumWidth(b.sizeHint().width())
        row.addStretch(1)
        self.list.command.connect(self._command)
        self.problem_label = QLabel("")
        self.problem_label.setObjectName("problem")
        self.problem_label.setWordWrap(True)
        hint = QLabel(
            "Double-click to edit · drag to reorder · paste several lines to add them all"
        )
        hint.setObjectName("hint")
        hint.setWordWrap(True)

        self.template_toggle = QToolButton()
        self.template_toggle.setCheckable(True)
        self.template_toggle.setAutoRaise(True)
        self.template_toggle.setText("▸ Prompt template (advanced)")
        self.template_toggle.toggled.connect(self._show_template)
        self.template_box = QWidget()
        self.template_text = QPlainTextEdit()
        self.template_text.setToolTip(
            "{n}: number of questions · {marker}: the marker with a literal k · {questions}: the numbered list"
        )
        self.template_text.setMinimumHeight(int(110 * scale))
        self.template_marker = QLineEdit()
        self.template_marker.setToolTip(
            "Each answer must begin with this line; {k} is the question's number"
        )
        self.template_error = QLabel("")
        self.template_error.setObjectName("problem")
        self.template_error.setWordWrap(True)
        reset = QPushButton("Reset to default")
        reset.clicked.connect(lambda: self.set_template(CombinedTemplate()))
        tl = QVBoxLayout(self.template_box)
        tl.setContentsMargins(0, 0, 0, 0)
        tl.addWidget(self.template_text)
        marker_row = QHBoxLayout()
        marker_row.addWidget(QLabel("Answer marker"))
        marker_row.addWidget(self.template_marker, 1)
        tl.addLayout(marker_row)
        tl.addWidget(self.template_error)
        tl.addWidget(reset, 0, Qt.AlignmentFlag.AlignRight)
        self.template_box.hide()
        self.template_error.hide()
        self.template_text.textChanged.connect(self._template_edited)
        self.template_marker.textChanged.connect(self._template_edited)
        self._template = CombinedTemplate()
        self._build_context(scale)

        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addLayout(top)
        lay.addLayout(files_row)
        lay.addWidget(self.list, 1)
        lay.addLayout(row)
        lay.addWidget(self.problem_label)
        lay.addWidget(hint)
        lay.addWidget(self.context_toggle, 0, Qt.AlignmentFlag.AlignLeft)
        lay.addWidget(self.context_box)
        lay.addWidget(self.template_toggle, 0, Qt.AlignmentFlag.AlignLeft)
        lay.addWidget(self.template_box)
        self.set_question_set(self._sets[DEFAULT_SET])

    def _build_context(self, scale: float) -> None:
        """The shared context's fold (module docstring)."""
        self._context = ""
        self._context_file = ""
        self._context_source = ""
        #: the server's count for the context (``None``: the estimate is shown)
        self._server_count: int | None = None
        self.context_toggle = QToolButton()
        self.context_toggle.setCheckable(True)
        self.context_toggle.setAutoRaise(True)
        self.context_toggle.toggled.connect(self._show_context)
        self.context_box = QWidget()
        self.context_text = QPlainTextEdit()
        self.context_text.setPlaceholderText(
            "A document every question is about (a contract, a code file, a passage): "
            "sent first in every prompt — once in the combined request, in each parallel one"
        )
        self.context_text.setMinimumHeight(int(90 * scale))
        self.context_text.textChanged.connect(self._context_edited)
        self.context_size = QLabel("")
        self.context_size.setObjectName("hint")
        self.context_size.setWordWrap(True)
        self.context_place = QComboBox()
        self.context_place.addItem("start of the user message", "user")
        self.context_place.addItem("system message", "system")
        self.context_place.setToolTip(
            "Where the context goes. A system message: openai-chat, azure-openai, anthropic, "
            "openai-responses (instructions), ollama-chat, ollama-generate; openai-completions "
            "and tgi have no system role, so it opens their prompt"
        )
        self.context_place.activated.connect(lambda _i: self._context_options())
        self.context_cache = QCheckBox("Anthropic: mark it for caching (cache_control)")
        self.context_cache.setToolTip(
            "Anthropic caches only marked prefixes of 1,024 tokens or more; other servers "
            "cache on their own and ignore the mark"
        )
        self.context_cache.toggled.connect(lambda _on: self._context_options())
        load = QToolButton()
        load.setText("Load file…")
        load.setToolTip("Read the context from a UTF-8 text file")
        load.clicked.connect(self._open_context)
        clear = QToolButton()
        clear.setText("Clear")
        clear.clicked.connect(lambda: self.set_context(""))
        self._buttons += [load, clear]
        cl = QVBoxLayout(self.context_box)
        cl.setContentsMargins(0, 0, 0, 0)
        cl.addWidget(self.context_text)
        cl.addWidget(self.context_size)
        place_row = QHBoxLayout()
        place_row.addWidget(QLabel("Send as"))
        place_row.addWidget(self.context_place, 1)
        cl.addLayout(place_row)
        cl.addWidget(self.context_cache)
        files_row = QHBoxLayout()
        files_row.addWidget(load)
        files_row.addWidget(clear)
        files_row.addStretch(1)
        cl.addLayout(files_row)
        self.context_box.hide()
        self._show_context_size()

    def set_locked(self, locked: bool) -> None:
        """While a run is on: the rows stay readable (with their colours) but not editable."""
        self.list.setDragDropMode(
            QAbstractItemView.DragDropMode.NoDragDrop
            if locked
            else QAbstractItemView.DragDropMode.InternalMove
        )
        self.list.setEditTriggers(
            QAbstractItemView.EditTrigger.NoEditTriggers
            if locked
            else QAbstractItemView.EditTrigger.DoubleClicked
            | QAbstractItemView.EditTrigger.EditKeyPressed
            | QAbstractItemView.EditTrigger.SelectedClicked
        )
        self._locked = locked
        for b in self._buttons:
            b.setEnabled(not locked)
        self.set_combo.setEnabled(not locked)
        self.template_box.setEnabled(not locked)
        self.context_text.setReadOnly(locked)
        self.context_place.setEnabled(not locked)
        self.context_cache.setEnabled(not locked)

    # -- model ---------------------------------------------------------------------------------
    def question_set(self) -> QuestionSet:
        """The rows as a question set (empty rows included), with the template."""
        items = [self.list.item(i) for i in range(self.list.count())]
        template = self._template if self._template != CombinedTemplate() else None
        return QuestionSet(
            title=self._title,
            questions=[Question(text=it.text(), title=self._row_title(it)) for it in items],
            template=template,
            context=self._context,
            context_file=self._context_file,
        )

    def context(self) -> str:
        """The shared context a run sends first in every prompt (``""``: none)."""
        return self._context

    def labels(self) -> list[str]:
        """The short label of each non-empty question, in :meth:`questions` order: its
        title from the set, else one derived from its text (:mod:`splitdesk.core.run.labels`)."""
        items = (self.list.item(i) for i in range(self.list.count()))
        return [
            question_label(it.text(), self._row_title(it))
            for it in items
            if question_text(it.text())
        ]

    @staticmethod
    def _row_title(item: QListWidgetItem) -> str:
        title = item.data(TITLE_ROLE)
        return title if isinstance(title, str) else ""

    def questions(self) -> list[str]:
        """Non-empty question texts, in order."""
        texts = (question_text(self.list.item(i).text()) for i in range(self.list.count()))
        return [t for t in texts if t]

    def template(self) -> CombinedTemplate:
        """The combined template in use (the last valid edit)."""
        return self._template

    def problem(self) -> str | None:
        """Why Run must wait, or ``None``."""
        n = len(self.questions())
        if n < MIN_QUESTIONS:
            return f"Add at least {MIN_QUESTIONS} questions to compare one combined request with parallel ones ({n} now)."
        if self.template_error.text():
            return "Fix the combined prompt template first."
        return None

    def set_question_set(self, qs: QuestionSet) -> None:
        """Show ``qs`` (its template too, when it has one)."""
        self._updating = True
        self.list.clear()
        for q in qs.questions:
            self._append(q.text, title=q.title)
        self._title = qs.title
        self._updating = False
        self.set_template(qs.template or CombinedTemplate())
        self.set_context(qs.context, qs.context_file)
        self._renumber()

    def set_template(self, template: CombinedTemplate) -> None:
        self._template = template
        self._updating = True
        self.template_text.setPlainText(template.text)
        self.template_marker.setText(template.marker)
        self.context_place.setCurrentIndex(max(0, self.context_place.findData(template.context_as)))
        self.context_cache.setChecked(template.cache_control)
        self._updating = False
        self.template_error.setText("")
        self.changed.emit()

    def set_context(self, text: str, file: str = "", source: str = "") -> None:
        """Show ``text`` as the shared context: a set's ``context_file`` ``file`` (kept, so
        saving the set keeps the reference), or read from ``source`` (a name to show; the
        text is saved into the set), or typed (both ``""``)."""
        self._updating = True
        self.context_text.setPlainText(text)
        self._updating = False
        self._context, self._context_file = text, file
        self._context_source = file or source
        self._server_count = None
        self._show_context_size()
        self.changed.emit()

    def show_server_count(self, tokens: int | None) -> None:
        """What a run's server counted for a request carrying the context
        (:func:`splitdesk.core.analyse.metrics.context_prompt_tokens`); ``None`` keeps the
        estimate."""
        self._server_count = tokens
        self._show_context_size()

    def _show_context_size(self) -> None:
        text = self._context
        if not text.strip():
            self.context_toggle.setText(
                f"{'▾' if self.context_toggle.isChecked() else '▸'} Shared context (none)"
            )
            self.context_size.setText("No shared context: each prompt is its question alone.")
            return
        estimate = estimated_tokens(text)
        if self._server_count is not None:
            size = f"{self._server_count:,} tokens"
            detail = (
                f"{self._server_count:,} prompt tokens per parallel request, the server's "
                f"count (the context, its question and the run's first line); estimated "
                f"{estimate:,} for the context alone"
            )
        else:
            size = f"≈ {estimate:,} tokens"
            detail = (
                f"≈ {estimate:,} tokens, estimated at 4 characters a token ({len(text):,} "
                "characters) until a server counts it"
            )
        source = f" · from {self._context_source}" if self._context_source else ""
        arrow = "▾" if self.context_toggle.isChecked() else "▸"
        self.context_toggle.setText(f"{arrow} Shared context · {size}")
        self.context_size.setText(detail + source)

    def _show_context(self, shown: bool) -> None:
        self.context_box.setVisible(shown)
        self._show_context_size()

    def _context_edited(self) -> None:
        if self._updating:
            return
        self._context = self.context_text.toPlainText()
        self._context_file = self._context_source = ""  # typed over: not the file's text
        self._server_count = None
        self._show_context_size()
        self.changed.emit()

    def _context_options(self) -> None:
        if self._updating:
            return
        place = self.context_place.currentData()
        self._template = self._template.model_copy(
            update={"context_as": place, "cache_control": self.context_cache.isChecked()}
        )
        self.changed.emit()

    @qasync.asyncSlot()
    async def _open_context(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Load the shared context", "", "Text (*.txt *.md);;All files (*)"
        )
        if path:
            await self.load_context(Path(path))

    async def load_context(self, path: Path) -> bool:
        """Read a context file (in a worker thread); errors go to ``message``."""
        try:
            text = await asyncio.to_thread(read_context_file, str(path), None)
        except QuestionFileError as exc:
            self.message.emit(f"Could not load the context: {exc}")
            return False
        self.set_context(text, source=path.name)
        self.message.emit(f"Loaded the shared context from {path.name}")
        return True

    # -- editing --------------------------------------------------------------------------------
    def _append(self, text: str, row: int | None = None, title: str = "") -> QListWidgetItem:
        item = QListWidgetItem(text)
        if title:
            item.setData(TITLE_ROLE, title)
            item.setData(TITLE_TEXT_ROLE, text)
        item.setFlags(
            Qt.ItemFlag.ItemIsEnabled
            | Qt.ItemFlag.ItemIsSelectable
            | Qt.ItemFlag.ItemIsEditable
            | Qt.ItemFlag.ItemIsDragEnabled
        )
        if row is None:
            self.list.addItem(item)
        else:
            self.list.insertItem(row, item)
        return item

    def add_empty(self) -> None:
        """Add a row and start editing it."""
        if self._locked:
            return
        item = self._append("")
        self._renumber()
        self.list.setCurrentItem(item)
        self.list.editItem(item)

    def paste_lines(self, lines: list[str]) -> None:
        """Insert one question per line after the selected row (or at the end)."""
        if self._locked:
            return
        row = self.list.currentRow()
        at = row + 1 if row >= 0 else self.list.count()
        self._updating = True
        for i, line in enumerate(lines):
            self._append(line, at + i)
        self._updating = False
        self._renumber()
        self.message.emit(f"Pasted {len(lines)} question{'s' if len(lines) != 1 else ''}")

    def duplicate(self) -> None:
        if self._locked:
            return
        row = self.list.currentRow()
        if row < 0:
            return
        item = self.list.item(row)
        self._append(item.text(), row + 1, self._row_title(item))
        self.list.setCurrentRow(row + 1)
        self._renumber()

    def remove(self) -> None:
        if self._locked:
            return
        row = self.list.currentRow()
        if row < 0:
            return
        self.list.takeItem(row)
        self._renumber()

    def move_row(self, step: int) -> None:
        if self._locked:
            return
        row = self.list.currentRow()
        target = row + step
        if row < 0 or not 0 <= target < self.list.count():
            return
        item = self.list.takeItem(row)
        self.list.insertItem(target, item)
        self.list.setCurrentRow(target)
        self._renumber()

    def _command(self, name: str) -> None:
        {
            "add": self.add_empty,
            "duplicate": self.duplicate,
            "remove": self.remove,
            "up": lambda: self.move_row(-1),
            "down": lambda: self.move_row(1),
        }[name]()

    def _item_changed(self, item: QListWidgetItem) -> None:
        if self._updating:
            return
        if item.data(TITLE_ROLE) is not None and item.text() != item.data(TITLE_TEXT_ROLE):
            # the question was rewritten: its set's title may no longer name it
            self._updating = True
            item.setData(TITLE_ROLE, None)
            self._updating = False
        if "\n" in item.text():  # a multi-line paste into the row editor
            lines = [ln.strip() for ln in item.text().splitlines() if ln.strip()]
            row = self.list.row(item)
            self._updating = True
            item.setText(lines[0] if lines else "")
            for i, line in enumerate(lines[1:]):
                self._append(line, row + 1 + i)
            self._updating = False
        self._renumber()

    def _renumber(self) -> None:
        """Badges and colours follow the non-empty rows' order; empty rows are flagged."""
        self._updating = True
        k = 0
        size = int(22 * self.scale)
        for i in range(self.list.count()):
            item = self.list.item(i)
            if question_text(item.text()):
                item.setIcon(badge_icon(k + 1, lane_color(k), size))
                item.setForeground(QColor(self.theme.text))
                label = question_label(item.text(), self._row_title(item))
                item.setToolTip(f"Question {k + 1} · label “{label}” (pane headers, lanes)")
                k += 1
            else:
                item.setIcon(badge_icon(0, QColor(self.theme.border), size))
                item.setForeground(QColor(self.theme.error))
                item.setToolTip("Empty: this row is skipped")
                if not item.text():
                    item.setData(Qt.ItemDataRole.DisplayRole, "")
        self._updating = False
        problem = self.problem()
        self.problem_label.setText(problem or "")
        self.problem_label.setVisible(problem is not None)
        empty = self.list.count() - k
        if empty:
            self.problem_label.setText(
                (problem + " " if problem else "") + f"{empty} empty row(s) will be skipped."
            )
            self.problem_label.show()
        self._show_set_name()
        self.changed.emit()

    def _show_set_name(self) -> None:
        """The picker names the set on screen: a built-in one while its rows are unchanged,
        else the loaded file's title (or "… (edited)") as an extra entry."""
        current = self.question_set()
        for i in range(self.set_combo.count()):
            key = self.set_combo.itemData(i)
            qs = self._sets.get(key) if isinstance(key, str) else None
            if qs is not None and qs.questions == current.questions:
                self._drop_custom_entry()
                self.set_combo.setCurrentIndex(i)
                return
        builtin = any(qs.title == self._title for qs in self._sets.values())
        name = f"{self._title} (edited)" if builtin else self._title
        custom = self.set_combo.findData(None)
        if custom < 0:
            self.set_combo.addItem(name, None)
            custom = self.set_combo.count() - 1
        self.set_combo.setItemText(custom, name)
        self.set_combo.setCurrentIndex(custom)

    def _drop_custom_entry(self) -> None:
        custom = self.set_combo.findData(None)
        if custom >= 0:
            self.set_combo.removeItem(custom)

    def _show_template(self, shown: bool) -> None:
        self.template_box.setVisible(shown)
        arrow = "▾" if shown else "▸"
        self.template_toggle.setText(f"{arrow} Prompt template (advanced)")

    def _template_edited(self) -> None:
        if self._updating:
            return
        try:
            self._template = CombinedTemplate(
                text=self.template_text.toPlainText(),
                marker=self.template_marker.text(),
                context_as=self.context_place.currentData() or "user",
                cache_control=self.context_cache.isChecked(),
            )
            self.template_error.setText("")
        except ValidationError as exc:
            self.template_error.setText(
                "; ".join(e["msg"].removeprefix("Value error, ") for e in exc.errors())
            )
        self.template_error.setVisible(bool(self.template_error.text()))
        self._renumber()

    # -- files ----------------------------------------------------------------------------------
    def _choose_set(self, index: int) -> None:
        key = self.set_combo.itemData(index)
        if key in self._sets:
            self.set_question_set(self._sets[key])

    @qasync.asyncSlot()
    async def _open(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Open question set", "", "Question sets (*.toml *.txt);;All files (*)"
        )
        if path:
            await self.load(Path(path))

    async def load(self, path: Path) -> bool:
        """Load a question-set file (read in a worker thread); errors go to ``message``."""
        try:
            qs = await asyncio.to_thread(load_question_set, path)
        except QuestionFileError as exc:
            self.message.emit(f"Could not open the question set: {exc}")
            return False
        self.set_question_set(qs)
        self.message.emit(f"Loaded {len(qs.texts)} questions from {path.name}")
        return True

    @qasync.asyncSlot()
    async def _save(self) -> None:
        path, _ = QFileDialog.getSaveFileName(
            self, "Save question set", f"{self._title}.toml", "TOML (*.toml)"
        )
        if path:
            await self.save(Path(path))

    async def save(self, path: Path) -> bool:
        """Save the rows and template as TOML (written in a worker thread)."""
        qs = self.question_set()
        try:
            await asyncio.to_thread(save_question_set, qs, path)
        except OSError as exc:
            self.message.emit(f"Could not save {path.name}: {exc.strerror or exc}")
            return False
        self.message.emit(f"Saved {len(qs.texts)} questions to {path.name}")
        return True
