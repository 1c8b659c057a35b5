"""Add a variant to a New run config row (`a`): an option of that config and a value, and an
optional label (the API's default shown until one is typed).

The config's options (`GET /api/gpu-configs/{name}/options`) load in a worker, which posts them
as a message; its handler fills the list. As you type, the list keeps the options whose name holds
the text (names that start with it first) with the config's value and the simulator's
description, and the field suggests the rest of the first name that starts with it (`→` takes
it). Enter takes the highlighted option and moves to the value; Enter on the value adds the
variant, or says (a notification) why it cannot be added and keeps what was typed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.suggester import Suggester
from textual.widgets import Footer, Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from cascade_core.models import ConfigOption
from cascade_core.variants import canonical_name, default_label

from ..connection.client import ApiError
from ..messages import ReportsWorkerErrors
from ..services import Services
from ..views.variant_form import completion, find_option, option_matches


@dataclass(frozen=True)
class VariantRequest:
    """What the editor asks New run to add."""

    options: dict[str, str]
    label: str | None


class OptionSuggester(Suggester):
    """The rest of the first option name that starts with what was typed (names set once loaded)."""

    def __init__(self) -> None:
        super().__init__(use_cache=False, case_sensitive=False)
        self.names: list[str] = []

    async def get_suggestion(self, value: str) -> str | None:
        return completion(self.names, value)


class VariantScreen(ReportsWorkerErrors, ModalScreen[VariantRequest | None]):
    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="variant.cancel"),
        # Priority: Enter in a field would otherwise only submit that field.
        Binding("enter", "next", "Next / Add", priority=True, id="variant.next"),
        # Priority: the option field (a scroll view) binds them too; the highlight is what moves.
        Binding("down", "move(1)", "Next option", priority=True, id="variant.next_option"),
        Binding("up", "move(-1)", "Prev option", priority=True, id="variant.previous_option"),
    ]
    DEFAULT_CSS = """
    VariantScreen { align: center middle; }
    VariantScreen > Vertical {
        width: 100; max-width: 98%; height: auto; max-height: 100%;
        border: thick $accent; background: $panel; padding: 0 1;
    }
    VariantScreen #variant-title { text-style: bold; }
    VariantScreen .variant-field { height: 1; margin-top: 1; }
    VariantScreen .variant-field Label { width: 8; }
    VariantScreen .variant-field Input { width: 1fr; }
    VariantScreen #variant-matches { height: 8; min-height: 3; border: none; }
    VariantScreen #variant-about { height: auto; max-height: 3; color: $text-muted; }
    VariantScreen #variant-keys { color: $text-muted; }
    """
    ERROR_TITLES = {"options": "Options not listed"}

    class OptionsLoaded(Message):
        def __init__(self, config: str, options: list[ConfigOption]) -> None:
            super().__init__()
            self.config = config
            self.options = options

    class OptionsFailed(Message):
        def __init__(self, config: str, error: str) -> None:
            super().__init__()
            self.config = config
            self.error = error

    def __init__(
        self,
        config: str,
        services: Services,
        cache: dict[str, list[ConfigOption]],
        check: Callable[[VariantRequest], str | None],
    ) -> None:
        super().__init__()
        self.config = config
        self.services = services
        self.cache = cache  # New run's: a config's options load once per form
        self.check = check  # why New run cannot add it, or None
        self.options: list[ConfigOption] = cache.get(config, [])
        self.matches: list[ConfigOption] = []
        self.suggester = OptionSuggester()

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(
                f"Add a variant of {self.config}: a simulator option and its value",
                id="variant-title",
                markup=False,
            )
            with Horizontal(classes="variant-field"):
                yield Label("option")
                yield Input(
                    placeholder="type part of a name, e.g. n_clusters",
                    id="variant-option",
                    suggester=self.suggester,
                    compact=True,
                )
            yield OptionList(id="variant-matches")
            yield Static("loading the config's options…", id="variant-about", markup=False)
            with Horizontal(classes="variant-field"):
                yield Label("value")
                yield Input(placeholder="one token, e.g. 40", id="variant-value", compact=True)
            with Horizontal(classes="variant-field"):
                yield Label("label")
                yield Input(placeholder=self.config, id="variant-label", compact=True)
            yield Static(KEYS_HINT["variant-option"], id="variant-keys")
        yield Footer(compact=True)

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        """The keys line says what Enter does in the field being typed in."""
        self.query_one("#variant-keys", Static).update(
            KEYS_HINT.get(event.widget.id or "", KEYS_HINT["variant-value"])
        )

    def on_mount(self) -> None:
        matches = self.query_one("#variant-matches", OptionList)
        matches.can_focus = False  # the option field keeps the keys; ↑/↓ move the highlight
        self.query_one("#variant-option", Input).focus()
        if self.config in self.cache:
            self._show_options(self.cache[self.config])
        else:
            self._load_options()

    # --- the config's options ----------------------------------------------------------------

    @work(exclusive=True, group="options", exit_on_error=False)
    async def _load_options(self) -> None:
        try:
            options = await self.services.client.config_options(self.config)
        except ApiError as exc:
            self.post_message(self.OptionsFailed(self.config, str(exc)))
            return
        self.post_message(self.OptionsLoaded(self.config, options))

    @on(OptionsLoaded)
    def _options_loaded(self, message: OptionsLoaded) -> None:
        self.cache[message.config] = message.options
        self._show_options(message.options)

    @on(OptionsFailed)
    def _options_failed(self, message: OptionsFailed) -> None:
        self.query_one("#variant-about", Static).update(
            "The config's options could not be listed: type the option's whole name."
        )
        self.notify(
            f"{message.config}'s options: {message.error}",
            title="Options not listed",
            severity="warning",
            timeout=8,
        )

    def _show_options(self, options: list[ConfigOption]) -> None:
        self.options = options
        self.suggester.names = [o.name for o in sorted(options, key=lambda o: (not o.in_config, o.name))]
        self._filter(self.query_one("#variant-option", Input).value)

    def _filter(self, typed: str) -> None:
        self.matches = option_matches(self.options, typed)
        matches = self.query_one("#variant-matches", OptionList)
        matches.clear_options()
        width = max((len(o.name) for o in self.matches), default=0)
        matches.add_options([Option(_match_text(o, width)) for o in self.matches])
        if self.matches:
            matches.highlighted = 0
        self._about()

    def _about(self) -> None:
        about = self.query_one("#variant-about", Static)
        option = self._highlighted()
        if option is not None:
            about.update(
                f"{option.name}: {self.config} has {option.value}"
                + (f". {option.description}" if option.description else "")
            )
        elif self.options:
            about.update(f"No option of {self.config}'s {len(self.options)} holds that text.")

    def _highlighted(self) -> ConfigOption | None:
        index = self.query_one("#variant-matches", OptionList).highlighted
        return self.matches[index] if index is not None and index < len(self.matches) else None

    # --- typing ------------------------------------------------------------------------------

    @on(Input.Changed, "#variant-option")
    def _option_typed(self, event: Input.Changed) -> None:
        self._filter(event.value)
        self._update_label_hint()

    @on(Input.Changed, "#variant-value")
    def _value_typed(self, event: Input.Changed) -> None:
        self._update_label_hint()

    def _update_label_hint(self) -> None:
        name = self.query_one("#variant-option", Input).value.strip()
        value = self.query_one("#variant-value", Input).value.strip()
        hint = default_label(self.config, {canonical_name(name): value or "…"}) if name else self.config
        self.query_one("#variant-label", Input).placeholder = f"{hint} (the default)"

    @on(OptionList.OptionSelected, "#variant-matches")
    def _clicked(self, event: OptionList.OptionSelected) -> None:
        self._take_option(event.option_index)

    def action_move(self, step: int) -> None:
        matches = self.query_one("#variant-matches", OptionList)
        if not self.matches or not self.query_one("#variant-option", Input).has_focus:
            return
        index = matches.highlighted if matches.highlighted is not None else -step
        matches.highlighted = max(0, min(len(self.matches) - 1, index + step))
        self._about()

    def _take_option(self, index: int | None) -> None:
        field = self.query_one("#variant-option", Input)
        typed = field.value.strip()
        known = find_option(self.options, typed)
        if known is None and index is not None and index < len(self.matches):
            known = self.matches[index]
        if known is not None:
            field.value = known.name
            self.query_one("#variant-value", Input).placeholder = f"{self.config} has {known.value}"
        elif not typed:
            self.notify("Type an option's name first.", severity="warning")
            return
        self.query_one("#variant-value", Input).focus()

    def action_next(self) -> None:
        focused = self.focused
        if focused is not None and focused.id == "variant-option":
            self._take_option(self.query_one("#variant-matches", OptionList).highlighted)
        else:
            self._add()

    def _add(self) -> None:
        name = self.query_one("#variant-option", Input).value.strip()
        value = self.query_one("#variant-value", Input).value.strip()
        label = self.query_one("#variant-label", Input).value.strip() or None
        if not name:
            self.notify("Pick an option first.", severity="warning")
            self.query_one("#variant-option", Input).focus()
            return
        if not value:
            self.notify(f"Give {canonical_name(name)} a value.", severity="warning")
            self.query_one("#variant-value", Input).focus()
            return
        if self.options and find_option(self.options, name) is None:
            self.notify(
                f"{self.config} has no option {canonical_name(name)}: pick one from the list.",
                title="Variant not added",
                severity="error",
            )
            self.query_one("#variant-option", Input).focus()
            return
        request = VariantRequest({canonical_name(name): value}, label)
        if problem := self.check(request):
            self.notify(problem, title="Variant not added", severity="error", timeout=8)
            return
        self.dismiss(request)

    def action_cancel(self) -> None:
        self.dismiss(None)


# What the keys do, by the field that has the focus (Enter takes the option, then adds).
KEYS_HINT = {
    "variant-option": "Enter: take the option   ↑/↓: options   →: complete   Tab: next field   Esc: cancel",
    "variant-value": "Enter: add the variant   Tab: next field (a label)   Esc: cancel",
    "variant-label": "Enter: add the variant   Tab: next field   Esc: cancel",
}


def _match_text(option: ConfigOption, width: int) -> Text:
    text = Text(option.name.ljust(width) + "  ", style="bold" if option.in_config else "")
    text.append(option.value, style="cyan")
    if option.description:
        text.append("  " + option.description, style="dim")
    text.no_wrap = True
    text.overflow = "ellipsis"
    return text
