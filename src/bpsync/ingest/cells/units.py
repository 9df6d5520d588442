"""Units as real files spell them, and conversion into a meter's unit.

bpsync keeps its own table (it must not import bpservice); tests/ingest/test_units_agree.py checks
that every unit and factor the service knows is the same here. Factors and their sources:
- Energy: 1 therm = 100 kBtu = 29.3071 kWh; 1 kBtu = 0.293071 kWh; 1 MMBtu = 293.071 kWh;
  1 GJ = 277.7778 kWh (the service's rounding). Dth (dekatherm) = MMBtu; "MBtu" is read as
  million Btu, as Portfolio Manager labels it ("MBtu (million Btu)").
- Volume: 1 US gallon = 3.785411784 L, 1 ft³ = 0.028316846592 m³, 1 imperial gallon = 4.54609 L
  (exact definitions); ccf/hcf = 100 ft³, kcf and Mcf = 1,000 ft³ (the gas industry's Roman M),
  "MCF (million cubic feet)" as Portfolio Manager spells it = 10⁶ ft³; kGal = 1,000 US gallons,
  cGal = 100 and MGal = 10⁶ (US, or imperial where PM's label says "(UK)"); kcm = 1,000 m³;
  1 yd³ = 0.764554857984 m³.
- Mass: 1 lb = 0.45359237 kg; 1 short ton = 2,000 lb; "klbs" and "Mlbs" = 1,000 lb, as the service
  reads them; a label saying "million pounds" = 10⁶ lb.
- Carrier heat contents (only to convert a physical quantity into an energy meter, or back), the same
  figures as the service: natural gas 1.026 kBtu/ft³ and 36.303 kBtu/m³, steam 1,194 kBtu per
  1,000 lb, fuel oil and diesel 138 kBtu/US gal, propane 91.452 kBtu/US gal and 49.3 MJ/kg,
  chilled water 12 kBtu per ton-hour.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

KWH_PER_KBTU = 0.293071
LITRES_PER_US_GALLON = 3.785411784
M3_PER_CF = 0.028316846592
KG_PER_LB = 0.45359237

ENERGY_UNITS = ("kWh", "MWh", "Wh", "GJ", "MJ", "kBtu", "MMBtu", "therms")

# What the service accepts for each meter type (its canonical spellings).
UNITS_BY_METER_TYPE: dict[str, tuple[str, ...]] = {
    "electricity": ENERGY_UNITS,
    "solar": ENERGY_UNITS,
    "chp": ENERGY_UNITS,
    "natural_gas": (*ENERGY_UNITS, "ccf", "m3", "cf"),
    "district_heating": ENERGY_UNITS,
    "district_cooling": (*ENERGY_UNITS, "ton_hours"),
    "steam": (*ENERGY_UNITS, "lbs", "klbs", "Mlbs"),
    "fuel_oil": (*ENERGY_UNITS, "litres", "gallons"),
    "diesel": (*ENERGY_UNITS, "litres", "gallons"),
    "lpg": (*ENERGY_UNITS, "litres", "gallons", "kg"),
    "water": ("m3", "litres", "gallons", "kgal", "ccf", "cf"),
    "waste_landfill": ("kg", "tonnes", "lbs", "short_tons", "m3"),
    "waste_recycling": ("kg", "tonnes", "lbs", "short_tons", "m3"),
    "waste_compost": ("kg", "tonnes", "lbs", "short_tons", "m3"),
}
METER_TYPES = tuple(UNITS_BY_METER_TYPE)
ENERGY_METER_TYPES = frozenset(METER_TYPES) - {
    "water",
    "waste_landfill",
    "waste_recycling",
    "waste_compost",
}


@dataclass(frozen=True, slots=True)
class Unit:
    """A unit: its canonical name, what it measures, and its size in the dimension's base unit
    (kWh for energy, m³ for volume, kg for mass; ton-hours only convert through a carrier)."""

    name: str
    dimension: str
    factor: float


_UNITS: dict[str, Unit] = {
    u.name: u
    for u in (
        Unit("kWh", "energy", 1.0),
        Unit("MWh", "energy", 1000.0),
        Unit("Wh", "energy", 0.001),
        Unit("GJ", "energy", 277.7778),
        Unit("MJ", "energy", 0.2777778),
        Unit("kBtu", "energy", KWH_PER_KBTU),
        Unit("MMBtu", "energy", 293.071),
        Unit("therms", "energy", 29.3071),
        Unit("m3", "volume", 1.0),
        Unit("litres", "volume", 0.001),
        Unit("gallons", "volume", LITRES_PER_US_GALLON / 1000),
        Unit("gallons_uk", "volume", 4.54609 / 1000),
        Unit("kgal", "volume", LITRES_PER_US_GALLON),
        Unit("cgal", "volume", LITRES_PER_US_GALLON / 10),
        Unit("Mgal", "volume", 1000 * LITRES_PER_US_GALLON),
        Unit("kgal_uk", "volume", 4.54609),
        Unit("cgal_uk", "volume", 4.54609 / 10),
        Unit("Mgal_uk", "volume", 4546.09),
        Unit("kcm", "volume", 1000.0),
        Unit("cubic_yards", "volume", 0.764554857984),
        Unit("cf", "volume", M3_PER_CF),
        Unit("ccf", "volume", 100 * M3_PER_CF),
        Unit("kcf", "volume", 1000 * M3_PER_CF),
        Unit("MMcf", "volume", 1_000_000 * M3_PER_CF),
        Unit("kg", "mass", 1.0),
        Unit("tonnes", "mass", 1000.0),
        Unit("lbs", "mass", KG_PER_LB),
        Unit("klbs", "mass", 1000 * KG_PER_LB),
        Unit("Mlbs", "mass", 1000 * KG_PER_LB),
        Unit("million_lbs", "mass", 1_000_000 * KG_PER_LB),
        Unit("short_tons", "mass", 2000 * KG_PER_LB),
        Unit("ton_hours", "cooling", 1.0),
    )
}

# Spellings seen in utility exports, bill-pay CSVs and Portfolio Manager sheets, normalised by
# `_norm` (casefolded, ³ → 3, spaces collapsed, trailing dots dropped).
_ALIASES: dict[str, str] = {
    # energy
    "kwh": "kWh",
    "kw h": "kWh",
    "kw-h": "kWh",
    "kwhr": "kWh",
    "kwhrs": "kWh",
    "kilowatt hours": "kWh",
    "kilowatt-hours": "kWh",
    "kilowatt hour": "kWh",
    "kwh (thousand watt-hours)": "kWh",
    "mwh": "MWh",
    "megawatt hours": "MWh",
    "mwh (million watt-hours)": "MWh",
    "wh": "Wh",
    "watt hours": "Wh",
    "gj": "GJ",
    "gigajoules": "GJ",
    "mj": "MJ",
    "megajoules": "MJ",
    "kbtu": "kBtu",
    "kbtu (thousand btu)": "kBtu",
    "mmbtu": "MMBtu",
    "mbtu": "MMBtu",
    "mbtu (million btu)": "MMBtu",
    "mmbtu (million btu)": "MMBtu",
    "mbtu/ mmbtu/ dth (million btu/ dekatherm)": "MMBtu",  # PM's unit list, as it spells it
    "dth": "MMBtu",
    "dekatherm": "MMBtu",
    "dekatherms": "MMBtu",
    "decatherm": "MMBtu",
    "decatherms": "MMBtu",
    "therm": "therms",
    "therms": "therms",
    "thm": "therms",
    "thms": "therms",
    # volume
    "m3": "m3",
    "m^3": "m3",
    "cu m": "m3",
    "cum": "m3",
    "cubic metres": "m3",
    "cubic meters": "m3",
    "cubic_metres": "m3",
    "cubic_meters": "m3",
    "cm": "m3",
    "cm (cubic meters)": "m3",
    "kl": "m3",
    "kilolitres": "m3",
    "kiloliters": "m3",
    "l": "litres",
    "ltr": "litres",
    "ltrs": "litres",
    "litre": "litres",
    "litres": "litres",
    "liter": "litres",
    "liters": "litres",
    "gal": "gallons",
    "gals": "gallons",
    "gallon": "gallons",
    "gallons": "gallons",
    "us gal": "gallons",
    "gal (us)": "gallons",
    "gallons (us)": "gallons",
    "us gallons": "gallons",
    "gal (uk)": "gallons_uk",
    "gallons (uk)": "gallons_uk",
    "uk gallons": "gallons_uk",
    "imperial gallons": "gallons_uk",
    "imp gal": "gallons_uk",
    "kgal": "kgal",
    "kgals": "kgal",
    "thousand gallons": "kgal",
    "kgal (thousand gallons) (us)": "kgal",
    "kgal (thousand gallons)": "kgal",
    # Portfolio Manager's water units, as its upload templates list them: a "(UK)" label is the
    # imperial gallon, and must not fall back to the US unit before its bracket
    "kgal (thousand gallons) (uk)": "kgal_uk",
    "cgal": "cgal",
    "hundred gallons": "cgal",
    "cgal (hundred gallons)": "cgal",
    "cgal (hundred gallons) (us)": "cgal",
    "cgal (hundred gallons) (uk)": "cgal_uk",
    "mgal": "Mgal",
    "million gallons": "Mgal",
    "mgal (million gallons)": "Mgal",
    "mgal (million gallons) (us)": "Mgal",
    "mgal (million gallons) (uk)": "Mgal_uk",
    "kcm": "kcm",
    "kcm (thousand cubic meters)": "kcm",
    "thousand cubic meters": "kcm",
    "lilters": "litres",  # sic: PM's Add Bills template lists propane in "Lilters"
    "cubic yards": "cubic_yards",
    "cu yd": "cubic_yards",
    "yd3": "cubic_yards",
    "cf": "cf",
    "ft3": "cf",
    "cu ft": "cf",
    "cubic feet": "cf",
    "cf (cubic feet)": "cf",
    "ccf": "ccf",
    "hcf": "ccf",
    "ccf (hundred cubic feet)": "ccf",
    "hundred cubic feet": "ccf",
    "kcf": "kcf",
    "kcf (thousand cubic feet)": "kcf",
    "mcf": "kcf",
    "thousand cubic feet": "kcf",
    "mcf (million cubic feet)": "MMcf",
    "mmcf": "MMcf",
    # mass
    "kg": "kg",
    "kgs": "kg",
    "kilograms": "kg",
    "t": "tonnes",
    "tonne": "tonnes",
    "tonnes": "tonnes",
    "metric tons": "tonnes",
    "metric tonnes": "tonnes",
    "tonnes (metric)": "tonnes",
    "lb": "lbs",
    "lbs": "lbs",
    "pounds": "lbs",
    "klb": "klbs",
    "klbs": "klbs",
    "klbs (thousand pounds)": "klbs",
    "thousand pounds": "klbs",
    "mlb": "Mlbs",
    "mlbs": "Mlbs",
    "mlbs (million pounds)": "million_lbs",
    "million pounds": "million_lbs",
    "tons": "short_tons",
    "short tons": "short_tons",
    "short_tons": "short_tons",
    "tons (short)": "short_tons",
    "us tons": "short_tons",
    # chilled water
    "ton_hours": "ton_hours",
    "ton-hours": "ton_hours",
    "ton hours": "ton_hours",
    "ton-hrs": "ton_hours",
    "ton hrs": "ton_hours",
}

# kWh in one unit of a physical quantity, by carrier (the service's figures).
_CARRIER_KWH: dict[str, dict[str, float]] = {
    "natural_gas": {
        "cf": 1.026 * KWH_PER_KBTU,
        "ccf": 102.6 * KWH_PER_KBTU,
        "m3": 36.303 * KWH_PER_KBTU,
    },
    "steam": {
        "lbs": 1.194 * KWH_PER_KBTU,
        "klbs": 1194 * KWH_PER_KBTU,
        "Mlbs": 1194 * KWH_PER_KBTU,
    },
    "fuel_oil": {
        "gallons": 138 * KWH_PER_KBTU,
        "litres": 138 * KWH_PER_KBTU / LITRES_PER_US_GALLON,
    },
    "diesel": {
        "gallons": 138 * KWH_PER_KBTU,
        "litres": 138 * KWH_PER_KBTU / LITRES_PER_US_GALLON,
    },
    "lpg": {
        "gallons": 91.452 * KWH_PER_KBTU,
        "litres": 91.452 * KWH_PER_KBTU / LITRES_PER_US_GALLON,
        "kg": 49.3 / 3.6,
    },
    "district_cooling": {"ton_hours": 12 * KWH_PER_KBTU},
}

_SPACES = re.compile(r"\s+")


def _norm(text: str) -> str:
    text = text.replace("³", "3").replace("\u00a0", " ").replace(".", " ").replace(",", " ")
    return _SPACES.sub(" ", text).strip().casefold()


@functools.lru_cache(maxsize=4096)
def _lookup(text: str) -> Unit | None:
    key = _norm(text)
    name = _ALIASES.get(key)
    if name is None and "(" in key:
        name = _ALIASES.get(key.split("(", 1)[0].strip())
    if name is None and key.endswith("s"):
        name = _ALIASES.get(key[:-1])
    return _UNITS.get(name) if name else None


def lookup_unit(text: str | None) -> Unit | None:
    """The unit a cell or header bracket names, or None when it names no known unit."""
    return _lookup(str(text)) if text else None


def canonical_unit(meter_type: str, text: str) -> str | None:
    """The service's spelling of `text` if a meter of `meter_type` may be created in it."""
    unit = lookup_unit(text)
    if unit is None or unit.name not in UNITS_BY_METER_TYPE.get(meter_type, ()):
        return None
    return unit.name


