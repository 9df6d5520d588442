"""Sign in: choose a profile, connect with its stored credentials, store an API key (masked), or
sign in as a user through the browser (OAuth + PKCE) with a waiting screen that can be cancelled."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import (
    Button,
    Checkbox,
    Input,
    Label,
    OptionList,
    Static,
    TabbedContent,
    TabPane,
)
from textual.widgets.option_list import Option

from bpsync.client import errors as E
from bpsync.client.auth import keyring_problem
from bpsync.config import DEFAULT_PROFILE, Profile, validate_name
from bpsync.tui import connection as conn
from bpsync.tui.messages import KeyStored, OAuthStarted, SignedIn
from bpsync.tui.screens.base import AppScreen, failure
from bpsync.tui.widgets.footer import AppFooter
from bpsync.tui.widgets.topbar import TopBar


class OAuthWaitScreen(ModalScreen[None]):
    """Shown while the browser sign-in runs; Cancel (or escape) stops the flow."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="oauth.cancel")]

    def __init__(self, url: str) -> None:
        super().__init__()
        self.url = url

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static("[b]Waiting for the browser…[/b]", id="question")
            yield Static(
                "Sign in and grant access in the browser window. If no browser opened, open this "
                "address yourself:",
            )
            yield Static(self.url, id="oauth-url", markup=False)
            with Horizontal(id="buttons"):
                yield Button("Cancel", id="cancel", variant="error")

    def on_button_pressed(self) -> None:
        self.action_cancel()

    def action_cancel(self) -> None:
        self.dismiss(None)


def profile_summary(profile: Profile) -> Text:
    """The chosen profile in one line: name, service, sign-in method and where secrets live."""
    method = "OAuth user" if profile.auth_method == "oauth" else "API key"
    store = "INSECURE file" if profile.secret_store == "file" else profile.secret_store
    return Text.assemble(
        (profile.name, "bold"), f" · {profile.base_url} · {method} · secrets: {store}"
    )


class SignInForms(Vertical):
    """The chosen profile, and the two ways to give it credentials: an API key, or OAuth in the
    browser (the screen handles their buttons)."""

    def compose(self) -> ComposeResult:
        yield Static("", id="profile-info")
        with TabbedContent(id="methods"):
            with TabPane("API key", id="tab-key"):
                yield Label("Service URL")
                yield Input(id="base-url", compact=True)
                yield Label("API key (svc_test_… sandbox, svc_live_… production)")
                yield Input(password=True, id="api-key", compact=True)
                yield Button("Save key and connect", id="save-key", compact=True)
            with TabPane("OAuth (browser)", id="tab-oauth"):
                yield Label("Client id")
                yield Input(id="client-id", compact=True)
                yield Label("Client secret (kept in the secret store)")
                yield Input(password=True, id="client-secret", compact=True)
                yield Button("Sign in with the browser", id="oauth", compact=True)
        # Only where there is no OS keyring: the explicit, warned opt-in (never implied).
        yield Checkbox(
            "Keep the secret in an unencrypted file (0600) because this machine has no "
            "OS keyring: anyone who can read your files can use it",
            id="file-store",
            compact=True,
        )
        yield Static("", id="note")


