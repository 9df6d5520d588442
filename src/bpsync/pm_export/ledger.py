"""The export ledger: which readings `bpsync export pm-bills` has written, per profile, so the
next export skips them (unless --all). A small JSON file in the user state dir
(`pm-export/<profile>.json`): meter ids and periods, never a secret."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from bpsync.paths import ensure_private_dir, state_dir


def ledger_path(profile: str) -> Path:
    return state_dir() / "pm-export" / f"{profile}.json"


def load_ledger(profile: str) -> dict[str, list[str]]:
    """meter id → periods ("start/end", ISO dates) already exported."""
    path = ledger_path(profile)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(
            f"{path}: not a valid export ledger ({exc}); delete it to start over"
        ) from None
    bills = data.get("bills") if isinstance(data, dict) else None
    if not isinstance(bills, dict):
        raise ValueError(f"{path}: expected {{'bills': {{meter id: [periods]}}}}")
    return {str(m): [str(p) for p in periods] for m, periods in bills.items()}


def record(profile: str, written: Mapping[str, Sequence[str]]) -> Path:
    """Add `written` to the ledger (atomically: a crash never leaves half a file)."""
    ledger = load_ledger(profile)
    for meter_id, periods in written.items():
        ledger[meter_id] = sorted(set(ledger.get(meter_id, ())) | set(periods))
    path = ledger_path(profile)
    ensure_private_dir(path.parent)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"bills": ledger}, indent=1, sort_keys=True) + "\n", "utf-8")
    os.replace(tmp, path)
    return path
