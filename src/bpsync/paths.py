"""Where bpsync keeps its files: platformdirs locations, overridable for tests, CI and cron."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP_NAME = "bpsync"


def config_dir() -> Path:
    """The user config dir (profiles); `BPSYNC_CONFIG_DIR` overrides it."""
    override = os.environ.get("BPSYNC_CONFIG_DIR")
    return Path(override) if override else Path(platformdirs.user_config_dir(APP_NAME))


def user_templates_dir() -> Path:
    """Mapping templates the user saved (from `templates suggest --save` or the import wizard);
    searched before the shipped ones."""
    return config_dir() / "templates"


def state_dir() -> Path:
    """The user state dir (rate-limit state, locks, opt-in file secrets); `BPSYNC_STATE_DIR`
    overrides it."""
    override = os.environ.get("BPSYNC_STATE_DIR")
    return Path(override) if override else Path(platformdirs.user_state_dir(APP_NAME))


def package_dir(name: str) -> Path:
    """A data folder shipped inside the package (`templates`, `sample_data`), found through
    importlib.resources so it works from a wheel as from the repository."""
    from importlib import resources

    return Path(str(resources.files("bpsync").joinpath(name)))


def config_file() -> Path:
    return config_dir() / "config.toml"


def ensure_private_dir(path: Path) -> Path:
    """Create `path` (and parents) readable by the owner only."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path
