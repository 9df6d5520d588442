"""The help screen: every key of the screen below and of the app, as remapped by the keymap."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

INTRO = (
    "Keys can be remapped in the config file's [keymap] table, by binding id, e.g.\n"
    '  [keymap]\n  "portfolio.archive" = "A"\n'
    "ctrl+p opens the command palette: every action below, and the screens, by name."
)


def key_table(screen: Screen[Any]) -> Table:
    table = Table(box=None, expand=True, header_style="bold")
    table.add_column("key", no_wrap=True)
    table.add_column("action")
    table.add_column("binding id", style="dim", no_wrap=True)
    # Only the app's own bindings (they have ids, so they can be remapped); a widget's cursor
    # keys are listed by the widget's own help in the command palette ("Keys").
    found: dict[str, list[str]] = {}
    described: dict[str, str] = {}
    for active in screen.active_bindings.values():
        binding = active.binding
        if not binding.id or not binding.description:
            continue
        found.setdefault(binding.id, []).append(screen.app.get_key_display(binding))
        described[binding.id] = binding.description
    for binding_id in sorted(found, key=lambda i: (i.startswith("app."), i)):
        keys = ", ".join(dict.fromkeys(found[binding_id]))
        table.add_row(keys, described[binding_id], binding_id)
    return table


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,f1", "app.pop_screen", "Close", id="help.close")]

    def __init__(self, below: Screen[Any]) -> None:
        super().__init__()
        self.below = below

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            title = getattr(self.below, "HELP_TITLE", type(self.below).__name__)
            yield Static(f"[b]Help · {title}[/b]", id="help-title")
            text = getattr(self.below, "HELP", "")
            if text:
                yield Static(text, id="help-text")
            yield Static(key_table(self.below), id="help-keys")
            yield Static(INTRO, id="help-intro")