def kwh_per_unit(meter_type: str, unit_name: str) -> float | None:
    """kWh in one `unit_name` of what a `meter_type` meter measures; None if that is not energy.
    Physical units the service does not list (kcf, imperial gallons, MMcf) go through a listed
    unit of the same dimension."""
    if meter_type not in ENERGY_METER_TYPES:
        return None
    unit = _UNITS.get(unit_name)
    if unit is None:
        return None
    if unit.dimension == "energy":
        return unit.factor
    carrier = _CARRIER_KWH.get(meter_type, {})
    if unit_name in carrier:
        return carrier[unit_name]
    for listed, kwh in carrier.items():
        other = _UNITS[listed]
        if other.dimension == unit.dimension:
            return unit.factor / other.factor * kwh
    return None


class UnitError(ValueError):
    """Why a quantity cannot be converted into the meter's unit (shown to the user)."""


def convert(quantity: float, from_unit: str, meter_type: str, meter_unit: str) -> float:
    """`quantity` in `from_unit` expressed in the meter's unit.

    Same unit: unchanged. Same physical dimension (kWh→MWh, m³→kgal, lbs→klbs): exact ratio.
    Otherwise through energy when both sides are energy for this meter type (therms → kWh, ccf of
    gas → kWh). Anything else (m³ of water into a kWh meter) raises UnitError."""
    factor = conversion_factor(from_unit, meter_type, meter_unit)
    return quantity if factor is None else quantity * factor


