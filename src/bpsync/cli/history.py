"""`bpsync history METER`: the trail of a meter's replaced readings (issue 30,
docs/corrections.md): who replaced what, when, from which file, the old figures and the new.
Read from this machine's import journal; no request is made."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from bpsync.cli.output import JsonOpt, ProfileOpt, _state, print_json, stdout


def _figures(r: dict[str, Any]) -> str:
    text = f"{r.get('start_date')}..{r.get('end_date')} {r.get('consumption')}"
    if r.get("cost") is not None:
        text += f", cost {r['cost']}" + (f" {r['cost_currency']}" if r.get("cost_currency") else "")
    if r.get("demand_kw") is not None:
        text += f", demand {r['demand_kw']} kW"
    return text


def meter_ids(meter: str, profile: str | None) -> list[str]:
    """The meter as given (an id) and, through the profile's meter map, its reference's id."""
    from bpsync.ingest import load_meter_map

    ids = [meter]
    try:
        mapped = load_meter_map(profile or "default")
    except Exception:  # no map yet, or unreadable: the id alone
        mapped = {}
    folded = " ".join(meter.split()).casefold()
    if folded in mapped and mapped[folded] not in ids:
        ids.append(mapped[folded])
    return ids


def history_rows(entries: list[dict[str, Any]]) -> list[dict[str, str]]:
    """One line per replaced reading, as the table and the terminal app show it."""
    return [
        {
            "when": str(e["when"]),
            "who": str(e["who"]),
            "file": str(e["file"]),
            "kind": str(e["kind"]),
            "status": str(e["status"]) + (f": {e['reason']}" if e.get("reason") else ""),
            "old": _figures(e["old"]),
            "new": "; ".join(_figures(n) for n in e["new"]) or "-",
        }
        for e in entries
    ]


def history(
    ctx: typer.Context,
    meter: Annotated[str, typer.Argument(help="Meter id, or its external reference")],
    profile: ProfileOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The readings of METER replaced by `bpsync import --update`, newest first: when, who, the
    file, the stored reading replaced and the readings that replaced it."""
    from rich.markup import escape
    from rich.table import Table

    from bpsync.ingest import Journal  # the engine loads when the command runs

    state = _state(ctx, profile, as_json)
    with Journal() as journal:
        entries = journal.replacements(meter_ids(meter, state.profile_name))
    if state.json:
        print_json({"meter": meter, "replacements": entries})
        return
    out = stdout()
    if not entries:
        out.print(f"No replaced readings for {escape(meter)} in this machine's import journal.")
        return
    t = Table(title=f"Replaced readings of {escape(meter)}", header_style="bold")
    columns = ("when", "who", "file", "kind", "status", "old", "new")
    for c in columns:
        t.add_column(c, overflow="fold")
    for row in history_rows(entries):
        t.add_row(*(escape(row[c]) for c in columns))
    out.print(t)
