"""Converting meter quantities to site energy in kWh.

Sources (shared/reference/benchmark-figures.md unless noted):
- 1 therm = 100 kBtu = 29.3071 kWh; 1 kBtu = 0.293071 kWh; 1 MMBtu = 293.071 kWh.
- Steam: 1 Mlb (thousand pounds) = 1,194 kBtu (NYC LL97 calculators); "klbs" and "Mlbs" are both
  thousands of pounds, as in ENERGY STAR Portfolio Manager.
- #2 fuel oil and diesel: 138 kBtu per US gallon (NYC LL97 calculators).
- Natural gas by volume: 1.026 kBtu per cubic foot, 36.303 kBtu per m³ (ENERGY STAR Portfolio
  Manager technical reference, "Thermal Energy Conversions") [S].
- Propane/LPG: 91.452 kBtu per US gallon (US EIA, "Propane explained") [S]; 49.3 MJ per kg gross
  calorific value (UK DESNZ conversion factors, LPG) [S].
- District chilled water: 1 ton-hour = 12 kBtu (definition of the refrigeration ton).
- 1 US gallon = 3.785411784 litres (definition).
Water and waste are quantities, not energy: `to_kwh` returns None for them.
"""

from __future__ import annotations

from bpservice.domain.vocab import ENERGY_METER_TYPES

KWH_PER_KBTU = 0.293071
LITRES_PER_US_GALLON = 3.785411784

# Units that mean the same energy whatever the carrier.
_ENERGY_KWH = {
    "kWh": 1.0,
    "MWh": 1000.0,
    "Wh": 0.001,
    "GJ": 277.7778,
    "MJ": 0.2777778,
    "kBtu": KWH_PER_KBTU,
    "MMBtu": 293.071,
    "therms": 29.3071,
}

# Carrier-specific physical units, in kWh per unit.
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


def kwh_per_unit(meter_type: str, unit: str) -> float | None:
    """kWh in one `unit` of what a `meter_type` meter measures, or None if it is not energy."""
    if meter_type not in ENERGY_METER_TYPES:
        return None
    if unit in _ENERGY_KWH:
        return _ENERGY_KWH[unit]
    return _CARRIER_KWH.get(meter_type, {}).get(unit)


def to_kwh(quantity: float, unit: str, meter_type: str) -> float | None:
    """Site energy in kWh, or None when the meter does not measure energy."""
    factor = kwh_per_unit(meter_type, unit)
    return None if factor is None else quantity * factor


def kwh_to_kbtu(kwh: float) -> float:
    return kwh / KWH_PER_KBTU


# Water volumes in m³ (benchmarks): 1 US gallon = 3.785411784 litres and 1 ft³ = 0.028316846592 m³
# (exact definitions); ccf = 100 ft³ and kgal = 1,000 US gallons, as US water utilities bill.
_WATER_M3 = {
    "m3": 1.0,
    "litres": 0.001,
    "gallons": LITRES_PER_US_GALLON / 1000,
    "kgal": LITRES_PER_US_GALLON,
    "ccf": 2.8316846592,
    "cf": 0.028316846592,
}


def to_m3(quantity: float, unit: str) -> float | None:
    """A water meter's quantity in m³, or None for a unit that is not a volume."""
    factor = _WATER_M3.get(unit)
    return None if factor is None else quantity * factor