@functools.lru_cache(maxsize=1024)
def conversion_factor(from_unit: str, meter_type: str, meter_unit: str) -> float | None:
    """The factor from `from_unit` into the meter's unit (None: same unit); raises UnitError."""
    source = lookup_unit(from_unit)
    target = lookup_unit(meter_unit)
    if source is None:
        raise UnitError(f"unknown unit {from_unit!r}")
    if target is None:
        raise UnitError(f"the meter's unit {meter_unit!r} is unknown to bpsync")
    if source.name == target.name:
        return None  # unchanged (not even multiplied by 1.0)
    if source.dimension == target.dimension and source.dimension != "cooling":
        return source.factor / target.factor
    kwh_from = kwh_per_unit(meter_type, source.name)
    kwh_to = kwh_per_unit(meter_type, target.name)
    if kwh_from is not None and kwh_to is not None:
        return kwh_from / kwh_to
    raise UnitError(
        f"{source.name} ({source.dimension}) cannot be converted into this {meter_type} meter's "
        f"unit {target.name} ({target.dimension})"
    )


def to_m3(quantity: float, unit_name: str) -> float | None:
    """A volume in m³, or None when `unit_name` is not a volume."""
    unit = _UNITS.get(unit_name)
    return None if unit is None or unit.dimension != "volume" else quantity * unit.factor


