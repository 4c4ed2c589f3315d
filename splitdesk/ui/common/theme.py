"""Colours, fonts and the application style: dark and light, legible on a projector.

Question colours follow the Okabe–Ito palette (Okabe & Ito, "Color Universal Design",
2008), distinguishable with the common colour-vision deficiencies, then Paul Tol's
"muted" scheme for questions 9–16. A question has the same colour in the editor, the
combined pane's headings, its parallel pane's border and its timeline lane.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtGui import QColor, QFont, QPalette
from PySide6.QtWidgets import QApplication, QWidget

_LANES = (
    "#E69F00",  # orange
    "#56B4E9",  # sky blue
    "#009E73",  # bluish green
    "#F0E442",  # yellow
    "#D55E00",  # vermillion
    "#CC79A7",  # reddish purple
    "#3D8FD6",  # blue (Okabe–Ito #0072B2, lifted to read on dark backgrounds)
    "#B0B0B0",  # grey
    "#CC6677",  # Tol muted: rose
    "#88CCEE",  # cyan
    "#DDCC77",  # sand
    "#117733",  # green
    "#AA4499",  # purple
    "#44AA99",  # teal
    "#999933",  # olive
    "#882255",  # wine
)


def lane_color(index: int) -> QColor:
    """The colour of question ``index`` (0-based); cycles after 16."""
    return QColor(_LANES[index % len(_LANES)])


def lane_hex(index: int) -> str:
    """:func:`lane_color` as ``#rrggbb``."""
    return _LANES[index % len(_LANES)]


