"""The portfolio register's network half: compare the register with what the service holds, then
create or update properties, buildings and meters, and link the meters' external references in
the profile's meter map.

Idempotent: properties match by `internal_ref`, buildings by name within their property, meters by
name within their building (`register.plan_register`), so re-running a register updates what
changed and creates nothing twice. A create whose outcome is unknown (`AmbiguousWriteError`) is
looked up by the same key before anything is sent again."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from bpsync.client import errors as E
from bpsync.client.service import AsyncServiceClient
from bpsync.ingest.lookup.fetch import PER_PAGE, gather_limited
from bpsync.ingest.lookup.meter_map import load_meter_map, save_meter_map
from bpsync.ingest.register.plan_changes import Action, plan_register
from bpsync.ingest.register.read import Register


@dataclass
class RegisterOutcome:
    created: dict[str, int] = field(
        default_factory=lambda: {"property": 0, "building": 0, "meter": 0}
    )
    updated: dict[str, int] = field(
        default_factory=lambda: {"property": 0, "building": 0, "meter": 0}
    )
    unchanged: dict[str, int] = field(
        default_factory=lambda: {"property": 0, "building": 0, "meter": 0}
    )
    conflicts: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    linked: int = 0
    meter_map: str | None = None
    dry_run: bool = False
    actions: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failed and not self.conflicts

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class _Held:
    """What the service holds, as the API's JSON."""

    properties: list[dict[str, Any]]
    buildings: dict[str, list[dict[str, Any]]]
    meters: dict[str, list[dict[str, Any]]]


async def _holdings(client: AsyncServiceClient, register: Register) -> _Held:
    props = [
        p.model_dump(mode="json") for p in await client.properties.list(per_page=PER_PAGE).to_list()
    ]
    refs = {item.key[0] for item in (*register.properties, *register.meters)}
    wanted = [p for p in props if p.get("internal_ref") in refs]
    lists = await gather_limited(
        client.buildings.list(p["id"], per_page=PER_PAGE).to_list() for p in wanted
    )
    buildings: dict[str, list[dict[str, Any]]] = {}
    for p, bs in zip(wanted, lists, strict=True):
        # Use types are returned by the building's get only; the register compares them.
        full = await gather_limited(client.buildings.get(p["id"], b.id) for b in bs)
        buildings[p["id"]] = [b.model_dump(mode="json") for b in full]
    all_b = [b for bs in buildings.values() for b in bs]
    mlists = await gather_limited(
        client.meters.list(b["id"], per_page=PER_PAGE).to_list() for b in all_b
    )
    meters = {
        b["id"]: [m.model_dump(mode="json") for m in ms]
        for b, ms in zip(all_b, mlists, strict=True)
    }
    return _Held(props, buildings, meters)


async def _create(send: Callable[[], Awaitable[Any]], find: Callable[[], Awaitable[Any]]) -> Any:
    """Create once: on an unknown outcome look for it by its key, and send again only if absent."""
    for _ in range(3):
        try:
            return await send()
        except E.AmbiguousWriteError:
            found = await find()
            if found is not None:
                return found
    raise E.APIConnectionError("the service kept failing without saying whether it created it")


