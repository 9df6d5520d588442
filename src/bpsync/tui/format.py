"""Pure helpers for the screens: how values, errors, readings and scores are shown. No Textual
imports and no I/O, so every rule here is tested on its own."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from typing import Any

from rich.text import Text

from bpsync import units as U
from bpsync.client import errors as E
from bpsync.client.models import (
    BenchmarkResult,
    BenchmarkScore,
    Property,
    Reading,
    UseTypeArea,
)
from bpsync.tui.widgets.plain import right
from bpsync.units import Units
from bpsync.vocab import DATA_QUALITY_GRADES, USE_TYPES

PROPERTY_TYPES = USE_TYPES  # property types and use types are one vocabulary (D8)
GRADES = DATA_QUALITY_GRADES
SORTS: tuple[tuple[str, str], ...] = (
    ("Name A→Z", "name"),
    ("Name Z→A", "-name"),
    ("Oldest first", "created_at"),
    ("Newest first", "-created_at"),
    ("Recently updated", "-updated_at"),
)
DASH = "\u2013"  # en dash


def number(value: float | int | None, digits: int = 0) -> str:
    if value is None:
        return DASH
    return f"{value:,.{digits}f}"


def day(value: dt.date | None) -> str:
    return value.isoformat() if value else DASH


def moment(value: dt.datetime | None) -> str:
    if value is None:
        return DASH
    return value.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M")


def size(count: int | None) -> str:
    if count is None:
        return DASH
    step = 1024.0
    value = float(count)
    for unit in ("B", "KB", "MB", "GB"):
        if value < step or unit == "GB":
            return f"{value:,.0f} {unit}" if unit == "B" else f"{value:,.1f} {unit}"
        value /= step
    return f"{count} B"  # pragma: no cover


def elapsed(start: dt.datetime, now: dt.datetime) -> str:
    """`42s`, `3m 05s`, `1h 02m`: how long something has been running."""
    seconds = max(0, int((now - start).total_seconds()))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m {seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def environment_badge(environment: str | None, signed_in: bool = True) -> tuple[str, str]:
    """(label, css class) of the environment badge shown on every screen."""
    if not signed_in:
        return "NOT SIGNED IN", "-none"
    if environment == "production":
        return "LIVE", "-live"
    if environment == "sandbox":
        return "SANDBOX", "-sandbox"
    # An OAuth token does not say which environment its app was registered for.
    return "OAUTH · ENV SET BY APP", "-oauth"


def describe(exc: BaseException) -> str:
    """One sentence for a person; never a traceback, never a secret (client messages hold none)."""
    if isinstance(exc, E.RateLimitError):
        wait = f"; retry in {exc.retry_after:.0f} s" if exc.retry_after else ""
        return f"Rate limited ({exc.bucket or 'key'} bucket){wait}."
    if isinstance(exc, E.LockedError):
        through = exc.locked_through
        return f"The building is locked through {through}." if through else exc.message
    if isinstance(exc, E.ValidationError):
        parts = [f"{d.get('field')}: {d.get('message')}" for d in exc.details[:3]]
        return f"{exc.message} " + "; ".join(parts) if parts else exc.message
    if isinstance(exc, E.APIStatusError):
        return f"{exc.message} ({exc.status} {exc.code})"
    if isinstance(exc, E.APITimeoutError):
        return "The service did not answer in time."
    if isinstance(exc, E.APIConnectionError):
        return "The service cannot be reached (connection refused or no network)."
    if isinstance(exc, E.AmbiguousWriteError):
        return f"The outcome is unknown: {exc}. Check before trying again."
    text = str(exc) or type(exc).__name__
    return text


def matches(prop: Property, term: str) -> bool:
    """Search within a property: every word in its name, reference, street, city, postal code or
    country; or its exact id (ids are random, so words are not looked for inside them)."""
    needle = term.strip().casefold()
    if not needle:
        return True
    if needle == prop.id.casefold():
        return True
    haystack = " ".join(
        str(v or "")
        for v in (
            prop.name,
            prop.internal_ref,
            prop.address.street,
            prop.address.city,
            prop.address.postal_code,
            prop.address.country,
        )
    ).casefold()
    return all(word in haystack for word in needle.split())


def property_row(prop: Property, units: Units = "si") -> tuple[Any, ...]:
    status = Text(prop.status.value, style="dim" if prop.status.value == "archived" else "")
    return (
        prop.name,
        prop.type,
        prop.address.city,
        prop.address.country,
        right(str(prop.building_count)),
        right(area(prop.total_gfa_m2, units, unit=False)),
        status,
    )


def gfa_sum(use_types: Iterable[UseTypeArea] | None) -> float:
    return round(sum(u.gfa_m2 for u in use_types or ()), 2)


def is_locked(reading: Reading, locked_through: dt.date | None) -> bool:
    """A reading is locked when it ends on or before the building's `locked_through` (D23)."""
    return locked_through is not None and reading.end_date <= locked_through


def flags_text(flags: Sequence[Any]) -> Text:
    if not flags:
        return Text(DASH, style="dim")
    text = Text()
    for i, flag in enumerate(flags):
        name = getattr(flag, "value", str(flag))
        if i:
            text.append(" ")
        text.append(
            name, style="bold black on yellow" if name != "negative" else "bold white on red"
        )
    return text


