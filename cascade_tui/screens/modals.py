"""Small modal screens: a yes/no confirmation and the `?` help listing every key binding."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Static


class ConfirmScreen(ModalScreen[bool]):
    """Asks before something that cannot be undone or costs money; y/enter = yes, n/escape = no."""

    BINDINGS = [
        Binding("y,enter", "answer(True)", "Yes", id="confirm.yes"),
        Binding("n,escape", "answer(False)", "No", id="confirm.no"),
    ]
    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    ConfirmScreen > Vertical {
        width: 70; max-width: 95%; height: auto; max-height: 90%;
        border: thick $warning; background: $panel; padding: 1 2;
    }
    ConfirmScreen #confirm-keys { margin-top: 1; color: $text-muted; }
    """

    def __init__(self, title: str, body: str) -> None:
        super().__init__()
        self.title_text = title
        self.body = body

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(f"[b]{self.title_text}[/b]", id="confirm-title")
            yield Static(self.body, id="confirm-body", markup=False)
            yield Static("y / Enter: yes     n / Esc: no", id="confirm-keys")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


class HelpScreen(ModalScreen[None]):
    """Every key of the screen below (and the app's), with its description and binding id."""

    BINDINGS = [Binding("escape,q,question_mark", "close", "Close", id="help.close")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > Vertical {
        width: 90; max-width: 98%; height: 90%; border: thick $accent; background: $panel;
    }
    HelpScreen DataTable { height: 1fr; }
    HelpScreen #help-title { padding: 0 1; text-style: bold; }
    """

    def __init__(self, below: Screen) -> None:
        super().__init__()
        self.below = below

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(f"Keys: {self.below.__class__.__name__.removesuffix('Screen')} "
                         "(Esc to close; Ctrl+P searches them as commands)", id="help-title")
            yield DataTable(cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_column("key", width=14)
        table.add_column("action", width=30)
        table.add_column("id", width=26)
        for key, description, binding_id in binding_rows(self.below):
            table.add_row(key, description, binding_id)
        table.focus()

    def action_close(self) -> None:
        self.dismiss(None)


def binding_rows(screen: Screen) -> list[tuple[str, str, str]]:
    """(key, description, id) for every active binding of `screen`: Cascade's own (they have
    ids) first, then the generic keys of the focused Textual widget."""
    rows: list[tuple[str, str, str]] = []
    seen: set[str] = set()
    for key, active in screen.active_bindings.items():
        binding = active.binding
        if not binding.description or binding.id in seen:
            continue
        seen.add(binding.id or key)
        rows.append((screen.app.get_key_display(binding), binding.description, binding.id or ""))
    return sorted(rows, key=lambda row: (not row[2], row[2].startswith("app.")))