def _luminance(color: str) -> float:
    """Relative luminance of ``#rrggbb`` (WCAG 2.2, "relative luminance")."""
    channels = [int(color[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(foreground: str, background: str) -> float:
    """The WCAG 2.2 contrast ratio of two ``#rrggbb`` colours (1 to 21; text needs 4.5 at
    level AA, large text and graphics 3)."""
    a, b = _luminance(foreground), _luminance(background)
    return (max(a, b) + 0.05) / (min(a, b) + 0.05)


#: WCAG 2.2 AA's contrast ratio for normal text (success criterion 1.4.3).
AA_TEXT = 4.5


def readable(color: str, background: str, ratio: float = AA_TEXT) -> str:
    """``color`` moved toward black (on a light ``background``) or white (on a dark one)
    just enough for ``ratio``, keeping its hue: a question's colour as text on that
    background (the yellow "Answer 4:" heading read at 1.3:1 on white)."""
    if contrast(color, background) >= ratio:
        return color
    toward = 0 if _luminance(background) > 0.18 else 255
    rgb = [int(color[i : i + 2], 16) for i in (1, 3, 5)]
    for step in range(1, 21):
        f = step / 20
        mixed = "#" + "".join(f"{round(c + (toward - c) * f):02x}" for c in rgb)
        if contrast(mixed, background) >= ratio:
            return mixed
    return "#000000" if toward == 0 else "#ffffff"


INK_DARK = "#101217"
INK_LIGHT = "#ffffff"


def ink_on(background: str) -> str:
    """Text colour for ``background`` (``#rrggbb``): near-black or white, whichever has
    the higher WCAG contrast ratio against it."""
    lum = _luminance(background)
    on_dark = (lum + 0.05) / (_luminance(INK_DARK) + 0.05)
    on_light = (1.05) / (lum + 0.05)
    return INK_DARK if on_dark >= on_light else INK_LIGHT


@dataclass(frozen=True)
class Theme:
    """The colours of one look. ``combined`` is the combined request's own colour."""

    name: str
    window: str
    panel: str
    raised: str
    border: str
    text: str
    muted: str
    accent: str
    combined: str
    waiting: str
    error: str
    good: str
    grid: str

    def qcolor(self, role: str) -> QColor:
        return QColor(getattr(self, role))

    def lane_text(self, index: int) -> str:
        """Question ``index``'s colour as text on this theme's panels (answer headings in
        the combined reply): :func:`lane_hex`, darkened or lightened to WCAG AA."""
        return readable(lane_hex(index), self.panel)


#: The theme roles drawn as text, each at WCAG AA on the theme's window, panel and raised
#: backgrounds (tests/ui/common/test_contrast.py computes it).
TEXT_ROLES = ("text", "muted", "accent", "error", "good", "combined")
TEXT_BACKGROUNDS = ("window", "panel", "raised")


DARK = Theme(
    name="dark",
    window="#15171c",
    panel="#1d2027",
    raised="#262a33",
    border="#343946",
    text="#e8eaef",
    muted="#9aa1ad",
    accent="#56B4E9",
    combined="#e8eaef",
    waiting="#6b7280",
    error="#ff6b6b",
    good="#3ddc97",
    grid="#2c313c",
)

LIGHT = Theme(
    name="light",
    window="#f4f5f7",
    panel="#ffffff",
    raised="#eceef2",
    border="#d0d4dc",
    text="#1b1e24",
    muted="#5d6470",
    accent="#006aa6",
    combined="#2b2f38",
    waiting="#9aa1ad",
    error="#c62828",
    good="#067347",
    grid="#e3e6eb",
)

THEMES = {t.name: t for t in (DARK, LIGHT)}

#: High contrast for a washed-out projector: pure black and white, saturated accents.
PRESENT_DARK = Theme(
    name="present-dark",
    window="#000000",
    panel="#0b0b0b",
    raised="#1c1c1c",
    border="#6a6a6a",
    text="#ffffff",
    muted="#d6d6d6",
    accent="#4fc3ff",
    combined="#ffffff",
    waiting="#a8a8a8",
    error="#ff5c5c",
    good="#2ee88f",
    grid="#3a3a3a",
)
#: The light variant: black on white (a bright room).
PRESENT_LIGHT = Theme(
    name="present-light",
    window="#ffffff",
    panel="#ffffff",
    raised="#ececec",
    border="#4a4a4a",
    text="#000000",
    muted="#262626",
    accent="#0050a0",
    combined="#000000",
    waiting="#5a5a5a",
    error="#b00000",
    good="#00663a",
    grid="#c8c8c8",
)

#: The presentation look's type scale at 1920 × 1080 (pane text ≥ 24 px, timeline labels
#: ≥ 18 px); other sizes scale with the smaller of width/1920 and height/1080, never below
#: :data:`MIN_SCALE`.
FULL_HD_SCALE = 1.6
MIN_SCALE = 1.1
TYPE_STEP = 1.1  #: one press of + or −
MAX_STEPS = 4


def present_scale(width: int, height: int, steps: int = 0) -> float:
    """The presentation look's type scale for a ``width`` × ``height`` pixel screen (or
    clip), after ``steps`` presses of + (positive) or − (negative)."""
    base = max(MIN_SCALE, FULL_HD_SCALE * min(width / 1920, height / 1080))
    return float(base * TYPE_STEP**steps)


def present_theme(own: Theme) -> Theme:
    """The presentation palette for a window whose own theme is ``own``: black on white
    for a light theme, white on black otherwise."""
    return PRESENT_LIGHT if own.name in ("light", PRESENT_LIGHT.name) else PRESENT_DARK


#: Base point size before the user's zoom; large enough for the back of a room.
BASE_POINT_SIZE = 11.0


def ui_font(scale: float = 1.0, delta: float = 0.0, bold: bool = False) -> QFont:
    """The interface font at ``BASE_POINT_SIZE × scale + delta`` points."""
    font = QFont(QApplication.font())
    font.setPointSizeF(max(6.0, BASE_POINT_SIZE * scale + delta))
    font.setBold(bold)
    return font


def mono_font(scale: float = 1.0) -> QFont:
    """Font of streamed text: proportional (answers are prose), slightly larger."""
    return ui_font(scale, 1.0)


def apply_theme(app: QApplication, theme: Theme, scale: float = 1.0) -> None:
    """Set palette, base font and style sheet of ``app``."""
    app.setStyle("Fusion")
    app.setPalette(palette(theme))
    font = QFont(app.font())
    font.setPointSizeF(BASE_POINT_SIZE * scale)
    app.setFont(font)
    app.setStyleSheet(style_sheet(theme, scale))


def opaque_plot(plot: QWidget) -> None:
    """Tell Qt that ``plot`` (a pyqtgraph ``PlotWidget``: a ``QGraphicsView`` that fills
    every exposed pixel with its background brush) paints all of its viewport, so a new
    frame of it repaints it alone, not every widget behind it up to the window (issue 25:
    the window, its splitters and the stage were painted again for each frame of the
    timeline)."""
    viewport = getattr(plot, "viewport", None)
    if callable(viewport):
        viewport().setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent)


def opaque_fill(widget: QWidget, color: str) -> None:
    """``widget`` fills its own rectangle with ``color`` (the colour behind it anyway, a
    pane's or the summary's panel), so Qt repaints it alone when it changes, not every
    widget behind it up to the window. The pixels are those the parents painted.

    A style sheet rule that gives the widget (or its scroll area) a background turns the
    widget's ``autoFillBackground`` off each time it polishes it (Qt's
    ``QStyleSheetStyle::polish``), and Qt then counts the widget as see-through: every
    frame of a pane's text repainted the window, its splitters, the stage and the card
    behind it (issue 25). The fill is set again after each polish (:class:`_KeepFilled`);
    the style sheet's own background and border are still drawn over it."""
    keeper = widget.findChild(
        _KeepFilled, _KeepFilled.NAME, Qt.FindChildOption.FindDirectChildrenOnly
    )  # its own keeper, never a child's
    if keeper is None:
        keeper = _KeepFilled(widget)
        widget.installEventFilter(keeper)
    keeper.color = QColor(color)
    keeper.fill()


class _KeepFilled(QObject):
    """Keeps :func:`opaque_fill`'s fill on its parent widget through style polishes."""

    NAME = "splitdesk_keep_filled"

    def __init__(self, widget: QWidget) -> None:
        super().__init__(widget)
        self.setObjectName(self.NAME)
        self.widget = widget
        self.color = QColor()

    def fill(self) -> None:
        """Give the widget the fill colour and turn its background fill on."""
        widget = self.widget
        pal = widget.palette()
        if pal.color(widget.backgroundRole()) != self.color:
            pal.setColor(widget.backgroundRole(), self.color)
            widget.setPalette(pal)
        if not widget.autoFillBackground():
            widget.setAutoFillBackground(True)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        # Polish reaches the filter before the style polishes the widget; StyleChange
        # after a new style sheet re-polished it: either way, fill once it is done
        if event.type() in (QEvent.Type.Polish, QEvent.Type.StyleChange):
            QTimer.singleShot(0, self, self.fill)
        return False


def dress(widget: QWidget, theme: Theme, scale: float = 1.0) -> None:
    """Give ``widget`` (a stage painted offscreen for an export) the palette and style
    sheet of ``theme`` at ``scale``, whatever the application's own look is."""
    widget.setPalette(palette(theme))
    widget.setAutoFillBackground(True)
    widget.setStyleSheet(
        style_sheet(theme, scale) + f"QWidget#{widget.objectName() or 'dressed'} "
        f"{{ background: {theme.window}; }}\n"
    )


def palette(theme: Theme) -> QPalette:
    """The Qt palette of ``theme``."""
    pal = QPalette()
    pal.setColor(QPalette.ColorRole.Window, QColor(theme.window))
    pal.setColor(QPalette.ColorRole.WindowText, QColor(theme.text))
    pal.setColor(QPalette.ColorRole.Base, QColor(theme.panel))
    pal.setColor(QPalette.ColorRole.AlternateBase, QColor(theme.raised))
    pal.setColor(QPalette.ColorRole.Text, QColor(theme.text))
    pal.setColor(QPalette.ColorRole.Button, QColor(theme.raised))
    pal.setColor(QPalette.ColorRole.ButtonText, QColor(theme.text))
    pal.setColor(QPalette.ColorRole.Highlight, QColor(theme.accent))
    pal.setColor(QPalette.ColorRole.HighlightedText, QColor(theme.window))
    pal.setColor(QPalette.ColorRole.ToolTipBase, QColor(theme.raised))
    pal.setColor(QPalette.ColorRole.ToolTipText, QColor(theme.text))
    pal.setColor(QPalette.ColorRole.PlaceholderText, QColor(theme.muted))
    pal.setColor(QPalette.ColorRole.Link, QColor(theme.accent))
    for role in (
        QPalette.ColorRole.Text,
        QPalette.ColorRole.ButtonText,
        QPalette.ColorRole.WindowText,
    ):
        pal.setColor(QPalette.ColorGroup.Disabled, role, QColor(theme.muted))
    return pal


def style_sheet(t: Theme, scale: float = 1.0) -> str:
    """The application style sheet: flat panels, rounded corners, generous padding."""
    pad = max(4, round(6 * scale))
    return f"""
QMainWindow, QWidget#central {{ background: {t.window}; }}
QToolBar {{ background: {t.panel}; border: none; border-bottom: 1px solid {t.border};
           padding: {pad}px; spacing: {pad}px; }}
QToolBar QLabel {{ color: {t.muted}; }}
QToolButton, QPushButton {{ background: {t.raised}; color: {t.text}; border: 1px solid {t.border};
           border-radius: 6px; padding: {pad - 1}px {pad * 2}px; }}
QToolButton[compact="true"] {{ padding: {pad - 1}px {pad}px; }}
QToolButton:hover, QPushButton:hover {{ border-color: {t.accent}; }}
QToolButton:disabled, QPushButton:disabled {{ color: {t.muted}; background: {t.panel}; }}
QPushButton#run {{ background: {t.good}; color: #0b0d10; font-weight: bold; border: none; }}
QPushButton#run:disabled {{ background: {t.raised}; color: {t.muted}; }}
QPushButton#stop {{ background: {t.raised}; }}
QComboBox, QLineEdit, QSpinBox, QDoubleSpinBox {{ background: {t.panel}; color: {t.text};
           border: 1px solid {t.border}; border-radius: 6px; padding: {pad - 2}px {pad}px; }}
QComboBox:focus, QLineEdit:focus, QSpinBox:focus, QDoubleSpinBox:focus {{ border-color: {t.accent}; }}
QPlainTextEdit, QTextEdit, QListWidget {{ background: {t.panel}; color: {t.text};
           border: 1px solid {t.border}; border-radius: 8px; padding: {pad}px; }}
QPlainTextEdit#paneText {{ border: none; background: {t.panel}; padding: 2px; }}
QToolButton#paneFocus {{ padding: 0px 4px; border: none; background: transparent; }}
QToolButton#qt_toolbar_ext_button {{ padding: 0px; border: none; background: transparent;
           color: {t.accent}; font-weight: bold; }}
QLabel#paneTitle {{ color: {t.text}; font-weight: bold; }}
QLabel#paneStats {{ color: {t.muted}; }}
QLabel#sectionTitle {{ color: {t.muted}; font-weight: bold; letter-spacing: 1px; }}
QLabel#hint {{ color: {t.muted}; }}
QLabel#problem {{ color: {t.error}; }}
QLabel#error {{ color: {t.error}; }}
QFrame#summary {{ background: {t.panel}; border-top: 1px solid {t.border}; }}
QTabWidget::pane {{ border: none; }}
QTabBar::tab {{ background: transparent; color: {t.muted}; padding: {pad}px {pad * 2}px;
           border-bottom: 2px solid transparent; }}
QTabBar::tab:selected {{ color: {t.text}; border-bottom: 2px solid {t.accent}; }}
QScrollArea {{ border: none; background: transparent; }}
QScrollArea > QWidget > QWidget {{ background: transparent; }}
QSplitter::handle {{ background: {t.window}; }}
QStatusBar {{ background: {t.panel}; color: {t.muted}; border-top: 1px solid {t.border}; }}
QGroupBox {{ border: 1px solid {t.border}; border-radius: 8px; margin-top: 1.2em; padding-top: {pad}px; }}
QGroupBox::title {{ subcontrol-origin: margin; left: {pad * 2}px; color: {t.muted}; }}
QScrollBar:vertical {{ background: transparent; width: {pad + 4}px; margin: 2px; }}
QScrollBar::handle:vertical {{ background: {t.border}; border-radius: {(pad + 0) // 2}px; min-height: 24px; }}
QScrollBar::handle:vertical:hover {{ background: {t.muted}; }}
QScrollBar:horizontal {{ background: transparent; height: {pad + 4}px; margin: 2px; }}
QScrollBar::handle:horizontal {{ background: {t.border}; border-radius: {(pad + 0) // 2}px; min-width: 24px; }}
QScrollBar::add-line, QScrollBar::sub-line {{ width: 0; height: 0; }}
QScrollBar::add-page, QScrollBar::sub-page {{ background: transparent; }}
QToolTip {{ background: {t.raised}; color: {t.text}; border: 1px solid {t.border}; padding: {pad}px; }}
"""
