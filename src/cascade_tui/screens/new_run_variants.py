"""The new-run form's variants: `a` adds a variant of the highlighted config (a simulator option
and value, from `variant_editor.py`) under it, `x` drops the highlighted variant."""

from __future__ import annotations

from functools import partial

from cascade_core.variants import VariantError

from ..views.variant_form import add_variant, remove_variant
from .new_run_configs import ConfigList
from .variant_editor import VariantRequest, VariantScreen


class VariantRows(ConfigList):
    def action_add_variant(self) -> None:
        """`a`: a variant of the highlighted row's config, from the variant editor."""
        row = self._highlighted_row()
        if row is None:
            self.notify("No config to add a variant to.", severity="warning")
            return
        config = row.gpu_config

        def check(request: VariantRequest) -> str | None:
            try:
                add_variant(self.rows, config, request.options, request.label)
            except VariantError as exc:
                return str(exc)
            return None

        self.app.push_screen(
            VariantScreen(config, self.services, self.option_cache, check),
            partial(self._variant_made, config),
        )

    def _variant_made(self, config: str, request: VariantRequest | None) -> None:
        if request is None:
            return
        try:
            self.rows, added = add_variant(self.rows, config, request.options, request.label)
        except VariantError as exc:  # checked in the editor; the rows may have changed since
            self.notify(str(exc), title="Variant not added", severity="error", timeout=8)
            return
        self._fill_list(added.key)

    def action_remove_variant(self) -> None:
        row = self._highlighted_row()
        if row is None:
            return
        if not row.is_variant:
            self.notify(f"{row.gpu_config} is a config, not a variant: space unpicks it.", severity="warning")
            return
        index = self.rows.index(row)
        self.rows = remove_variant(self.rows, row.key)
        self._fill_list(self.rows[index - 1].key if index > 0 else None)
