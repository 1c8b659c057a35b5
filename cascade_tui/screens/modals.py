"""Small modal screens: a yes/no confirmation, the quit question, a text shown whole and the `?`
help listing every key binding."""

from __future__ import annotations

import re
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
    """Asks before something that cannot be undone or costs money; y/enter = yes, n/escape = no."""

    BINDINGS = [
        Binding("y,enter", "answer(True)", "Yes", id="confirm.yes"),
        Binding("n,escape", "answer(False)", "No", id="confirm.no"),
    ]
    KEYS = "y / Enter: yes     n / Esc: no"


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

    def action_close(self) -> None:
        self.dismiss(None)


def screen_title(screen: Screen) -> str:
    """A screen's name for people: NewRunScreen -> `New run`, CompareTracesScreen -> `Compare
    traces`."""
    words = re.findall(r"[A-Z][a-z]*", type(screen).__name__.removesuffix("Screen"))
    return " ".join([words[0], *(w.lower() for w in words[1:])]) if words else "Cascade"


def help_text(screen: Screen) -> Text:
    text = Text()
    text.append("Keys\n", style="bold underline")
    for key, description, binding_id in binding_rows(screen):
        if not binding_id:
            continue
        text.append(f"  {key:<12}", style="bold")
        text.append(f"{description:<27} ")  # a space even after a long description
        text.append(f"{binding_id}\n", style="dim")
    for heading, rows in screen.help_sections() if isinstance(screen, HasHelpSections) else ():
        text.append(f"\n{heading}\n", style="bold underline")
        for name, meaning in rows:
            text.append(f"  {name:<12}", style="bold")
            text.append(f"{meaning}\n")
    text.append(
        "\nArrows, PgUp/PgDn and Home/End move in tables, lists and the log; Tab moves between panes.",
        style="dim",
    )
    return text


def binding_rows(screen: Screen) -> list[tuple[str, str, str]]:
    """(key, description, id) for every active binding of `screen`: Cascade's own (they have
    ids) first, the app-wide ones after the screen's, then the generic keys of Textual widgets."""
    ranked: list[tuple[int, tuple[str, str, str]]] = []
    seen: set[str] = set()
    for key, active in screen.active_bindings.items():
        binding = active.binding
        if not binding.description or (binding.id or key) in seen:
            continue
        seen.add(binding.id or key)
        # The screen's own keys first, then the focused Cascade widget's, then app-wide ones.
        rank = 3 if not binding.id else 0 if active.node is screen else 2 if active.node is screen.app else 1
        ranked.append((rank, (screen.app.get_key_display(binding), binding.description, binding.id or "")))
    return [row for _, row in sorted(ranked, key=lambda item: item[0])]
