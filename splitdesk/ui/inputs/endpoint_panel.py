"""The endpoint panel: where requests go and how.

Presets fill the base URL and dialect (the built-in simulator with its profile and speed
is the default); the model list comes from the endpoint ("List models"); the API key comes
from an environment variable, the OS keyring, or is kept for this session only — it is
never written to the settings file. Network and keyring work runs off the GUI thread
(coroutines on the qasync loop, ``asyncio.to_thread``); errors are shown inline.

Before any run the panel says what would stop it: a proxy or CA setting in the environment
that cannot work for this endpoint (:mod:`splitdesk.core.measure.netenv`), a keyring that cannot
keep the key (none at all, or keyring's null backend), a key variable that is not set.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

import httpx
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from splitdesk.core.measure.model_list import ModelCheck, check_models
from splitdesk.core.measure.netenv import NetworkSetupError, environment_problems
from splitdesk.core.measure.runner import classify_transport_error, redact
from splitdesk.core.measure.secrets import (
    KeyringError,
    env_key,
    keyring_get,
    keyring_set,
    keyring_status,
)
from splitdesk.core.run.endpoints import (
    BUILTIN,
    PRESETS,
    EndpointSettings,
    KeySource,
    env_defaults,
    key_env_present,
    settings_for_preset,
)
from splitdesk.logs import register_secret
from splitdesk.providers import PROVIDERS
from splitdesk.providers.base import EndpointConfig
from splitdesk.sim.params import PROFILES
from splitdesk.ui.common.tasks import SLOT_PREFIX, spawn, task_slot
from splitdesk.ui.common.theme import Theme

Resolver = Callable[[EndpointSettings, str | None], Awaitable[EndpointConfig]]

log = logging.getLogger(__name__)

KEY_SOURCES = {
    KeySource.NONE: "No key",
    KeySource.ENV: "Environment variable",
    KeySource.KEYRING: "OS keyring",
    KeySource.SESSION: "This session only",
}


#: characters a combo box keeps room for at least; wider text scrolls inside it, not the panel
COMBO_MIN_CHARS = 10


def fit_form(form: QFormLayout) -> None:
    """A form that fits any sidebar width: a label goes above its field when the two do
    not fit side by side (``WrapLongRows``), and fields take the width there is."""
    form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)
    form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)


def fit_combo(combo: QComboBox) -> None:
    """A combo box whose smallest width is :data:`COMBO_MIN_CHARS` characters, not its
    longest item's (a dialect or model name): it grows with the panel and never pushes
    the panel wider than the sidebar (a sideways scroll bar, labels cut to "se URL")."""
    combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
    combo.setMinimumContentsLength(COMBO_MIN_CHARS)
    policy = combo.sizePolicy()
    policy.setHorizontalPolicy(QSizePolicy.Policy.Expanding)
    combo.setSizePolicy(policy)


def parse_headers(text: str) -> tuple[dict[str, str], str | None]:
    """``Name: value`` lines → headers, and a problem description (or ``None``)."""
    headers: dict[str, str] = {}
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        name, sep, value = line.partition(":")
        if not sep or not name.strip() or " " in name.strip():
            return headers, f"line {n}: expected 'Name: value'"
        headers[name.strip()] = value.strip()
    return headers, None


class EndpointPanel(QWidget):
    """Edits :class:`EndpointSettings` and provides the API key.

    Signals:
        changed(): a setting changed (persist it, update the toolbar).
        message(str): a line for the status bar.
    """

    changed = Signal()
    message = Signal(str)

    def __init__(self, theme: Theme, resolver: Resolver, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.theme = theme
        self.resolver = resolver
        self._settings = EndpointSettings()
        self._session_key: str | None = None
        self._keyring_cache: dict[str, str | None] = {}
        self._loading = False

        self.preset = QComboBox()
        for key, p in PRESETS.items():
            self.preset.addItem(p.label, key)
        self.preset.activated.connect(self._preset_chosen)
        self.source_note = QLabel("")
        self.source_note.setObjectName("hint")

        self.profile = QComboBox()
        for name, prof in PROFILES.items():
            self.profile.addItem(name, name)
            self.profile.setItemData(
                self.profile.count() - 1, prof.summary, Qt.ItemDataRole.ToolTipRole
            )
        self.profile_note = QLabel("")
        self.profile_note.setObjectName("hint")
        self.profile_note.setWordWrap(True)
        self.speed = QDoubleSpinBox()
        self.speed.setRange(0.25, 20.0)
        self.speed.setSingleStep(0.25)
        self.speed.setSuffix(" ×")
        self.speed.setToolTip("Time scale of the simulator: 2× makes every step half as long")
        self.builtin_box = QGroupBox("Built-in simulator")
        bf = QFormLayout(self.builtin_box)
        bf.addRow("Profile", self.profile)
        bf.addRow("", self.profile_note)
        bf.addRow("Speed", self.speed)

        self.base_url = QLineEdit()
        self.base_url.setPlaceholderText("http://localhost:8000/v1")
        self.api = QComboBox()
        for name in PROVIDERS:
            self.api.addItem(name, name)
        self.model = QComboBox()
        self.model.setEditable(True)
        self.model.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        self.list_models = QPushButton("List models")
        self.list_models.clicked.connect(self._list_models)
        # the model's name gets the row's whole width (a long GGUF file name is the model's
        # name on llama.cpp); the button sits under it, so a narrow sidebar never cuts it
        model_row = QVBoxLayout()
        model_row.setContentsMargins(0, 0, 0, 0)
        model_row.addWidget(self.model)
        model_row.addWidget(self.list_models, 0, Qt.AlignmentFlag.AlignLeft)
        self.model_note = QLabel("")
        self.model_note.setObjectName("hint")
        self.model_note.setWordWrap(True)

        self.key_source = QComboBox()
        for src, label in KEY_SOURCES.items():
            self.key_source.addItem(label, src.value)
        self.key_env = QLineEdit()
        self.key_env.setPlaceholderText("OPENAI_API_KEY")
        self.key_edit = QLineEdit()
        self.key_edit.setEchoMode(QLineEdit.EchoMode.Password)
        self.key_edit.setPlaceholderText("paste the key; Enter stores it")
        self.key_edit.returnPressed.connect(self._store_key)
        self.key_note = QLabel("")
        self.key_note.setObjectName("hint")
        self.key_note.setWordWrap(True)
        self.remote_box = QGroupBox("Server")
        rf = QFormLayout(self.remote_box)
        # the base URL on a row of its own under its label, as the model: a URL is long
        rf.addRow(QLabel("Base URL"))
        rf.addRow(self.base_url)
        rf.addRow("", self.source_note)
        rf.addRow("API dialect", self.api)
        rf.addRow("API key from", self.key_source)
        rf.addRow("Variable", self.key_env)
        rf.addRow("Key", self.key_edit)
        rf.addRow("", self.key_note)
        #: What in the environment stops requests to this endpoint (proxy, CA files).
        self.env_note = QLabel("")
        self.env_note.setObjectName("problem")
        self.env_note.setWordWrap(True)
        self.env_note.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.env_note.hide()
        rf.addRow("", self.env_note)
        #: Why the keyring cannot keep a key here (None: it can; unknown until checked).
        self.keyring_problem: str | None = None
        self._checked: tuple[str, bool | str, str] | None = None

        self.max_tokens = QSpinBox()
        self.max_tokens.setRange(1, 100_000)
        self.max_tokens.setToolTip(
            "Cap per answer; the combined request gets this × the number of questions"
        )
        self.temperature = QDoubleSpinBox()
        self.temperature.setRange(-0.1, 2.0)
        self.temperature.setSingleStep(0.1)
        self.temperature.setSpecialValueText("server default")
        self.connect_timeout = QDoubleSpinBox()
        self.connect_timeout.setRange(0.5, 120)
        self.connect_timeout.setSuffix(" s")
        self.read_timeout = QDoubleSpinBox()
        self.read_timeout.setRange(1, 3600)
        self.read_timeout.setSuffix(" s")
        self.read_timeout.setToolTip("Longest silence allowed between two reads of a stream")
        self.retry_429 = QSpinBox()
        self.retry_429.setRange(0, 10)
        self.retry_429.setToolTip(
            "Retry a request answered 429 up to this many times (Retry-After, or backoff)"
        )
        self.verify = QCheckBox("Verify TLS certificates")
        self.ca_bundle = QLineEdit()
        self.ca_bundle.setPlaceholderText("CA bundle file (optional)")
        self.tls_note = QLabel("")
        self.tls_note.setObjectName("problem")
        self.tls_note.setWordWrap(True)
        self.headers = QPlainTextEdit()
        self.headers.setPlaceholderText("Extra-Header: value")
        self.headers.setMaximumHeight(70)
        self.headers_note = QLabel("")
        self.headers_note.setObjectName("problem")
        gen = QGroupBox("Requests")
        gf = QFormLayout(gen)
        # the model on a row of its own under its label: the whole width for its name
        gf.addRow(QLabel("Model"))
        gf.addRow(model_row)
        gf.addRow(self.model_note)
        gf.addRow("Max tokens per answer", self.max_tokens)
        gf.addRow("Temperature", self.temperature)
        gf.addRow("Connect timeout", self.connect_timeout)
        gf.addRow("Read timeout", self.read_timeout)
        gf.addRow("Retry on 429", self.retry_429)
        gf.addRow(self.verify)
        gf.addRow(self.ca_bundle)
        gf.addRow(self.tls_note)
        gf.addRow(QLabel("Headers"))
        gf.addRow(self.headers)
        gf.addRow(self.headers_note)

        self.test_button = QPushButton("Test connection")
        self.test_button.clicked.connect(self._test)
        self.test_note = QLabel("")
        self.test_note.setWordWrap(True)
        self.test_note.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        form = QFormLayout()
        form.addRow("Preset", self.preset)
        for f in (form, bf, rf, gf):
            fit_form(f)
        for combo in (self.preset, self.profile, self.api, self.model, self.key_source):
            fit_combo(combo)
        lay.addLayout(form)
        lay.addWidget(self.builtin_box)
        lay.addWidget(self.remote_box)
        lay.addWidget(gen)
        lay.addWidget(self.test_button)
        lay.addWidget(self.test_note)
        lay.addStretch(1)

        for w in (self.base_url, self.key_env, self.ca_bundle):
            w.editingFinished.connect(self._edited)
        for c in (self.profile, self.api, self.key_source):
            c.currentIndexChanged.connect(self._edited)
        self.model.currentTextChanged.connect(self._edited)
        for s in (
            self.speed,
            self.max_tokens,
            self.temperature,
            self.connect_timeout,
            self.read_timeout,
            self.retry_429,
        ):
            s.valueChanged.connect(self._edited)
        self.verify.toggled.connect(self._edited)
        self.headers.textChanged.connect(self._edited)
        self.set_settings(EndpointSettings())

    # -- settings <-> widgets -------------------------------------------------------------------
    def settings(self) -> EndpointSettings:
        """The current settings (no key)."""
        return self._settings

    def set_settings(self, s: EndpointSettings) -> None:
        """Show ``s``."""
        self._loading = True
        try:
            self._settings = s
            self.preset.setCurrentIndex(max(0, self.preset.findData(s.preset)))
            self.profile.setCurrentIndex(max(0, self.profile.findData(s.profile)))
            self.speed.setValue(s.speed)
            self.base_url.setText(s.base_url)
            self.base_url.setCursorPosition(0)  # a URL too long to show: its start shows
            self.api.setCurrentIndex(max(0, self.api.findData(s.api)))
            self.model.setCurrentText(s.model)
            if (line := self.model.lineEdit()) is not None:
                line.setCursorPosition(0)
            self.key_source.setCurrentIndex(max(0, self.key_source.findData(s.key_source.value)))
            self.key_env.setText(s.key_env)
            self.max_tokens.setValue(s.max_tokens)
            self.temperature.setValue(s.temperature if s.temperature is not None else -0.1)
            self.connect_timeout.setValue(s.connect_timeout)
            self.read_timeout.setValue(s.read_timeout)
            self.retry_429.setValue(s.retry_429)
            self.verify.setChecked(s.verify_tls)
            self.ca_bundle.setText(s.ca_bundle)
            self.headers.setPlainText("\n".join(f"{k}: {v}" for k, v in s.headers.items()))
        finally:
            self._loading = False
        self._update_visibility()

    def _read(self) -> EndpointSettings:
        headers, problem = parse_headers(self.headers.toPlainText())
        self.headers_note.setText(problem or "")
        self.headers_note.setVisible(problem is not None)
        temp = self.temperature.value()
        return self._settings.model_copy(
            update={
                "profile": self.profile.currentData() or self._settings.profile,
                "speed": self.speed.value(),
                "base_url": self.base_url.text().strip(),
                "api": self.api.currentData() or self._settings.api,
                "model": self.model.currentText().strip(),
                "key_source": KeySource(self.key_source.currentData() or "none"),
                "key_env": self.key_env.text().strip(),
                "max_tokens": self.max_tokens.value(),
                "temperature": None if temp < 0 else round(temp, 2),
                "connect_timeout": self.connect_timeout.value(),
                "read_timeout": self.read_timeout.value(),
                "retry_429": self.retry_429.value(),
                "verify_tls": self.verify.isChecked(),
                "ca_bundle": self.ca_bundle.text().strip(),
                "headers": headers,
            }
        )

    def _edited(self, *_: object) -> None:
        if self._loading:
            return
        self._settings = self._read()
        self._update_visibility()
        self.changed.emit()

    def _preset_chosen(self, index: int) -> None:
        key = self.preset.itemData(index)
        self.set_settings(settings_for_preset(key, self._read()))
        self.changed.emit()

    def _update_visibility(self) -> None:
        s = self._settings
        builtin = s.is_builtin
        self.builtin_box.setVisible(builtin)
        self.remote_box.setVisible(not builtin)
        self.list_models.setVisible(True)
        prof = PROFILES.get(s.profile)
        self.profile_note.setText(prof.summary if prof else "")
        found = env_defaults().get(s.preset)
        self.source_note.setText(
            f"from ${found.source}" if found and found.value == s.base_url else ""
        )
        self.source_note.setVisible(bool(self.source_note.text()))
        src = s.key_source
        self.key_env.setEnabled(src is KeySource.ENV)
        self.key_edit.setEnabled(src in (KeySource.KEYRING, KeySource.SESSION))
        if src is KeySource.ENV:
            ok = key_env_present(s.key_env)
            self.key_note.setText(
                f"${s.key_env} is set"
                if ok
                else f"${s.key_env or '…'} is not set in this environment"
            )
        elif src is KeySource.KEYRING:
            self.key_note.setText(
                "Stored in the OS keyring under “splitdesk”; never in the settings file"
            )
        elif src is KeySource.SESSION:
            self.key_note.setText(
                "Kept in memory until you quit" + (" (set)" if self._session_key else "")
            )
        else:
            self.key_note.setText("")
        if src is KeySource.KEYRING and self.keyring_problem:
            self.key_note.setText("⚠ " + self.keyring_problem)
        self._check_environment_soon()
        unsafe = not s.verify_tls and not builtin
        self.tls_note.setText(
            "⚠ TLS verification is off for this endpoint: anyone on the path can read the key"
            if unsafe
            else ""
        )
        self.tls_note.setVisible(unsafe)
        self.ca_bundle.setEnabled(s.verify_tls)

    def _check_environment_soon(self) -> None:
        """Re-check the environment (off the GUI thread) when the endpoint changed."""
        s = self._settings
        key = (s.base_url, s.verify, s.key_source.value)
        if key == self._checked or self._loading:
            return
        self._checked = key
        QTimer.singleShot(0, self._spawn_check)  # on the loop's next turn (it may not run yet)

    def _spawn_check(self) -> None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # a Qt loop without asyncio (a widget test): nothing to run on
            self._checked = None
            return
        # named as a slot's task: closing the window cancels it (ui/tasks.py)
        spawn(self._check_environment(), name=SLOT_PREFIX + "endpoint-environment-check")

    async def _check_environment(self) -> None:
        s = self._settings
        asked = (s.base_url, s.verify, s.key_source.value)
        problems: list[str] = []
        if not s.is_builtin and s.base_url:
            problems = await asyncio.to_thread(environment_problems, s.base_url, s.verify)
        keyring_problem = None
        if s.key_source is KeySource.KEYRING and not s.is_builtin:
            keyring_problem = await asyncio.to_thread(keyring_status)
        if asked != (s.base_url, s.verify, s.key_source.value) or self._checked != asked:
            return  # the endpoint changed meanwhile: a newer check is on its way
        self.env_note.setText("\n".join("⚠ " + p for p in problems))
        self.env_note.setVisible(bool(problems))
        if keyring_problem != self.keyring_problem:
            self.keyring_problem = keyring_problem
            self._update_visibility()

    async def key_problem(self) -> str | None:
        """Why the current endpoint has no key although its settings say it needs one
        (``None``: it has one, or needs none). Asked before a run: a run that needs a key
        it does not have says so instead of sending."""
        s = self._settings
        if s.is_builtin or s.key_source is KeySource.NONE:
            return None
        if await self.api_key():
            return None
        if s.key_source is KeySource.ENV:
            return (
                f"the API key variable ${s.key_env or '…'} is not set in this environment "
                "(set it and restart splitdesk, or choose another key source)"
            )
        if s.key_source is KeySource.SESSION:
            return "no API key entered: paste it in the Endpoint panel (kept for this session)"
        problem = await asyncio.to_thread(keyring_status)
        if problem:
            return (
                f"this endpoint's key comes from the OS keyring, but {problem}: paste the key "
                "in the Endpoint panel, or take it from an environment variable"
            )
        return (
            f"no API key is stored in the OS keyring for {s.keyring_account()}: paste it in "
            "the Endpoint panel (Enter stores it)"
        )

    def summary(self) -> str:
        """One line for the toolbar: "Built-in · batching · 1×" or "vLLM · gpu-box:8000 ·
        model" (the host, so nobody mistakes a remote server for the built-in one)."""
        s = self._settings
        if s.is_builtin:
            return f"Built-in · {s.profile} · {s.speed:g}×"
        label = PRESETS[s.preset].label if s.preset in PRESETS else s.preset
        return f"{label} · {s.host} · {s.model or 'no model'}"

    # -- the key ---------------------------------------------------------------------------------
    async def api_key(self) -> str | None:
        """The key for the current endpoint, from its source (keyring read off-thread)."""
        s = self._settings
        if s.is_builtin or s.key_source is KeySource.NONE:
            return None
        if s.key_source is KeySource.ENV:
            key = env_key(s.key_env)
        elif s.key_source is KeySource.SESSION:
            key = self._session_key
        else:
            account = s.keyring_account()
            if account not in self._keyring_cache:
                try:
                    self._keyring_cache[account] = await asyncio.to_thread(keyring_get, account)
                except KeyringError as exc:
                    self.key_note.setText("⚠ " + str(exc))
                    self._keyring_cache.pop(account, None)
                    key = self._session_key
                    register_secret(key)
                    return key
            key = self._keyring_cache[account] or self._session_key
        register_secret(key)  # whatever logs it later, the key never reaches the log
        return key

    @task_slot
    async def _store_key(self) -> None:
        key = self.key_edit.text().strip()
        self.key_edit.clear()
        if not key:
            return
        register_secret(key)
        s = self._settings
        if s.key_source is KeySource.SESSION:
            self._session_key = key
            self._update_visibility()
            return
        account = s.keyring_account()
        problem = await asyncio.to_thread(keyring_status)
        if problem is None:
            try:
                await asyncio.to_thread(keyring_set, account, key)
                self._keyring_cache[account] = key
                self.key_note.setText("Stored in the OS keyring ✓")
                return
            except KeyringError as exc:
                problem = str(exc)
        self._session_key = key
        self.keyring_problem = problem
        self.key_note.setText("⚠ " + problem)

    # -- network actions --------------------------------------------------------------------------
    async def _models(self) -> ModelCheck:
        """The endpoint's models and how long it took to list them (core/model_list.py)."""
        key = await self.api_key()
        endpoint = await self.resolver(
            self._settings.model_copy(update={"model": self._settings.model or "x"}), key
        )
        return await check_models(endpoint, self._settings.connect_timeout + 5)

    async def _guarded(self, action: Callable[[], Awaitable[str]], note: QLabel) -> None:
        note.setStyleSheet(f"color: {self.theme.muted};")
        note.setText("…")
        try:
            text = await action()
            note.setStyleSheet(f"color: {self.theme.good};")
            note.setText(text)
        except Exception as exc:  # shown to the user, never raised into Qt
            key = await self.api_key()
            message = str(exc) or type(exc).__name__
            if not isinstance(exc, NetworkSetupError | ValueError | httpx.HTTPError):
                log.warning(
                    "%s failed unexpectedly", note.objectName() or "endpoint action", exc_info=exc
                )
            if isinstance(exc, httpx.TransportError):  # say what to do, as a run would
                with contextlib.suppress(Exception):
                    endpoint = await self.resolver(
                        self._settings.model_copy(update={"model": self._settings.model or "x"}),
                        key,
                    )
                    timeout = self._settings.connect_timeout + 5
                    message = classify_transport_error(exc, endpoint, timeout).message
            note.setStyleSheet(f"color: {self.theme.error};")
            note.setText("✕ " + redact(message, key)[:300])

    @task_slot
    async def _list_models(self) -> None:
        async def action() -> str:
            models = (await self._models()).models
            current = self.model.currentText()
            self.model.clear()
            self.model.addItems(models)
            self.model.setCurrentText(current if current in models or not models else models[0])
            return (
                f"{len(models)} model(s): {', '.join(models[:6])}{'…' if len(models) > 6 else ''}"
            )

        await self._guarded(action, self.model_note)

    async def choose_only_model(self) -> str | None:
        """Ask the endpoint for its models (off the GUI thread) and take its only one, as
        ``splitdesk bench`` does without ``--model`` (``splitdesk --endpoint URL`` without
        ``--model``); with several, the model note lists them and asks to pick one. Returns
        the model chosen, ``None`` when none was (the note says why). Never raises."""
        chosen: list[str] = []

        async def action() -> str:
            models = (await self._models()).models
            self.model.clear()
            self.model.addItems(models)
            if len(models) == 1:
                self.model.setCurrentText(models[0])
                chosen.append(models[0])
                return f"the endpoint's only model: {models[0]}"
            shown = ", ".join(models[:6]) + ("…" if len(models) > 6 else "")
            return f"pick one: the endpoint serves {len(models)} models: {shown or 'none'}"

        await self._guarded(action, self.model_note)
        return chosen[0] if chosen else None

    @task_slot
    async def _test(self) -> None:
        async def action() -> str:
            check = await self._models()
            models = check.models
            where = "built-in endpoint" if self._settings.is_builtin else self._settings.base_url
            found = (
                ""
                if not self._settings.model or self._settings.model in models
                else f" — but it does not list “{self._settings.model}”"
            )
            return f"✓ {where} answered in {check.answered_s * 1000:.0f} ms, {len(models)} model(s){found}"

        await self._guarded(action, self.test_note)


__all__ = ["BUILTIN", "EndpointPanel", "parse_headers"]