def known_units() -> tuple[str, ...]:
    return tuple(_UNITS)


# Portfolio Manager's meter type names (and this service's own) → the service's meter type. Keys
# are casefolded prefixes; the longest matching prefix wins ("electric - solar" over "electric").
# None: a kind PM has and the service does not (wind, wood, coal, kerosene…); such a row is refused,
# never put in the nearest type. PM's names across its exports and templates, old and new: "Electric
# - Grid", "Electricity - Grid Purchase"; water as "Potable Indoor" (2015 downloads and the Create
# Meters template) or "Municipally Supplied Potable Water - Indoor" (the Add Bills template).
_METER_TYPE_PREFIXES: dict[str, str | None] = {
    **{t.replace("_", " "): t for t in METER_TYPES},
    **{t: t for t in METER_TYPES},
    "electric": "electricity",
    "electric - grid": "electricity",
    "electric - solar": "solar",
    "electric on site solar": "solar",
    "electricity - grid": "electricity",
    "electricity - on-site solar": "solar",
    "electric - wind": None,
    "electricity - on-site wind": None,
    "gas": "natural_gas",
    "natural gas": "natural_gas",
    "propane": "lpg",
    "liquid propane": "lpg",
    "fuel oil": "fuel_oil",
    "diesel": "diesel",
    "district steam": "steam",
    "district hot water": "district_heating",
    "district chilled water": "district_cooling",
    "municipally supplied": "water",
    "potable water": "water",
    "potable": "water",
    "reclaimed": "water",
    "well water": "water",
    "reclaimed water": "water",
    "alternative water generated on-site": "water",
    "other indoor": "water",
    "other outdoor": "water",
    "other: mixed indoor/outdoor": "water",
    "other - indoor": "water",
    "other -indoor": "water",
    "other - outdoor": "water",
    "other - all": "water",
    "water": "water",
}


def lookup_meter_type(text: str) -> str | None:
    """The service meter type a file's "Meter Type" cell names, or None when it names none this
    tool knows or one the service lacks ("Electric - Grid" → electricity, "Potable Indoor" and
    "Municipally Supplied Potable Water - Mixed Indoor/Outdoor" → water, "Natural Gas" →
    natural_gas, "Electric - Wind" → None)."""
    folded = " ".join(str(text).split()).casefold()
    best: tuple[str, str | None] | None = None
    for prefix, mtype in _METER_TYPE_PREFIXES.items():
        if (folded == prefix or folded.startswith((prefix + " ", prefix + "-", prefix + ":"))) and (
            best is None or len(prefix) > len(best[0])
        ):
            best = (prefix, mtype)
    return best[1] if best else None