def reading_row(reading: Reading, locked_through: dt.date | None) -> tuple[Any, ...]:
    locked = is_locked(reading, locked_through)
    return (
        reading.start_date.isoformat(),
        reading.end_date.isoformat(),
        right(number(reading.consumption, 1)),
        reading.unit,
        right(number(reading.cost, 2) if reading.cost is not None else DASH),
        flags_text(reading.anomaly_flags),
        Text("🔒 locked", style="bold magenta") if locked else Text(""),
    )


def score(scores: Sequence[BenchmarkScore], standard: str) -> BenchmarkScore | None:
    return next((s for s in scores if s.standard == standard), None)


def yes_no(value: bool | None) -> str:
    return DASH if value is None else ("yes" if value else "no")


def score_lines(result: BenchmarkResult) -> list[tuple[str, str]]:
    """The building's scores as (label, value) lines, one block per standard (spec table)."""
    lines: list[tuple[str, str]] = []
    period = result.reporting_period
    if period and (period.start or period.end):
        lines.append(("Reporting period", f"{day(period.start)} → {day(period.end)}"))
    lines.append(("Data quality", result.data_quality_grade or DASH))
    lines.append(("EUI", f"{number(result.eui_kwh_m2, 1)} kWh/m²"))
    lines.append(("Carbon intensity", f"{number(result.carbon_intensity_kgco2e_m2, 1)} kgCO₂e/m²"))
    svc = score(result.scores, "svc")
    if svc:
        peers = f" of {svc.peer_count}" if svc.peer_count is not None else ""
        lines.append(("svc score", number(svc.score)))
        lines.append(
            ("  percentile", f"{number(svc.percentile)} in {svc.peer_group or DASH}{peers}")
        )
    rating = score(result.scores, "energy_rating")
    if rating:
        lines.append(("Energy rating", number(rating.score)))
        lines.append(
            (
                "  eligible",
                f"{yes_no(rating.eligible)} · certification {yes_no(rating.certification_eligible)}",
            )
        )
    epc = score(result.scores, "eu_epc")
    if epc:
        method = f" ({epc.country_methodology})" if epc.country_methodology else ""
        lines.append(("EPC grade", f"{epc.grade or DASH}{method}"))
    path = score(result.scores, "decarbonisation_pathway")
    if path:
        lines.append(("Pathway", path.pathway or DASH))
        lines.append(
            (
                "  stranding",
                f"1.5°C {path.stranding_year_1_5c or 'not stranded'} · "
                f"2°C {path.stranding_year_2c or 'not stranded'}",
            )
        )
        lines.append(
            (
                "  intensity",
                f"{number(path.current_intensity_kgco2e_m2, 1)} now → "
                f"{number(path.target_intensity_kgco2e_m2, 1)} target kgCO₂e/m²",
            )
        )
    regional = score(result.scores, "regional_rating")
    if regional:
        if regional.applicable:
            scheme = f" ({regional.scheme})" if regional.scheme else ""
            lines.append(("Regional rating", f"{number(regional.score)}{scheme}"))
        else:
            lines.append(("Regional rating", f"not applicable: {regional.reason or DASH}"))
    return lines


def grade_bars(distribution: dict[str, int]) -> tuple[list[str], list[int]]:
    """A to F in order, with a zero for every grade the service left out."""
    return list(GRADES), [int(distribution.get(g, 0)) for g in GRADES]


def history_series(entries: Sequence[Any], field: str) -> tuple[list[str], list[float]]:
    """Oldest period first (the service answers newest first), skipping periods without a value."""
    labels: list[str] = []
    values: list[float] = []
    for entry in reversed(entries):
        value = getattr(entry, field)
        if value is None:
            continue
        end = entry.period.end or entry.period.start
        labels.append(end.strftime("%Y-%m") if end else "?")
        values.append(float(value))
    return labels, values


# --- units (SI or US, bpsync.units) --------------------------------------------------------------


def area(m2: float | None, units: Units, *, unit: bool = True) -> str:
    """'8,200 m²' or '88,264 ft²' (without the symbol when `unit=False`, for a table cell)."""
    text = number(U.area(m2, units))
    return f"{text} {U.label('area', units)}" if unit and m2 is not None else text


def eui(kwh_m2: float | None, units: Units, *, unit: bool = True) -> str:
    text = number(U.eui(kwh_m2, units), 1)
    return f"{text} {U.label('eui', units)}" if unit and kwh_m2 is not None else text


def intensity(kg_m2: float | None, units: Units, *, unit: bool = True) -> str:
    """Carbon intensity: kgCO₂e/m² or kgCO₂e/ft² (two decimals per ft², the figures are small)."""
    text = number(U.intensity(kg_m2, units), 1 if units == "si" else 2)
    return f"{text} {U.label('intensity', units)}" if unit and kg_m2 is not None else text


def energy(kwh: float | None, units: Units, *, therms: bool = False, unit: bool = True) -> str:
    """kWh, or kBtu (therms with `therms=True`, for gas) in US units."""
    text = number(U.energy(kwh, units, therms=therms))
    symbol = U.label("gas" if therms else "energy", units)
    return f"{text} {symbol}" if unit and kwh is not None else text


def money(amount: float | None, currency: str = "USD") -> str:
    if amount is None:
        return DASH
    return f"${amount:,.0f}" if currency == "USD" else f"{amount:,.0f} {currency}"