class SignInScreen(AppScreen):
    HELP_TITLE = "Sign in"
    HELP = (
        "Pick a profile on the left (or type a new name) and press Connect to use the credentials "
        "it already has. To store an API key, paste it in the API key tab: it is checked with the "
        "service, then kept in the OS keyring (or the profile's secret store), never in a file you "
        "can read. The OAuth tab signs you in as a user in the browser."
    )
    BINDINGS = [
        Binding("escape", "back", "Back", show=False, id="screen.back"),
        Binding("ctrl+n", "connect", "Connect", id="signin.connect"),
    ]

    def __init__(
        self,
        profile: str | None = None,
        *,
        auto_connect: bool = True,
        pinned: Profile | None = None,
    ) -> None:
        super().__init__()
        self.initial = profile
        self.pinned = pinned
        self.auto_connect = auto_connect
        self.selected: Profile | None = None
        self.oauth_wait: OAuthWaitScreen | None = None

    def compose(self) -> ComposeResult:
        yield TopBar("Sign in")
        with Horizontal(id="signin"):
            with Vertical(id="profiles-pane"):
                yield Label("Profiles")
                yield OptionList(id="profiles")
                yield Input(placeholder="new profile name", id="new-profile", compact=True)
                yield Button("Connect", id="connect", variant="primary", compact=True)
            yield SignInForms(id="signin-forms")
        yield AppFooter()

    def on_mount(self) -> None:
        self.query_one("#file-store", Checkbox).display = False
        self.load_profiles()

    def _offer_file_store(self, problem: str | None) -> None:
        box = self.query_one("#file-store", Checkbox)
        box.display = problem is not None
        if problem is not None:
            box.tooltip = f"No OS keyring: {problem}"

    def _with_store(self, profile: Profile) -> Profile:
        """The secret store this sign-in asked for: the keyring, or the file when ticked."""
        ticked = self.query_one("#file-store", Checkbox)
        return replace(
            profile, secret_store="file" if ticked.display and ticked.value else "keyring"
        )

    # --- profiles --------------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="profiles", exit_on_error=False)
    def load_profiles(self) -> None:
        try:
            config, names = conn.profiles()
            chosen = conn.choose(self.initial, pinned=self.pinned)
            if self.pinned is not None:
                names = [*names, self.pinned.name]
        except Exception as exc:  # a damaged config file: say so, offer a fresh profile
            self.post_message(failure("Profiles", exc))
            chosen = Profile(name=self.initial or DEFAULT_PROFILE)
            config, names = None, []
        self.app.call_from_thread(self._show_profiles, names, chosen, config)
        self.app.call_from_thread(self._offer_file_store, keyring_problem())

    def _show_profiles(self, names: list[str], chosen: Profile, config: Any) -> None:
        options = self.query_one("#profiles", OptionList)
        options.clear_options()
        listed = sorted(set(names) | {chosen.name})
        for name in listed:
            default = " (default)" if config and name == config.default_profile else ""
            options.add_option(Option(f"{name}{default}", id=name))
        options.highlighted = listed.index(chosen.name)
        self._select(chosen)
        if self.auto_connect:
            self.auto_connect = False
            self.connect(chosen, quiet=True)

    def _select(self, profile: Profile) -> None:
        self.selected = profile
        self.query_one("#profile-info", Static).update(profile_summary(profile))
        self.query_one("#base-url", Input).value = profile.base_url
        self.query_one("#client-id", Input).value = profile.client_id
        if profile.auth_method == "oauth":
            self.query_one("#methods", TabbedContent).active = "tab-oauth"

    @on(OptionList.OptionHighlighted, "#profiles")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        name = event.option.id
        if name and (self.selected is None or self.selected.name != name):
            self.pick(name)

    @on(OptionList.OptionSelected, "#profiles")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        if event.option.id and self.selected and self.selected.name == event.option.id:
            self.connect(self.selected)

    @on(Input.Submitted, "#new-profile")
    def _new_profile(self, event: Input.Submitted) -> None:
        name = event.value.strip()
        try:
            validate_name(name)
        except Exception as exc:
            self.inline(str(exc))
            return
        self.pick(name)

    @work(thread=True, exclusive=True, group="profiles", exit_on_error=False)
    def pick(self, name: str) -> None:
        try:
            profile = conn.choose(name, pinned=self.pinned)
        except Exception as exc:
            self.post_message(failure("Profile", exc))
            return
        self.app.call_from_thread(self._select, profile)

    # --- connecting ------------------------------------------------------------------------------

    def action_connect(self) -> None:
        if self.selected is not None:
            self.connect(self.selected)

    @on(Button.Pressed, "#connect")
    def _connect_pressed(self) -> None:
        self.action_connect()

    @work(exclusive=True, group="connect", exit_on_error=False)
    async def connect(self, profile: Profile, quiet: bool = False) -> None:
        self.inline(f"Connecting to {profile.base_url} as {profile.name}…", error=False)
        try:
            connection = await asyncio.to_thread(conn.connect, profile)
        except E.LoginRequiredError as exc:
            # Nothing stored yet: not an error on start, the form below is the way in.
            text = f"{exc} Enter a key below." if not quiet else "Sign in below."
            self.inline(text, error=not quiet)
            return
        except (E.BPSyncError, ValueError, OSError) as exc:
            self.post_message(failure("Connect", exc))
            return
        try:
            await conn.verify(connection)
        except (E.BPSyncError, ValueError, OSError) as exc:
            await connection.client.aclose()
            self.post_message(failure("Connect", exc))
            return
        except asyncio.CancelledError:
            await connection.client.aclose()
            raise
        self.bpsync.set_connection(connection)
        self.post_message(SignedIn(profile.name, connection.environment))

    def on_signed_in(self, message: SignedIn) -> None:
        self.inline(f"Signed in as profile {message.profile}.", error=False)
        self.bpsync.after_sign_in()

    # --- API key ---------------------------------------------------------------------------------

    @on(Button.Pressed, "#save-key")
    @on(Input.Submitted, "#api-key")
    def _save_key(self) -> None:
        key = self.query_one("#api-key", Input).value.strip()
        base_url = self.query_one("#base-url", Input).value.strip()
        if self.selected is None:
            return
        if not key:
            self.inline("Paste an API key first.")
            return
        profile = replace(self.selected, base_url=base_url or self.selected.base_url)
        self.save_key(self._with_store(profile), key)

    @work(exclusive=True, group="connect", exit_on_error=False)
    async def save_key(self, profile: Profile, key: str) -> None:
        self.inline("Checking the key with the service…", error=False)
        if await self.guarded("API key", conn.check_key(profile, key)) is None:
            return
        masked = await self.guarded("API key", asyncio.to_thread(conn.store_key, profile, key))
        if masked is None:
            return
        self.post_message(KeyStored(profile.name, masked))
        stored = await self.guarded("Profile", asyncio.to_thread(conn.choose, profile.name))
        if stored is not None:
            self.connect(stored)

    def on_key_stored(self, message: KeyStored) -> None:
        self.query_one("#api-key", Input).value = ""
        self.notify(f"Key {message.masked} stored for profile {message.profile}.")

    # --- OAuth -----------------------------------------------------------------------------------

    @on(Button.Pressed, "#oauth")
    def _oauth_pressed(self) -> None:
        if self.selected is None:
            return
        client_id = self.query_one("#client-id", Input).value.strip()
        secret = self.query_one("#client-secret", Input).value.strip()
        base_url = self.query_one("#base-url", Input).value.strip() or self.selected.base_url
        profile = replace(self.selected, client_id=client_id, base_url=base_url)
        self.oauth(self._with_store(profile), secret or None)

    @work(exclusive=True, group="oauth", exit_on_error=False)
    async def oauth(self, profile: Profile, secret: str | None) -> None:
        app = await self.guarded("OAuth", asyncio.to_thread(conn.oauth_app, profile, secret))
        if app is None:
            return

        async def open_url(url: str) -> None:
            self.post_message(OAuthStarted(url))
            await asyncio.to_thread(self.bpsync.open_browser, url)

        try:
            tokens = await self.guarded(
                "OAuth", conn.oauth_sign_in(app, open_url, timeout=self.bpsync.oauth_timeout)
            )
        finally:
            self.app.call_later(self._close_wait)
        if tokens is None:
            return
        saved = asyncio.to_thread(conn.store_oauth, profile, app, tokens)
        if await self.guarded("OAuth", saved) is None:
            return
        self.query_one("#client-secret", Input).value = ""
        stored = await self.guarded("Profile", asyncio.to_thread(conn.choose, profile.name))
        if stored is not None:
            self.connect(stored)

    def on_oauth_started(self, message: OAuthStarted) -> None:
        self.oauth_wait = OAuthWaitScreen(message.url)
        self.app.push_screen(self.oauth_wait, self._waiting_closed)

    def _waiting_closed(self, _: None) -> None:
        if self.oauth_wait is not None:  # closed by the user, not by the flow finishing
            self.oauth_wait = None
            self.workers.cancel_group(self, "oauth")
            self.inline("Sign-in cancelled.", error=False)

    def _close_wait(self) -> None:
        wait, self.oauth_wait = self.oauth_wait, None
        if wait is not None and wait.is_attached:
            wait.dismiss(None)
