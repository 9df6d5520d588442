"""bpsync keeps its own unit table, vocabularies and anomaly rule (it must not import bpservice);
these tests hold the two implementations together."""

from __future__ import annotations

import datetime as dt

from hypothesis import given, settings
from hypothesis import strategies as st

from bpservice.domain import readings as service_rules
from bpservice.domain import units as service_units
from bpservice.domain import vocab
from bpsync.ingest.cells import units
from bpsync.ingest.checks.service_rules import PastReading, predict_flags
from bpsync.vocab import COUNTRY_CODES, SCOPES, USE_TYPES


def test_scopes_agree():
    assert SCOPES == vocab.SCOPES


def test_units_by_meter_type_agree():
    assert units.UNITS_BY_METER_TYPE == vocab.UNITS_BY_METER_TYPE
    assert units.ENERGY_METER_TYPES == vocab.ENERGY_METER_TYPES


def test_every_service_alias_means_the_same_unit_here():
    for alias, canonical in vocab.UNIT_ALIASES.items():
        unit = units.lookup_unit(alias)
        assert unit is not None and unit.name == canonical, alias


def test_energy_factors_agree():
    for meter_type, allowed in vocab.UNITS_BY_METER_TYPE.items():
        for unit in allowed:
            assert units.kwh_per_unit(meter_type, unit) == service_units.kwh_per_unit(
                meter_type, unit
            ), (
                meter_type,
                unit,
            )


def test_water_volumes_agree():
    for unit in vocab.UNITS_BY_METER_TYPE["water"]:
        assert units.to_m3(1.0, unit) == service_units.to_m3(1.0, unit)


def test_canonical_units_agree():
    spellings = [*vocab.UNIT_ALIASES, "kWh", "Therms", "M3", "furlongs", "MWH"]
    for meter_type in vocab.METER_TYPES:
        for text in spellings:
            assert units.canonical_unit(meter_type, text) == vocab.canonical_unit(meter_type, text)


def test_vocabularies_agree():
    assert COUNTRY_CODES == vocab.COUNTRY_CODES
    assert USE_TYPES == vocab.USE_TYPES


def test_conversions_between_units():
    assert units.convert(1, "therms", "natural_gas", "kWh") == 29.3071
    assert units.convert(1000, "kWh", "electricity", "MWh") == 1.0
    assert round(units.convert(1, "kgal", "water", "m3"), 9) == 3.785411784
    assert units.convert(2, "MLbs (million pounds)", "steam", "klbs") == 2000.0
    assert round(units.convert(1, "Mcf", "natural_gas", "therms"), 6) == round(
        1026 * 0.293071 / 29.3071, 6
    )


# ---- anomaly flags: predicted here == stored by the service ------------------------------------

_day = st.dates(min_value=dt.date(2020, 1, 1), max_value=dt.date(2024, 12, 31))
_amount = st.one_of(
    st.floats(min_value=-1e6, max_value=1e9, allow_nan=False, allow_infinity=False),
    st.integers(min_value=-10, max_value=1000).map(float),
)


@st.composite
def meter_history(draw):
    """Non-overlapping readings of one meter: a random walk of periods with random gaps; some
    already stored, the rest submitted in start order (how the importer sends them)."""
    day = draw(_day)
    periods = []
    for _ in range(draw(st.integers(min_value=1, max_value=24))):
        day += dt.timedelta(days=draw(st.integers(min_value=0, max_value=60)))
        length = draw(st.sampled_from([1, 7, 27, 28, 29, 30, 31, 32, 33, 45, 90, 365]))
        periods.append(PastReading(day, day + dt.timedelta(days=length - 1), draw(_amount)))
        day += dt.timedelta(days=length)
    flags = draw(st.lists(st.booleans(), min_size=len(periods), max_size=len(periods)))
    stored = [p for p, s in zip(periods, flags, strict=True) if s]
    new = [p for p, s in zip(periods, flags, strict=True) if not s]
    return stored, new


@settings(max_examples=300, deadline=None)
@given(meter_history())
def test_predicted_flags_match_the_service(history):
    stored, new = history
    predicted = predict_flags(new, stored)
    # The service: stored readings by start, then the batch in submission order (api/meters.py).
    service_history = [service_rules.PastReading(p.start, p.end, p.consumption) for p in stored]
    service_history += [service_rules.PastReading(p.start, p.end, p.consumption) for p in new]
    for reading, flags in zip(new, predicted, strict=True):
        period = service_rules.Period(reading.start, reading.end)
        average = service_rules.twelve_month_average(service_history, period)
        assert flags == service_rules.anomaly_flags(reading.consumption, average)


def test_boundary_is_exact():
    jan = PastReading(dt.date(2024, 1, 1), dt.date(2024, 1, 31), 1.0)
    feb = PastReading(dt.date(2024, 2, 1), dt.date(2024, 2, 29), 3.0)  # exactly 3 x average
    mar = PastReading(dt.date(2024, 3, 1), dt.date(2024, 3, 31), 0.4999)  # < 25 % of (1+3)/2
    assert predict_flags([feb, mar], [jan]) == [["spike"], ["drop"]]
