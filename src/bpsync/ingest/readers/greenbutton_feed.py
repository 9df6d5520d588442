"""Green Button pass 1: everything in a feed but the intervals (usage points, their clocks and
bills, meter readings and the ReadingType each links), tied together by the entries' links
(greenbutton_links), and which MeterReadings are not the meter's consumption."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from bpsync.ingest.problems import IngestError, Where
from bpsync.ingest.readers.greenbutton_links import (
    Linked,
    Node,
    child,
    entries,
    integer,
    local_name,
    named,
    parent_of,
    text,
)
from bpsync.ingest.readers.greenbutton_time import LocalTime

# ESPI uom codes (IEC 61968-9) → (unit, factor from the base unit into it).
UOM = {
    72: ("kWh", 1e-3),  # Wh
    169: ("therms", 1.0),
    42: ("m3", 1.0),
    119: ("cf", 1.0),
    128: ("gallons", 1.0),
    130: ("gallons_uk", 1.0),
    134: ("litres", 1.0),
    31: ("MJ", 1e-6),  # J
    132: ("kBtu", 1e-3),  # BTU
}
# Quantities a meter records that are not consumption (IEC 61968-9 uom codes).
NOT_CONSUMPTION_UOM = {
    38: "demand in W",
    61: "apparent power in VA",
    63: "reactive power in VAr",
    71: "apparent energy in VAh",
    73: "reactive energy in VArh",
}
# ESPI FlowDirectionKind: 0 not applicable and 1 forward (delivered) are what the site consumed.
CONSUMPTION_FLOW = {None, 0, 1}
FLOW = {
    4: "net: delivered minus received",
    19: "received: energy the site sent to the grid",
    20: "total: delivered plus received",
}
SERVICE = {0: "electricity", 1: "natural_gas", 2: "water", 4: "district_heating"}
CURRENCY = {840: "USD", 124: "CAD", 978: "EUR", 826: "GBP", 36: "AUD", 554: "NZD", 756: "CHF"}
COST_SCALE = 100_000  # ESPI costs are in hundred-thousandths of the currency unit


@dataclass
class Point:
    key: int  # feed order: two usage points may share an id in different paths
    label: str  # its id in the feed (`UsagePoint/<id>`)
    title: str | None = None
    service: str | None = None
    readings: int = 0  # MeterReadings that belong to it
    clock: LocalTime | None = None  # its LocalTimeParameters
    summaries: list[Summary] = field(default_factory=list)
    empty_summaries: int = 0


@dataclass
class ReadingType:
    name: str  # `ReadingType/<id>` for messages
    unit: str | None
    scale: float
    power: int
    currency: str | None
    uom: int | None
    flow: int | None


@dataclass
class MeterReading:
    label: str
    point: Point | None
    reading_type: ReadingType | None


@dataclass
class Summary:
    start: int
    duration: int
    consumption: float | None
    unit: str | None
    cost: float | None
    currency: str | None


def label_of(reading: MeterReading) -> str:
    point = reading.point
    where = f"usage point {point.label}" if point else "a MeterReading of no usage point"
    return where + (f", meter reading {reading.label}" if point and point.readings > 1 else "")


def _reading_type(name: str, body: ET.Element) -> ReadingType:
    uom = integer(body, "uom")
    power = integer(body, "powerOfTenMultiplier", 0) or 0
    unit, factor = UOM.get(uom if uom is not None else -1, (None, 1.0))
    currency = CURRENCY.get(integer(body, "currency", -1) or -1)
    flow = integer(body, "flowDirection")
    return ReadingType(name, unit, factor * 10.0**power, power, currency, uom, flow)


def _summary(body: ET.Element) -> Summary | None:
    period = child(body, "billingPeriod")
    start, duration = integer(period, "start"), integer(period, "duration")
    if start is None or not duration:
        return None
    consumption = unit = None
    overall = child(body, "overallConsumptionLastPeriod")
    value = integer(overall, "value")
    if overall is not None and value is not None:
        u, factor = UOM.get(integer(overall, "uom", -1) or -1, (None, 1.0))
        power = integer(overall, "powerOfTenMultiplier", 0) or 0
        if u is not None:
            consumption, unit = value * factor * 10.0**power, u
    bill = integer(body, "billLastPeriod")
    cost = bill / COST_SCALE if bill is not None else None
    currency = CURRENCY.get(integer(body, "currency", -1) or -1)
    return Summary(start, duration, consumption, unit, cost, currency)


def _ltp(body: ET.Element) -> LocalTime:
    def rule(name: str) -> int:
        try:
            return int(text(body, name) or "FFFFFFFF", 16)
        except ValueError:
            return 0xFFFFFFFF

    tz_offset = integer(body, "tzOffset", 0) or 0
    dst_offset = integer(body, "dstOffset", 0) or 0
    if abs(tz_offset) > 14 * 3600 or not 0 <= dst_offset <= 2 * 3600:
        raise ValueError(
            f"tzOffset {tz_offset} / dstOffset {dst_offset} are not offsets in seconds (UTC-14 h "
            "to UTC+14 h, and 0 to 2 h of daylight saving)"
        )
    return LocalTime(tz_offset, dst_offset, rule("dstStartRule"), rule("dstEndRule"))


@dataclass
class Feed:
    """Pass 1: everything but the intervals, tied together by the entries' links."""

    points: list[Linked[Point]]
    readings: list[Linked[MeterReading]]
    ltps: list[Linked[LocalTime]]


