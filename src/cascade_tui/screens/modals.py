"""Small modal screens: a yes/no confirmation, the quit question, a text shown whole and the `?`
help listing every key binding."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence
from typing import Protocol, TypeVar, runtime_checkable

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

DialogResult = TypeVar("DialogResult")


@runtime_checkable
class HasHelpSections(Protocol):
    """A screen with more to explain under `?` than its keys: (heading, [(name, meaning)])."""

    def help_sections(self) -> Sequence[tuple[str, Sequence[tuple[str, str]]]]: ...


class Dialog(ModalScreen[DialogResult]):
    """A box in the middle of the screen: a bold title, a text shown whole (never markup: it
    may quote a log or an error), and the keys that answer it."""

    DEFAULT_CSS = """
    Dialog { align: center middle; }
    Dialog > Vertical {
        width: 70; max-width: 95%; height: auto; max-height: 90%;
        border: thick $warning; background: $panel; padding: 1 2;
    }
    Dialog .dialog-keys { margin-top: 1; color: $text-muted; }
    Dialog .dialog-scroll { height: auto; max-height: 1fr; }
    """
    KEYS = ""  # markup

    def __init__(self, title: str, body: str) -> None:
        super().__init__()
        self.title_text = title
        self.body = body

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(self.title_text, style="bold"), classes="dialog-title")
            # A long body (a sim's log tail at 24 rows) scrolls; the title and keys stay.
            with VerticalScroll(classes="dialog-scroll"):
                yield Static(self.body, classes="dialog-body", markup=False)
            yield Static(self.KEYS, classes="dialog-keys")

    def action_answer(self, answer: DialogResult) -> None:
        self.dismiss(answer)


class ConfirmScreen(Dialog[bool]):
    """Asks before something that cannot be undone or costs money. Only `y` says yes: Enter is
    what a user presses to go on, so it must not delete or launch anything; `n`/Esc say no.
    `yes`/`no` name what each answer does (`delete` / `keep`)."""

    BINDINGS = [
        Binding("y", "answer(True)", "Yes", id="confirm.yes"),
        Binding("n,escape", "answer(False)", "No", id="confirm.no"),
    ]

    def __init__(self, title: str, body: str, yes: str = "yes", no: str = "no") -> None:
        super().__init__(title, body)
        self.KEYS = f"[b]y[/b]: {yes}     [b]Esc[/b] / [b]n[/b]: {no}"


class QuitScreen(Dialog[str]):
    """Asked by `q` while sims run: "cancel", "quit" or "stay" (the dismissal value)."""

    BINDINGS = [
        Binding("c", "answer('cancel')", "Cancel the runs and quit", id="quit.cancel_runs"),
        Binding("q,y", "answer('quit')", "Quit, they keep running", id="quit.keep_running"),
        Binding("escape,s,n", "answer('stay')", "Stay", id="quit.stay"),
    ]
    DEFAULT_CSS = "QuitScreen .dialog-keys { color: $text; }"
    KEYS = "[b]c[/b]  cancel the runs and quit\n[b]q[/b]  quit, they keep running\n[b]Esc[/b]  stay"

    def __init__(self, body: str) -> None:
        super().__init__("Sims are still running", body)


class MessageScreen(Dialog[None]):
    """A text shown whole (wrapped), such as a failed trace's error; Esc or q closes it."""

    BINDINGS = [Binding("escape,q", "answer(None)", "Close", id="message.close")]
    DEFAULT_CSS = """
    MessageScreen > Vertical { width: 80; border: thick $error; }
    """
    KEYS = "Esc: close"


