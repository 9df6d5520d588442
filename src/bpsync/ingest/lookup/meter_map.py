"""The profile's meter map: an external reference (a utility account or meter number, a Portfolio
Manager meter id, a Green Button usage point) → the service's meter id. A small JSON file per
profile in the user config dir (`meter-maps/<profile>.json`): no secrets, human-readable, edited
with `bpsync meters link`."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path

from bpsync.paths import config_dir, ensure_private_dir

_METER_ID = re.compile(r"^mtr_[A-Za-z0-9_-]+$")


def meter_map_path(profile: str) -> Path:
    return config_dir() / "meter-maps" / f"{profile}.json"


def load_meter_map(profile: str) -> dict[str, str]:
    path = meter_map_path(profile)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not a valid meter map ({exc})") from None
    links = data.get("links", data) if isinstance(data, dict) else None
    if not isinstance(links, dict):
        raise ValueError(f"{path}: expected {{'links': {{reference: meter id}}}}")
    return {str(k): str(v) for k, v in links.items()}


def save_meter_map(profile: str, links: Mapping[str, str]) -> Path:
    path = meter_map_path(profile)
    ensure_private_dir(path.parent)
    tmp = path.with_suffix(".tmp")
    body = {"links": dict(sorted(links.items()))}
    tmp.write_text(json.dumps(body, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)  # atomic: a crash never leaves half a map
    return path


def link_meter(profile: str, reference: str, meter_id: str) -> Path:
    reference = " ".join(reference.split())
    if not reference:
        raise ValueError("the external reference is empty")
    if not _METER_ID.match(meter_id):
        raise ValueError(f"{meter_id!r} is not a meter id (mtr_…)")
    links = load_meter_map(profile)
    links[reference] = meter_id
    return save_meter_map(profile, links)


def unlink_meter(profile: str, reference: str) -> bool:
    links = load_meter_map(profile)
    if links.pop(" ".join(reference.split()), None) is None:
        return False
    save_meter_map(profile, links)
    return True
