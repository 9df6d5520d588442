"""Benchmark arithmetic (pure): months and reporting periods, prorating readings over calendar
months, annualising, the svc peer percentile and the ENERGY STAR-style 1-100 score.

The rules and their parameters are recorded in docs/decisions.md (benchmarks section).
"""

from __future__ import annotations

import calendar
import datetime as dt
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from bpservice.domain.tables import energy_rating_medians, energy_star_models

KWH_M2_PER_KBTU_FT2 = 3.15459  # shared reference: 1 kBtu/ft² = 3.15459 kWh/m²
PERIOD_MONTHS = 12

# --- months and periods --------------------------------------------------------------------------


def month_start(day: dt.date) -> dt.date:
    return day.replace(day=1)


def month_days(month: dt.date) -> int:
    return calendar.monthrange(month.year, month.month)[1]


def month_end(month: dt.date) -> dt.date:
    return month.replace(day=month_days(month))


def add_months(month: dt.date, n: int) -> dt.date:
    year, index = divmod(month.year * 12 + month.month - 1 + n, 12)
    return dt.date(year, index + 1, 1)


def months_between(first: dt.date, last: dt.date) -> list[dt.date]:
    """Month starts from `first`'s month through `last`'s month, inclusive."""
    out, month = [], month_start(first)
    while month <= last:
        out.append(month)
        month = add_months(month, 1)
    return out


@dataclass(frozen=True)
class Period:
    """A run of whole calendar months, `start` to `end` inclusive."""

    start: dt.date
    end: dt.date

    @property
    def months(self) -> list[dt.date]:
        return months_between(self.start, self.end)

    @property
    def days(self) -> int:
        return (self.end - self.start).days + 1

    def shifted(self, months: int) -> Period:
        return Period(
            add_months(self.start, months), month_end(add_months(month_start(self.end), months))
        )

    def as_dict(self) -> dict[str, str]:
        return {"start": self.start.isoformat(), "end": self.end.isoformat()}


def reporting_period(last_month: dt.date) -> Period:
    """The 12 calendar months ending with `last_month`."""
    return Period(add_months(month_start(last_month), 1 - PERIOD_MONTHS), month_end(last_month))


def history_periods(current: Period, count: int, first_data_month: dt.date) -> list[Period]:
    """`current` and the 12-month periods before it, newest first, never starting wholly before
    the first month with data."""
    out = []
    for k in range(count):
        period = current.shifted(-PERIOD_MONTHS * k)
        if k and period.end < first_data_month:
            break
        out.append(period)
    return out


# --- prorating readings over months --------------------------------------------------------------


@dataclass(frozen=True)
class ReadingSpan:
    start: dt.date
    end: dt.date  # inclusive (docs/decisions.md D18)
    consumption: float
    flagged: bool = False


@dataclass
class MonthTotal:
    month: dt.date
    quantity: float = 0.0
    covered_days: int = 0
    readings: int = 0  # readings that end in this month (each reading counts once)
    flagged: int = 0

    @property
    def days(self) -> int:
        return month_days(self.month)


def prorate(readings: Iterable[ReadingSpan], first: dt.date, last: dt.date) -> list[MonthTotal]:
    """Spread each reading evenly over its days and total the months `first`..`last` (month
    starts). Months that no reading touches are left out."""
    totals: dict[dt.date, MonthTotal] = {}
    window_start, window_end = month_start(first), month_end(last)
    for r in readings:
        per_day = r.consumption / ((r.end - r.start).days + 1)
        lo, hi = max(r.start, window_start), min(r.end, window_end)
        month = month_start(lo)
        while lo <= hi:
            chunk_end = min(month_end(month), hi)
            days = (chunk_end - lo).days + 1
            total = totals.setdefault(month, MonthTotal(month))
            total.quantity += per_day * days
            total.covered_days += days
            month = add_months(month, 1)
            lo = month
        end_month = month_start(r.end)
        if window_start <= end_month <= window_end:
            total = totals.setdefault(end_month, MonthTotal(end_month))
            total.readings += 1
            total.flagged += int(r.flagged)
    return [totals[m] for m in sorted(totals)]


# --- a meter over a period -----------------------------------------------------------------------


