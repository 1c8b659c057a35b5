"""The new-run form's config list: a row per GPU config of the trace's arch (its variants under
it), a count per row (space picks or unpicks, `+` / `-` change it); the rows' logic is pure, in
`variant_form.py`."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from ..views.variant_form import FormRow, row_text, set_count
from .new_run_plan import PlanLines


class ConfigList(PlanLines):
    def _fill_list(self, highlight: str | None) -> None:
        """The rows as the list's options, the cursor on `highlight` (a row key)."""
        options = self.query_one("#configs", OptionList)
        options.clear_options()
        options.add_options([Option(self._prompt(row), id=row.key) for row in self.rows])
        keys = [row.key for row in self.rows]
        if keys:
            options.highlighted = keys.index(highlight) if highlight in keys else 0
        self._update_total()

    def _prompt(self, row: FormRow) -> Text:
        config = next((c for c in self.configs if c.name == row.gpu_config), None)
        suggested = bool(self.trace and row.gpu_config == self.trace.suggested_sim_config)
        return Text(
            row_text(
                row,
                config.arch if config else "",
                config.core_clock_mhz if config else None,
                suggested and not row.is_variant,
            ),
            style="bold" if row.count else "",
        )

    def _refresh_option(self, key: str) -> None:
        options = self.query_one("#configs", OptionList)
        row = next(r for r in self.rows if r.key == key)
        options.replace_option_prompt(key, self._prompt(row))
        self._update_total()

    def _highlighted_row(self) -> FormRow | None:
        options = self.query_one("#configs", OptionList)
        if options.highlighted is None or not self.rows:
            return None
        key = options.get_option_at_index(options.highlighted).id
        return next((row for row in self.rows if row.key == key), None)

    def action_toggle(self) -> None:  # type: ignore[override]  # not DOMNode's toggle(attribute)
        """Space: as marking on the Runs list, pick (or unpick) and move on to the next row."""
        options = self.query_one("#configs", OptionList)
        if self._toggle_highlighted() and (options.highlighted or 0) < options.option_count - 1:
            options.action_cursor_down()  # no wrapping round to the top, as on the Runs list

    def _toggle_highlighted(self) -> bool:
        row = self._highlighted_row()
        if row is None:
            return False
        self.rows = set_count(self.rows, row.key, 0 if row.count else 1)
        self._refresh_option(row.key)
        return True

    def action_change(self, delta: int) -> None:
        row = self._highlighted_row()
        if row is not None:
            self.rows = set_count(self.rows, row.key, row.count + delta)
            self._refresh_option(row.key)
