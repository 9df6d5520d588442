"""The bar on top of every screen: the screen's title, the profile, and the environment badge."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.reactive import reactive
from textual.widgets import Static


class EnvBadge(Static):
    """LIVE (red), SANDBOX (green), OAUTH (yellow) or NOT SIGNED IN: follows the app's `badge`."""

    DEFAULT_CSS = """
    EnvBadge { width: auto; padding: 0 1; text-style: bold; }
    EnvBadge.-live { background: $error; color: $text; }
    EnvBadge.-sandbox { background: $success; color: $text; }
    EnvBadge.-oauth { background: $warning; color: $text; }
    EnvBadge.-none { background: $panel; color: $text-muted; }
    """

    def on_mount(self) -> None:
        self.watch(self.app, "badge", self._show)

    def _show(self, badge: tuple[str, str]) -> None:
        label, css_class = badge
        self.update(label)
        self.set_classes(css_class)


class TopBar(Horizontal):
    DEFAULT_CSS = """
    TopBar { height: 1; dock: top; background: $panel; }
    TopBar #title { width: 1fr; padding: 0 1; text-style: bold; }
    TopBar #where { width: auto; padding: 0 1; color: $text-muted; }
    """

    title: reactive[str] = reactive("")

    def __init__(self, title: str) -> None:
        super().__init__()
        self.set_reactive(TopBar.title, title)

    def compose(self) -> ComposeResult:
        yield Static(Text(f"bpsync · {self.title}"), id="title")
        yield Static("", id="where")
        yield EnvBadge()

    def on_mount(self) -> None:
        self.watch(self.app, "where", self._where)

    def watch_title(self, title: str) -> None:
        if self.is_mounted:
            self.query_one("#title", Static).update(Text(f"bpsync · {title}"))

    def _where(self, where: str) -> None:
        self.query_one("#where", Static).update(Text(where))