def read_feed(path: Path, name: str) -> Feed:
    points: list[Linked[Point]] = []
    readings: list[Node] = []
    types: list[Linked[ReadingType]] = []
    ltps: list[Linked[LocalTime]] = []
    summaries: list[tuple[Node, Summary | None]] = []
    found = False
    for order, (entry, bodies, links) in enumerate(entries(path, name)):
        found = True
        title = (entry.findtext("{http://www.w3.org/2005/Atom}title") or "").strip() or None
        kinds = {local_name(b.tag): b for b in bodies}
        if not bodies and (links.ident("UsageSummary") or links.ident("ElectricPowerUsageSummary")):
            summaries.append((Node("UsageSummary", links, title, order), None))  # empty content
        for kind, body in kinds.items():
            node = Node(kind, links, title, order)
            if kind == "UsagePoint":
                service = SERVICE.get(integer(child(body, "ServiceCategory"), "kind", -1) or -1)
                label = links.ident("UsagePoint") or str(len(points) + 1)
                points.append(Linked(node, Point(order, label, title, service)))
            elif kind == "LocalTimeParameters":
                try:
                    ltps.append(Linked(node, _ltp(body)))
                except ValueError as exc:  # a wrong clock would put every reading on wrong days
                    raise IngestError(f"LocalTimeParameters: {exc}", where=Where(name)) from None
            elif kind == "ReadingType":
                rt_id = links.ident("ReadingType")
                rt_name = f"ReadingType/{rt_id}" if rt_id else "ReadingType"
                types.append(Linked(node, _reading_type(rt_name, body)))
            elif kind == "MeterReading":
                readings.append(node)
            elif kind in ("UsageSummary", "ElectricPowerUsageSummary"):
                summaries.append((node, _summary(body)))
    if not found:
        raise IngestError("no Atom entries: this is not a Green Button file", where=Where(name))
    for p in points:
        linked = named(p.node.links.related, ltps, "LocalTimeParameters")
        linked = linked or (ltps[0] if len(ltps) == 1 else None)
        p.value.clock = linked.value if linked else None
    for node, summary in summaries:
        owner = parent_of(node.links, points, "UsagePoint")
        if owner is None:
            continue
        if summary is None:
            owner.value.empty_summaries += 1
        else:
            owner.value.summaries.append(summary)
    out: list[Linked[MeterReading]] = []
    for node in sorted(readings, key=lambda n: n.order):
        owner = parent_of(node.links, points, "UsagePoint")
        rt = named(node.links.related, types, "ReadingType")
        label = node.links.ident("MeterReading") or str(len(out) + 1)
        if owner is not None:
            owner.value.readings += 1
        out.append(
            Linked(
                node,
                MeterReading(label, owner.value if owner else None, rt.value if rt else None),
            )
        )
    return Feed(points, out, ltps)


def left_out(reading: MeterReading) -> str | None:
    """Why a MeterReading is not the meter's consumption, or None when it is."""
    rt = reading.reading_type
    if reading.point is None:
        return "it belongs to no UsagePoint of the feed"
    if rt is None:
        return "it links no ReadingType, so its unit is unknown"
    if rt.uom in NOT_CONSUMPTION_UOM:
        return f"{NOT_CONSUMPTION_UOM[rt.uom]} (uom {rt.uom}, {rt.name}), not consumption"
    if rt.unit is None:
        return (
            "its ReadingType "
            + ("has no uom (unit of measure)" if rt.uom is None else f"has unit code {rt.uom}")
            + f", which bpsync cannot convert ({rt.name})"
        )
    if rt.flow not in CONSUMPTION_FLOW:
        what = FLOW.get(rt.flow, "not delivered energy")  # type: ignore[arg-type]
        return f"flowDirection {rt.flow} ({what}), not consumption"
    return None
