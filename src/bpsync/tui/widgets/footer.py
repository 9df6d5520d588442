"""The footer every screen shows: Textual's, with the app's Quit and Help keys first.

Textual lists a screen's own bindings before the app's, so at 80 columns the keys a newcomer
needs most (how to get help, how to leave) fall off the right edge."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widget import Widget
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

FIRST = ("quit", "help")  # actions shown before every other key, in this order


class AppFooter(Footer):
    def compose(self) -> ComposeResult:
        keys: list[Widget] = list(super().compose())

        def rank(widget: Widget) -> int:
            action = widget.action if isinstance(widget, FooterKey) else ""
            return FIRST.index(action) if action in FIRST else len(FIRST)

        yield from sorted(keys, key=rank)  # stable: the rest keep Textual's order