async def import_register(
    client: AsyncServiceClient,
    register: Register,
    profile: str,
    *,
    dry_run: bool = False,
) -> RegisterOutcome:
    """Make the service match the register; link external meter references for `profile`."""
    held = await _holdings(client, register)
    actions = plan_register(register, held.properties, held.buildings, held.meters)
    out = RegisterOutcome(dry_run=dry_run)
    out.actions = [
        {"kind": a.kind, "op": a.op, "key": list(a.key), "id": a.id, "changes": a.payload}
        if a.op != "create"
        else {"kind": a.kind, "op": a.op, "key": list(a.key)}
        for a in actions
    ]
    for a in actions:
        if a.op == "conflict":
            out.conflicts.append(f"meter {' / '.join(a.key)}: {a.reason}")
        elif a.op == "unchanged":
            out.unchanged[a.kind] += 1
    if dry_run:
        for a in actions:
            if a.op in ("create", "update"):
                (out.created if a.op == "create" else out.updated)[a.kind] += 1
        return out

    prop_ids: dict[str, str] = {}
    bld_ids: dict[tuple[str, str], str] = {}
    meter_ids: dict[tuple[str, str, str], str] = {}
    for a in actions:
        if a.kind == "property" and a.id:
            prop_ids[a.key[0]] = a.id
        elif a.kind == "building" and a.id:
            bld_ids[(a.key[0], a.key[1].casefold())] = a.id
        elif a.kind == "meter" and a.id:
            meter_ids[_mkey(a.key)] = a.id

    for a in (x for x in actions if x.kind == "property"):
        await _apply_property(client, a, prop_ids, out)
    for a in (x for x in actions if x.kind == "building"):
        await _apply_building(client, a, prop_ids, bld_ids, out)
    for a in (x for x in actions if x.kind == "meter"):
        await _apply_meter(client, a, bld_ids, meter_ids, out)

    links = load_meter_map(profile)
    before = dict(links)
    for ref, key in register.meter_links.items():
        mid = meter_ids.get(_mkey(key))
        if mid:
            links[ref] = mid
    out.linked = sum(1 for k, v in links.items() if before.get(k) != v)
    if out.linked:
        out.meter_map = str(save_meter_map(profile, links))
    return out


def _mkey(key: tuple[str, ...]) -> tuple[str, str, str]:
    return (key[0], key[1].casefold(), key[2].casefold())


async def _apply_property(
    client: AsyncServiceClient, a: Action, prop_ids: dict[str, str], out: RegisterOutcome
) -> None:
    ref = a.key[0]
    try:
        if a.op == "create":

            async def find() -> Any:
                async for p in client.properties.list(per_page=PER_PAGE):
                    if p.internal_ref == ref:
                        return p
                return None

            created = await _create(lambda: client.properties.create(a.payload), find)
            prop_ids[ref] = created.id
            out.created["property"] += 1
        elif a.op == "update":
            assert a.id is not None
            await client.properties.update(a.id, a.payload)
            out.updated["property"] += 1
    except (E.ValidationError, E.ConflictError, E.BadRequestError) as exc:
        out.failed.append(f"property {ref}: {exc.message}")


async def _apply_building(
    client: AsyncServiceClient,
    a: Action,
    prop_ids: dict[str, str],
    bld_ids: dict[tuple[str, str], str],
    out: RegisterOutcome,
) -> None:
    ref, name = a.key
    pid = prop_ids.get(ref)
    if pid is None:
        out.failed.append(f"building {ref} / {name}: its property was not created")
        return
    try:
        if a.op == "create":

            async def find() -> Any:
                async for b in client.buildings.list(pid, per_page=PER_PAGE):
                    if b.name.casefold() == name.casefold():
                        return b
                return None

            created = await _create(lambda: client.buildings.create(pid, a.payload), find)
            bld_ids[(ref, name.casefold())] = created.id
            out.created["building"] += 1
        elif a.op == "update":
            assert a.id is not None
            await client.buildings.update(pid, a.id, a.payload)
            out.updated["building"] += 1
    except (E.ValidationError, E.ConflictError, E.BadRequestError) as exc:
        out.failed.append(f"building {ref} / {name}: {exc.message}")


async def _apply_meter(
    client: AsyncServiceClient,
    a: Action,
    bld_ids: dict[tuple[str, str], str],
    meter_ids: dict[tuple[str, str, str], str],
    out: RegisterOutcome,
) -> None:
    if a.op != "create":
        return
    ref, building, name = a.key
    bid = bld_ids.get((ref, building.casefold()))
    if bid is None:
        out.failed.append(f"meter {ref} / {building} / {name}: its building was not created")
        return

    async def find() -> Any:
        async for m in client.meters.list(bid, per_page=PER_PAGE):
            if (m.name or "").casefold() == name.casefold():
                return m
        return None

    try:
        created = await _create(lambda: client.meters.create(bid, a.payload), find)
    except (E.ValidationError, E.ConflictError, E.BadRequestError) as exc:
        out.failed.append(f"meter {ref} / {building} / {name}: {exc.message}")
        return
    meter_ids[_mkey(a.key)] = created.id
    out.created["meter"] += 1