@dataclass(frozen=True)
class MonthRow:
    """A stored monthly aggregate of one meter (see db/benchmark_models.py)."""

    meter_id: str
    month: dt.date
    kwh: float | None
    quantity: float
    covered_days: int
    readings: int
    flagged: int


@dataclass(frozen=True)
class MeterPeriod:
    meter_id: str
    meter_type: str
    kwh: float  # site kWh actually recorded in the period (0 for non-energy meters)
    quantity: float
    covered_days: int
    incomplete_months: int  # months of the period not fully covered
    readings: int
    flagged: int
    period_days: int
    # Month starts of the period with any reading, and those fully covered: documents name them
    # per meter (an estimate must say which months it rests on).
    months_with_readings: tuple[dt.date, ...] = ()
    full_months: tuple[dt.date, ...] = ()

    @property
    def coverage(self) -> float:
        return self.covered_days / self.period_days

    @property
    def complete(self) -> bool:
        return self.incomplete_months == 0

    def annualised(self, value: float) -> float:
        """A period total scaled to the whole period from the days actually covered."""
        return value * self.period_days / self.covered_days if self.covered_days else 0.0


def meter_periods(
    period: Period, meters: Mapping[str, str], rows: Iterable[MonthRow]
) -> list[MeterPeriod]:
    """One MeterPeriod per meter in `meters` (id -> type), from its monthly rows in the period."""
    months = set(period.months)
    acc: dict[str, dict[dt.date, MonthRow]] = {m: {} for m in meters}
    for row in rows:
        if row.meter_id in acc and row.month in months:
            acc[row.meter_id][row.month] = row
    out = []
    for meter_id, meter_type in meters.items():
        by_month = acc[meter_id]
        full = sorted(m for m, r in by_month.items() if r.covered_days >= month_days(m))
        out.append(
            MeterPeriod(
                meter_id=meter_id,
                meter_type=meter_type,
                kwh=sum(r.kwh or 0.0 for r in by_month.values()),
                quantity=sum(r.quantity for r in by_month.values()),
                covered_days=sum(
                    min(r.covered_days, month_days(r.month)) for r in by_month.values()
                ),
                incomplete_months=len(months) - len(full),
                readings=sum(r.readings for r in by_month.values()),
                flagged=sum(r.flagged for r in by_month.values()),
                period_days=period.days,
                months_with_readings=tuple(
                    sorted(m for m, r in by_month.items() if r.covered_days)
                ),
                full_months=tuple(full),
            )
        )
    return out


@dataclass(frozen=True)
class EnergyPeriod:
    """The energy meters of a building over one period, annualised."""

    period: Period
    meters: tuple[MeterPeriod, ...]
    kwh_by_type: dict[str, float] = field(default_factory=dict)

    @property
    def site_kwh(self) -> float:
        return sum(self.kwh_by_type.values())

    @property
    def has_data(self) -> bool:
        return any(m.covered_days for m in self.meters)

    @property
    def twelve_full_months(self) -> bool:
        """Every energy meter covers every day of the 12-month period."""
        return bool(self.meters) and all(m.complete for m in self.meters)


def energy_period(period: Period, meters: Sequence[MeterPeriod]) -> EnergyPeriod:
    kwh_by_type: dict[str, float] = {}
    for m in meters:
        if m.covered_days:
            kwh_by_type[m.meter_type] = kwh_by_type.get(m.meter_type, 0.0) + m.annualised(m.kwh)
    return EnergyPeriod(period, tuple(meters), kwh_by_type)


# --- svc: percentile within the peer group -------------------------------------------------------

# Fewer buildings than this (the building included) make a percentile meaningless: with two
# buildings every result is 0 or 100. Such groups get no score (docs/decisions.md (benchmarks section)).
MIN_PEER_GROUP = 5


@dataclass(frozen=True)
class PeerScore:
    score: int | None
    percentile: float | None
    peer_count: int


def svc_score(eui: float | None, others: Sequence[float]) -> PeerScore:
    """`percentile`: where the building's EUI sits among the other peers' (0 = lowest EUI, ties
    count half); `score` = 100 - percentile, 1-100, higher is better, as ENERGY STAR's."""
    if eui is None:
        return PeerScore(None, None, len(others))
    count = len(others) + 1
    if count < MIN_PEER_GROUP:
        return PeerScore(None, None, count)
    below = sum(1 for o in others if o < eui)
    equal = sum(1 for o in others if o == eui)
    percentile = 100.0 * (below + 0.5 * equal) / len(others)
    score = min(100, max(1, round(100 - percentile)))
    return PeerScore(score, round(percentile, 1), count)


