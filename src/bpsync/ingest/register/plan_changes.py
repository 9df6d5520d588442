"""The register's idempotent plan against what the service holds: properties match by
`internal_ref`, buildings by name within their property, meters by name within their building;
each becomes a create, an update of only the changed fields, unchanged, or a conflict (meters
have no update endpoint, so a changed type or unit is a conflict)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from bpsync.ingest.register.read import Register


@dataclass(frozen=True)
class Action:
    """`op` is create, update (payload = only the changed fields) or unchanged; `id` is the
    existing resource's id; `parent` is the key of the property/building it belongs to."""

    kind: Literal["property", "building", "meter"]
    op: Literal["create", "update", "unchanged", "conflict"]
    key: tuple[str, ...]
    payload: dict[str, Any]
    id: str | None = None
    parent: tuple[str, ...] | None = None
    reason: str | None = None


def _changed(wanted: Mapping[str, Any], current: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in wanted.items():
        have = current.get(k)
        if isinstance(v, dict) and isinstance(have, dict):
            sub = {kk: vv for kk, vv in v.items() if have.get(kk) != vv}
            if sub:
                out[k] = sub
        elif k == "use_types":
            norm = lambda us: sorted((u["type"], round(float(u["gfa_m2"]), 2)) for u in us or [])  # noqa: E731
            if norm(v) != norm(have):
                out[k] = v
        elif isinstance(v, float) and isinstance(have, int | float):
            if abs(v - have) > 1e-9:
                out[k] = v
        elif have != v:
            out[k] = v
    return out


def plan_register(
    register: Register,
    properties: Sequence[Mapping[str, Any]] = (),
    buildings: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    meters: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
) -> list[Action]:
    """What to send so the service matches the register, given what it holds now (the API's own
    JSON: properties; buildings by property id; meters by building id). Properties match by
    `internal_ref`, buildings by name within their property, meters by name within their
    building; meters have no update endpoint, so a changed type or unit is a conflict."""
    buildings = buildings or {}
    meters = meters or {}
    by_ref = {p.get("internal_ref"): p for p in properties if p.get("internal_ref")}
    actions: list[Action] = []
    prop_ids: dict[str, str | None] = {}
    for item in register.properties:
        current = by_ref.get(item.key[0])
        if current is None:
            actions.append(Action("property", "create", item.key, item.payload))
            prop_ids[item.key[0]] = None
            continue
        prop_ids[item.key[0]] = current["id"]
        diff = _changed(item.payload, current)
        actions.append(
            Action("property", "update" if diff else "unchanged", item.key, diff, current["id"])
        )
    bld_ids: dict[tuple[str, str], str | None] = {}
    for item in register.buildings:
        ref, name = item.key
        pid = prop_ids.get(ref)
        current = next(
            (
                b
                for b in buildings.get(pid or "", ())
                if str(b.get("name", "")).casefold() == name.casefold()
            ),
            None,
        )
        if current is None:
            actions.append(Action("building", "create", item.key, item.payload, parent=(ref,)))
            bld_ids[(ref, name.casefold())] = None
            continue
        bld_ids[(ref, name.casefold())] = current["id"]
        diff = _changed(item.payload, current)
        actions.append(
            Action(
                "building", "update" if diff else "unchanged", item.key, diff, current["id"], (ref,)
            )
        )
    for item in register.meters:
        ref, building, name = item.key
        bid = bld_ids.get((ref, building.casefold()))
        current = next(
            (
                m
                for m in meters.get(bid or "", ())
                if str(m.get("name") or "").casefold() == name.casefold()
            ),
            None,
        )
        parent = (ref, building)
        if current is None:
            actions.append(Action("meter", "create", item.key, item.payload, parent=parent))
        elif (
            current.get("type") != item.payload["type"]
            or current.get("unit") != item.payload["unit"]
        ):
            actions.append(
                Action(
                    "meter",
                    "conflict",
                    item.key,
                    item.payload,
                    current["id"],
                    parent,
                    reason=f"the service's meter is {current.get('type')} in {current.get('unit')}; "
                    "meters cannot be changed, create a new one with another name",
                )
            )
        else:
            actions.append(Action("meter", "unchanged", item.key, {}, current["id"], parent))
    return actions
