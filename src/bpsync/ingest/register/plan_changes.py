"""The register's idempotent plan against what the service holds: properties match by
`internal_ref`, buildings by name within their property, meters by name within their building;
each becomes a create, an update of only the changed fields, unchanged, or a conflict (meters
have no update endpoint, so a changed type or unit is a conflict)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from bpsync.ingest.register.read import Register, RegisterItem


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
    if register.meters_only:
        return _plan_meters_only(register, properties, buildings, meters)
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
        diff = _changed(_stated(item), current)
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
        diff = _changed(_stated(item), current)
        actions.append(
            Action(
                "building", "update" if diff else "unchanged", item.key, diff, current["id"], (ref,)
            )
        )
    for item in register.meters:
        ref, building, _ = item.key
        bid = bld_ids.get((ref, building.casefold()))
        actions.append(_meter_action(item, item.key, bid, meters))
    return actions


def _stated(item: RegisterItem) -> dict[str, Any]:
    """The fields the file states: a placeholder a rule filled in is never sent as an update."""
    return {k: v for k, v in item.payload.items() if k not in item.defaulted}


def _meter_action(
    item: RegisterItem,
    key: tuple[str, str, str],
    bid: str | None,
    meters: Mapping[str, Sequence[Mapping[str, Any]]],
) -> Action:
    ref, building, name = key
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
        return Action("meter", "create", key, item.payload, parent=parent)
    if current.get("type") != item.payload["type"] or current.get("unit") != item.payload["unit"]:
        return Action(
            "meter",
            "conflict",
            key,
            item.payload,
            current["id"],
            parent,
            reason=f"the service's meter is {current.get('type')} in {current.get('unit')}; "
            "meters cannot be changed, create a new one with another name",
        )
    return Action("meter", "unchanged", key, {}, current["id"], parent)


def _plan_meters_only(
    register: Register,
    properties: Sequence[Mapping[str, Any]],
    buildings: Mapping[str, Sequence[Mapping[str, Any]]],
    meters: Mapping[str, Sequence[Mapping[str, Any]]],
) -> list[Action]:
    """PM's Create Meters template: each meter into the one building the service holds for the
    property whose internal_ref is the meter's Portfolio Manager property id; a property the
    service lacks, or one with several buildings, makes its meters conflicts that say so."""
    by_ref = {p.get("internal_ref"): p for p in properties if p.get("internal_ref")}
    actions: list[Action] = []
    homes: dict[str, Mapping[str, Any] | str] = {}
    for item in register.meters:
        ref, _, name = item.key
        if ref not in homes:
            homes[ref] = _home(ref, by_ref.get(ref), buildings)
            home = homes[ref]
            if not isinstance(home, str):
                pid = by_ref[ref]["id"]
                actions.append(Action("property", "unchanged", (ref,), {}, pid))
                key = (ref, str(home["name"]))
                actions.append(Action("building", "unchanged", key, {}, home["id"], (ref,)))
        home = homes[ref]
        if isinstance(home, str):
            actions.append(
                Action("meter", "conflict", item.key, item.payload, None, (ref, ""), reason=home)
            )
            continue
        key = (ref, str(home["name"]), name)
        actions.append(_meter_action(item, key, str(home["id"]), meters))
    return actions


def _home(
    ref: str,
    prop: Mapping[str, Any] | None,
    buildings: Mapping[str, Sequence[Mapping[str, Any]]],
) -> Mapping[str, Any] | str:
    """The building a Create Meters row's meter goes into, or why there is none."""
    if prop is None:
        return (
            f"the service has no property with internal ref {ref!r} (its Portfolio Manager ID): "
            "register the property first"
        )
    held = list(buildings.get(prop["id"], ()))
    if len(held) != 1:
        return (
            f"property {ref!r} has {len(held)} buildings in the service and the Create Meters "
            "template names none: list the meter in a register's Meters sheet with its building"
        )
    return held[0]