# --- energy_rating: ENERGY STAR-style 1-100 --------------------------------------------------------

# Efficiency ratios (actual / median source EUI) are modelled as gamma-distributed with median 1.
# Shape 6 puts the quartiles at ratios 0.74 and 1.31 (a building using a quarter less than the
# median scores about 75). EPA's fitted shapes are not published in our reference: this is our
# stated parameter.
GAMMA_SHAPE = 6.0
CERTIFICATION_SCORE = 75


def regularized_lower_gamma(a: float, x: float) -> float:
    """P(a, x): series below a + 1, continued fraction above (Numerical Recipes §6.2)."""
    if x <= 0:
        return 0.0
    log_prefix = -x + a * math.log(x) - math.lgamma(a)
    if x < a + 1:
        term = total = 1.0 / a
        n = 0
        while abs(term) > 1e-15 * abs(total) and n < 1000:
            n += 1
            term *= x / (a + n)
            total += term
        return total * math.exp(log_prefix)
    tiny = 1e-300
    b = x + 1 - a
    c, d = 1 / tiny, 1 / b
    h = d
    for i in range(1, 1000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        delta = d * c
        h *= delta
        if abs(delta - 1) < 1e-15:
            break
    return 1.0 - math.exp(log_prefix) * h


@cache
def _gamma_median(shape: float) -> float:
    lo, hi = 0.0, shape * 10
    for _ in range(200):
        mid = (lo + hi) / 2
        if regularized_lower_gamma(shape, mid) < 0.5:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def rating_from_ratio(ratio: float, shape: float = GAMMA_SHAPE) -> int:
    """1-100: the share of peers (by the gamma model) with a worse efficiency ratio."""
    worse = 1.0 - regularized_lower_gamma(shape, max(ratio, 0.0) * _gamma_median(shape))
    return min(100, max(1, round(100 * worse)))


def median_source_eui_kwh_m2(use_type: str) -> float | None:
    figure = energy_rating_medians().get(use_type)
    return None if figure is None else figure.value * KWH_M2_PER_KBTU_FT2


# ENERGY STAR scores and certification are US programmes (Canada runs its own models): a score
# elsewhere is only indicative (docs/decisions.md CS5).
CERTIFICATION_COUNTRIES = frozenset({"US"})
SQFT_PER_M2 = 10.7639
METHOD_MODEL = "energy_star_model"
METHOD_MEDIAN = "median_ratio"


@dataclass(frozen=True)
class UseDetails:
    """Portfolio Manager use details a model may need; None where the service holds no figure
    (the model then uses the reference mean, which leaves the prediction unchanged)."""

    gfa_m2: float | None = None
    weekly_hours: float | None = None
    workers_per_1000_sqft: float | None = None
    computers_per_1000_sqft: float | None = None
    percent_cooled: float | None = None  # 0-100
    cooling_degree_days: float | None = None
    small_bank: bool = False


@dataclass(frozen=True)
class Prediction:
    source_eui_kbtu_ft2: float
    defaulted: tuple[str, ...]  # the use details taken at the reference mean


def office_prediction(model: Mapping[str, Any], details: UseDetails) -> Prediction:
    """Predicted source EUI of EPA's office regression: constant + Σ coefficient x (value -
    centre), square feet capped at 100,000; missing details take the centre (contribute 0)."""
    terms = model["terms"]
    values: dict[str, float | None] = {
        "square_feet_capped_100000": None
        if details.gfa_m2 is None
        else min(details.gfa_m2 * SQFT_PER_M2, float(model["square_feet_cap"])),
        "weekly_operating_hours": details.weekly_hours,
        "workers_per_1000_sqft": details.workers_per_1000_sqft,
        "computers_per_1000_sqft": details.computers_per_1000_sqft,
        "percent_cooled_x_ln_cdd": None
        if details.percent_cooled is None or not details.cooling_degree_days
        else details.percent_cooled / 100 * math.log(details.cooling_degree_days),
        "small_bank": 1.0 if details.small_bank else 0.0,
    }
    predicted = float(model["constant"])
    defaulted = []
    for name, term in terms.items():
        value = values[name]
        if value is None:
            defaulted.append(name)
            continue
        predicted += float(term["coefficient"]) * (value - float(term["centre"]))
    return Prediction(predicted, tuple(defaulted))


def reference_median_ratio(shape: float, scale: float) -> float:
    """The median efficiency ratio of a score's own reference population (the fitted gamma's
    median): a building at it scores 50. EPA's office fit (shape 4.016, scale 0.2328) gives
    0.8586; the Technical Reference's worked example, ratio 0.8603, scores 50."""
    return _gamma_median(shape) * scale


def score_from_gamma(ratio: float, shape: float, scale: float) -> int:
    """EPA's lookup: the score is 100 minus the whole percent of the fitted gamma population with
    a ratio at or below this one (ratio < 0.1932 scores 100 for offices, >= 2.3444 scores 1)."""
    percent = 100 * regularized_lower_gamma(shape, max(ratio, 0.0) / scale)
    return min(100, max(1, 100 - math.floor(percent + 1e-9)))


@dataclass(frozen=True)
class EnergyRating:
    score: int | None
    eligible: bool
    certification_eligible: bool
    # Why a score can never support certification here (None when it can).
    indicative_reason: str | None = None
    method: str | None = None
    # The source EUI (kWh/m²) at which this building would score 50: the median of the score's
    # own reference for a building like this one. For a modelled type it is the prediction x
    # the reference median ratio, not the national median table's figure (a different
    # statistic: the median EUI of all the type's buildings, unadjusted).
    median_source_eui_kwh_m2: float | None = None

    @property
    def indicative(self) -> bool:
        return self.indicative_reason is not None


_DETAIL_WORDS = {
    "square_feet_capped_100000": "floor area",
    "weekly_operating_hours": "weekly operating hours",
    "workers_per_1000_sqft": "workers",
    "computers_per_1000_sqft": "computers",
    "percent_cooled_x_ln_cdd": "percent cooled and cooling degree days",
}


def energy_rating(
    source_eui_kwh_m2: float | None,
    use_type: str,
    twelve_full_months: bool,
    country: str = "US",
    details: UseDetails | None = None,
) -> EnergyRating:
    """1-100 score. Use types with a published ENERGY STAR model (office) are scored with it:
    actual / predicted source EUI placed on EPA's fitted gamma curve. Others fall back to the
    ratio to a national median on the service's gamma (shape 6). `eligible` needs 12 full months
    for every energy meter. Certification needs eligible, >= 75, a US building and a method with
    nothing assumed: the EPA model with every use detail given; otherwise the score is indicative
    and says why."""
    if source_eui_kwh_m2 is None:
        return EnergyRating(None, False, False)
    eligible = twelve_full_months
    reasons = []
    if country not in CERTIFICATION_COUNTRIES:
        reasons.append("outside the US: indicative only")
    model = energy_star_models().get(use_type)
    if model is not None:
        prediction = office_prediction(model, details or UseDetails())
        ratio = (source_eui_kwh_m2 / KWH_M2_PER_KBTU_FT2) / prediction.source_eui_kbtu_ft2
        shape, scale = float(model["gamma_shape"]), float(model["gamma_scale"])
        score = score_from_gamma(ratio, shape, scale)
        median = (
            prediction.source_eui_kbtu_ft2
            * reference_median_ratio(shape, scale)
            * KWH_M2_PER_KBTU_FT2
        )
        method = METHOD_MODEL
        missing = [_DETAIL_WORDS[d] for d in prediction.defaulted if d in _DETAIL_WORDS]
        if missing:
            reasons.append(
                "reference means used for " + ", ".join(missing) + " (not held by the service)"
            )
    else:
        figure = energy_rating_medians().get(use_type)
        if figure is None:
            return EnergyRating(None, False, False)
        median = figure.value * KWH_M2_PER_KBTU_FT2
        score = rating_from_ratio(source_eui_kwh_m2 / median)
        method = METHOD_MEDIAN
        if figure.status != "V":
            reasons.append(
                "the national median is not confirmed against the current ENERGY STAR table"
            )
    reason = "; ".join(reasons) or None
    return EnergyRating(
        score,
        eligible,
        eligible and reason is None and score >= CERTIFICATION_SCORE,
        reason,
        method,
        median,
    )
