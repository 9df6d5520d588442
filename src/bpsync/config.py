"""Profiles: a TOML file in the user config dir, overridden by `BPSYNC_*` environment variables.

```toml
default_profile = "default"

[profiles.default]
base_url = "http://127.0.0.1:8400"
auth_url = "http://127.0.0.1:8400/oauth"
auth_method = "api_key"          # or "oauth"
client_id = "..."                # oauth only
secret_store = "keyring"         # or "file" (explicit, insecure opt-in)
units = "us"                     # or "si"; absent: US units for a mostly-US portfolio
```

No secret is ever written here: API keys and tokens live in the secret store (see client/auth.py)."""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Literal

import tomli_w

from bpsync.paths import config_file, ensure_private_dir

AuthMethod = Literal["api_key", "oauth"]
SecretStoreKind = Literal["keyring", "file"]

DEFAULT_BASE_URL = "http://127.0.0.1:8400"
DEFAULT_PROFILE = "default"
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_FIELDS = ("base_url", "auth_url", "auth_method", "client_id", "secret_store", "units")
# Environment variables that override a profile's fields (CI and cron have no config file).
ENV_OVERRIDES = {
    "base_url": "BPSYNC_BASE_URL",
    "auth_url": "BPSYNC_AUTH_URL",
    "auth_method": "BPSYNC_AUTH_METHOD",
    "client_id": "BPSYNC_CLIENT_ID",
    "secret_store": "BPSYNC_SECRET_STORE",
}


class ConfigError(Exception):
    """The configuration file or an override is invalid."""


@dataclass(frozen=True)
class Profile:
    name: str = DEFAULT_PROFILE
    base_url: str = DEFAULT_BASE_URL
    auth_url: str = ""
    auth_method: AuthMethod = "api_key"
    client_id: str = ""
    secret_store: SecretStoreKind = "keyring"
    units: str = ""  # "si", "us", or "" to follow the portfolio's country (bpsync.units)
    # Which fields came from the environment rather than the file (shown by `bpsync status`).
    overridden: tuple[str, ...] = ()

    @property
    def effective_auth_url(self) -> str:
        """The authorization server; by default the service's own `/oauth`."""
        return (self.auth_url or f"{self.base_url.rstrip('/')}/oauth").rstrip("/")

    def to_toml_table(self) -> dict[str, str]:
        data = asdict(self)
        return {k: str(data[k]) for k in _FIELDS if data[k] != ""}


def validate_name(name: str) -> str:
    if not _NAME.match(name):
        raise ConfigError(
            f"Invalid profile name {name!r}: use letters, digits, '.', '_' or '-' (at most 64)."
        )
    return name


def _check(profile: Profile) -> Profile:
    if profile.auth_method not in ("api_key", "oauth"):
        raise ConfigError(f"auth_method must be api_key or oauth, not {profile.auth_method!r}.")
    if profile.secret_store not in ("keyring", "file"):
        raise ConfigError(f"secret_store must be keyring or file, not {profile.secret_store!r}.")
    if profile.units not in ("", "si", "us"):
        raise ConfigError(f"units must be si or us, not {profile.units!r}.")
    for field in ("base_url", "auth_url"):
        url = getattr(profile, field)
        if url and not re.match(r"^https?://[^\s/]+", url):
            raise ConfigError(f"{field} must be an http(s) URL, not {url!r}.")
    return profile


@dataclass
class Config:
    """The whole config file."""

    default_profile: str = DEFAULT_PROFILE
    profiles: dict[str, Profile] | None = None
    # Other top-level tables (e.g. the terminal app's [keymap]): kept as read, written back as is.
    other: dict[str, Any] | None = None

    @property
    def names(self) -> list[str]:
        return sorted(self.profiles or {})


def load_config(path: Path | None = None) -> Config:
    path = path or config_file()
    if not path.exists():
        return Config(profiles={})
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc}).") from None
    profiles: dict[str, Profile] = {}
    for name, table in (raw.get("profiles") or {}).items():
        if not isinstance(table, dict):
            raise ConfigError(f"{path}: [profiles.{name}] must be a table.")
        unknown = set(table) - set(_FIELDS)
        if unknown:
            raise ConfigError(f"{path}: unknown keys in [profiles.{name}]: {sorted(unknown)}.")
        values = {k: str(v) for k, v in table.items()}
        profiles[name] = _check(Profile(name=validate_name(name), **values))  # type: ignore[arg-type]
    default = str(raw.get("default_profile", DEFAULT_PROFILE))
    other = {k: v for k, v in raw.items() if k not in ("default_profile", "profiles")}
    return Config(default_profile=default, profiles=profiles, other=other)


def _toml_string(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + re.sub(r"[\x00-\x1f]", lambda m: f"\\u{ord(m.group()):04x}", escaped) + '"'


def dump_config(config: Config) -> str:
    lines = [f"default_profile = {_toml_string(config.default_profile)}", ""]
    for name in config.names:
        lines.append(f"[profiles.{_toml_string(name)}]")
        for key, value in config.profiles[name].to_toml_table().items():  # type: ignore[index]
            lines.append(f"{key} = {_toml_string(value)}")
        lines.append("")
    if config.other:
        lines.append(tomli_w.dumps(config.other))
    return "\n".join(lines)


def save_config(config: Config, path: Path | None = None) -> Path:
    path = path or config_file()
    ensure_private_dir(path.parent)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(dump_config(config), encoding="utf-8")
    os.replace(tmp, path)  # atomic: a crash never leaves half a config
    return path


def save_profile(profile: Profile, *, make_default: bool = False, path: Path | None = None) -> Path:
    """Store `profile` (its file fields only; environment overrides are never persisted)."""
    config = load_config(path)
    profiles = dict(config.profiles or {})
    profiles[validate_name(profile.name)] = _check(replace(profile, overridden=()))
    if make_default or len(profiles) == 1:
        config.default_profile = profile.name
    config.profiles = profiles
    return save_config(config, path)


def remove_profile(name: str, path: Path | None = None) -> bool:
    config = load_config(path)
    profiles = dict(config.profiles or {})
    if profiles.pop(name, None) is None:
        return False
    config.profiles = profiles
    save_config(config, path)
    return True


def resolve_profile(
    name: str | None = None,
    *,
    env: dict[str, str] | None = None,
    path: Path | None = None,
    allow_new: bool = False,
) -> Profile:
    """The profile to use: `name`, else `BPSYNC_PROFILE`, else the file's default; then every
    `BPSYNC_*` override. A named profile that does not exist is an error (unless `allow_new`, for
    `login`); the default one may be absent (it is then built from defaults and the environment)."""
    env = dict(os.environ) if env is None else env
    config = load_config(path)
    chosen = name or env.get("BPSYNC_PROFILE") or config.default_profile
    validate_name(chosen)
    profile = (config.profiles or {}).get(chosen)
    if profile is None:
        if not allow_new and chosen not in (DEFAULT_PROFILE, config.default_profile):
            known = ", ".join(config.names) or "none"
            raise ConfigError(f"No profile named {chosen!r} (known: {known}).")
        profile = Profile(name=chosen)
    overrides: dict[str, Any] = {}
    for field, var in ENV_OVERRIDES.items():
        if env.get(var):
            overrides[field] = env[var]
    if env.get("BPSYNC_API_KEY") and "auth_method" not in overrides:
        overrides["auth_method"] = "api_key"  # a key in the environment means key auth
    if overrides:
        profile = replace(profile, overridden=tuple(sorted(overrides)), **overrides)
    return _check(profile)