class HelpScreen(ModalScreen[None]):
    """Cascade's keys for the screen below (id dim after each), what the sims table's columns
    mean on the run screen, and one line for the generic keys of tables and lists."""

    BINDINGS = [Binding("escape,question_mark", "close", "Close", id="help.close")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > Vertical {
        width: 90; max-width: 98%; height: 90%; border: thick $accent; background: $panel;
    }
    HelpScreen VerticalScroll { height: 1fr; padding: 0 1; }
    HelpScreen #help-title { padding: 0 1; text-style: bold; }
    """

    def __init__(self, below: Screen) -> None:
        super().__init__()
        self.below = below

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(
                f"Help: {screen_title(self.below)} (Esc to close; Ctrl+P searches every command)",
                id="help-title",
            )
            with VerticalScroll():
                yield Static(help_text(self.below), id="help-body")

    def on_mount(self) -> None:
        self.query_one(VerticalScroll).focus()
        self.call_after_refresh(self._fit)

    def on_resize(self) -> None:
        self.call_after_refresh(self._fit)

    def _fit(self) -> None:
        """The columns fitted to the box's width (a scrollbar's cells left out)."""
        scroll = self.query_one(VerticalScroll)
        width = scroll.content_region.width - scroll.styles.scrollbar_size_vertical
        if width > 0:
            self.query_one("#help-body", Static).update(help_text(self.below, width))

    def action_close(self) -> None:
        self.dismiss(None)


def screen_title(screen: Screen) -> str:
    """A screen's name for people: NewRunScreen -> `New run`, CompareTracesScreen -> `Compare
    traces`."""
    words = re.findall(r"[A-Z][a-z]*", type(screen).__name__.removesuffix("Screen"))
    return " ".join([words[0], *(w.lower() for w in words[1:])]) if words else "Cascade"


def help_text(screen: Screen, width: int = 86) -> Text:
    """The help in `width` cells: columns as wide as their widest key and id, descriptions
    wrapped between them (never running into the id); at 80 columns and less, ids that leave a
    description under 24 cells go on a line of their own."""
    rows = [row for row in binding_rows(screen) if row[2]]
    sections = screen.help_sections() if isinstance(screen, HasHelpSections) else ()
    key_w = max(
        [len(key) for key, _, _ in rows] + [len(name) for _, names in sections for name, _ in names] + [1]
    )
    id_w = max([len(binding_id) for _, _, binding_id in rows] + [0])
    lead = 2 + key_w + 2  # indent, key, gap
    desc_w = width - lead - 2 - id_w
    own_line = desc_w < 24
    if own_line:
        desc_w = width - lead
    text = Text()
    text.append("Keys\n", style="bold underline")
    for key, description, binding_id in rows:
        lines = textwrap.wrap(description, max(10, desc_w)) or [""]
        for i, line in enumerate(lines):
            text.append(f"  {key if i == 0 else '':<{key_w}}  ", style="bold")
            if i == 0 and not own_line:
                text.append(f"{line:<{desc_w}}  ")
                text.append(binding_id, style="dim")
            else:
                text.append(line)
            text.append("\n")
        if own_line:
            text.append(f"{'':<{lead}}{binding_id}\n", style="dim")
    for heading, names in sections:
        text.append(f"\n{heading}\n", style="bold underline")
        for name, meaning in names:
            for i, line in enumerate(textwrap.wrap(meaning, max(10, width - lead)) or [""]):
                text.append(f"  {name if i == 0 else '':<{key_w}}  ", style="bold")
                text.append(f"{line}\n")
    text.append("\n")
    text.append(
        "\n".join(
            textwrap.wrap(
                "Arrows, PgUp/PgDn and Home/End move in tables, lists and the log; Tab moves between panes.",
                max(10, width),
            )
        ),
        style="dim",
    )
    return text


def binding_rows(screen: Screen) -> list[tuple[str, str, str]]:
    """(key, description, id) for every active binding of `screen` (the tooltip when it has one:
    the footer shows the short description): Cascade's own (they have ids) first, the app-wide ones after the screen's, then the generic keys of Textual widgets."""
    ranked: list[tuple[int, tuple[str, str, str]]] = []
    seen: set[str] = set()
    for key, active in screen.active_bindings.items():
        binding = active.binding
        if not binding.description or (binding.id or key) in seen:
            continue
        seen.add(binding.id or key)
        # The screen's own keys first, then the focused Cascade widget's, then app-wide ones.
        rank = 3 if not binding.id else 0 if active.node is screen else 2 if active.node is screen.app else 1
        # A binding's tooltip, when it has one, is its whole description (the footer shows the
        # short one, so that 80 columns keep every key).
        ranked.append(
            (
                rank,
                (
                    screen.app.get_key_display(binding),
                    binding.tooltip or binding.description,
                    binding.id or "",
                ),
            )
        )
    return [row for _, row in sorted(ranked, key=lambda item: item[0])]
