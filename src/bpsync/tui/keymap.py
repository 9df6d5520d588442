"""User key bindings: a top-level `[keymap]` table in the profiles' config file.

```toml
[keymap]
"app.help" = "f1"
"portfolio.archive" = "A"          # several keys: "x,delete"
"app.units" = "U"                  # SI/US units; "screen.export" exports any table (e)
```

Keys are Binding ids (listed on the help screen and in docs/tui.md); values are Textual key names.
`bpsync.config.load_config` reads only `[profiles.*]` and `default_profile`, so this table does not
disturb it; it is read here with the same file location and error type."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from bpsync.config import ConfigError
from bpsync.paths import config_file

_ID = re.compile(r"^[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*$")
_KEY = re.compile(r"^[A-Za-z0-9_+\-]+(,[A-Za-z0-9_+\-]+)*$")


def parse_keymap(table: object, source: str = "keymap") -> dict[str, str]:
    """Validate a `[keymap]` table: binding id -> comma-separated keys."""
    if not isinstance(table, dict):
        raise ConfigError(f"{source}: [keymap] must be a table.")
    keymap: dict[str, str] = {}
    for binding_id, keys in table.items():
        if not _ID.match(str(binding_id)):
            raise ConfigError(f"{source}: {binding_id!r} is not a binding id (like 'app.help').")
        if isinstance(keys, list):
            keys = ",".join(str(k) for k in keys)
        if not isinstance(keys, str) or not _KEY.match(keys.replace(" ", "")):
            raise ConfigError(f"{source}: keys for {binding_id!r} must be like 'f1' or 'x,delete'.")
        keymap[str(binding_id)] = keys.replace(" ", "")
    return keymap


def load_keymap(path: Path | None = None) -> dict[str, str]:
    """The `[keymap]` table of the config file; empty when the file or the table is absent."""
    path = path or config_file()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc}).") from None
    if "keymap" not in raw:
        return {}
    return parse_keymap(raw["keymap"], str(path))
