"""Profiles: the TOML file, environment overrides, validation; pagination arguments."""

from __future__ import annotations

from pathlib import Path

import pytest

from bpsync.client.pagination import AsyncPaginator
from bpsync.client.resource import segment
from bpsync.config import (
    ConfigError,
    Profile,
    load_config,
    remove_profile,
    resolve_profile,
    save_profile,
)
from bpsync.paths import config_file, state_dir


def test_dirs_follow_the_environment(tmp_path: Path) -> None:
    assert config_file() == tmp_path / "config" / "config.toml"
    assert state_dir() == tmp_path / "state"


def test_profiles_round_trip_and_default() -> None:
    save_profile(Profile(name="default", base_url="https://api.example.com"))
    save_profile(
        Profile(
            name="ana",
            base_url="https://api.example.com",
            auth_method="oauth",
            client_id='cl"ient\\1',
        ),
        make_default=True,
    )
    config = load_config()
    assert config.default_profile == "ana" and config.names == ["ana", "default"]
    assert config.profiles["ana"].client_id == 'cl"ient\\1'  # type: ignore[index]
    assert resolve_profile(env={}).name == "ana"
    assert resolve_profile("default", env={}).auth_method == "api_key"
    assert resolve_profile(env={}).effective_auth_url == "https://api.example.com/oauth"
    assert remove_profile("ana") and not remove_profile("ana")
    import tomllib

    table = tomllib.loads(config_file().read_text())["profiles"]["default"]
    assert set(table) == {"base_url", "auth_method", "secret_store"}  # settings only


def test_environment_overrides() -> None:
    save_profile(Profile(name="default", base_url="https://a.example.com"))
    env = {
        "BPSYNC_BASE_URL": "https://b.example.com",
        "BPSYNC_API_KEY": "svc_test_x",
    }
    profile = resolve_profile(env=env)
    assert profile.base_url == "https://b.example.com" and profile.auth_method == "api_key"
    assert profile.overridden == ("auth_method", "base_url")
    assert resolve_profile(env={"BPSYNC_PROFILE": "default"}).base_url == "https://a.example.com"
    fresh = resolve_profile(env={"BPSYNC_AUTH_METHOD": "oauth", "BPSYNC_CLIENT_ID": "c1"})
    assert fresh.auth_method == "oauth" and fresh.client_id == "c1"


@pytest.mark.parametrize(
    "env",
    [
        {"BPSYNC_AUTH_METHOD": "password"},
        {"BPSYNC_BASE_URL": "ftp://x"},
        {"BPSYNC_SECRET_STORE": "plaintext"},
        {"BPSYNC_PROFILE": "../etc"},
        {"BPSYNC_PROFILE": "missing"},
    ],
)
def test_invalid_settings_are_refused(env: dict[str, str]) -> None:
    with pytest.raises(ConfigError):
        resolve_profile(env=env)


def test_damaged_config_file_is_reported() -> None:
    config_file().parent.mkdir(parents=True)
    config_file().write_text("[profiles.default\nbase_url = 1")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config()
    config_file().write_text('[profiles.default]\npassword = "x"\n')
    with pytest.raises(ConfigError, match="unknown keys"):
        load_config()


@pytest.mark.parametrize("bad", ["", "a/b", "..", "a?b", "a#b", "a%2F"])
def test_ids_cannot_escape_their_path_segment(bad: str) -> None:
    with pytest.raises(ValueError):
        segment(bad)


@pytest.mark.parametrize(("page", "per_page"), [(0, 50), (1, 0), (1, 201)])
def test_paginator_arguments(page: int, per_page: int) -> None:
    async def fetch(n: int, size: int):  # type: ignore[no-untyped-def]
        raise AssertionError("not called")

    with pytest.raises(ValueError):
        AsyncPaginator(fetch, page=page, per_page=per_page)


def test_saving_a_profile_keeps_other_tables() -> None:
    path = config_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('[keymap]\n"app.help" = "f1"\n\n[ui]\ntheme = "dark"\nwidth = 100\n')
    save_profile(Profile(name="ops", base_url="https://example.com"))
    text = path.read_text()
    assert load_config().names == ["ops"]
    import tomllib

    raw = tomllib.loads(text)
    assert raw["keymap"] == {"app.help": "f1"}
    assert raw["ui"] == {"theme": "dark", "width": 100}
