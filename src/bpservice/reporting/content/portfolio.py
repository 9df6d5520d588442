"""The portfolio summary: one row per building with area-weighted totals; figures of other dates
move to a table of their own."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from bpservice.domain import emissions
from bpservice.reporting.catalogue import TEMPLATE_COLUMNS
from bpservice.reporting.content.blocks import (
    PERIOD_FIGURES,
    TYPE_TITLES,
    Entry,
    area_weighted,
    building_row,
    column_sum,
    filters_text,
    json_meta,
    month_range,
    overlaps,
    period_text,
    report_meta,
    require_entries,
    sorted_entries,
)
from bpservice.reporting.document import (
    Amount,
    Column,
    Document,
    Facts,
    FactValue,
    Note,
    Section,
    Table,
    Value,
)

_PORTFOLIO_COLUMNS = [
    "property_name",
    "building_name",
    "country",
    "primary_use_type",
    "gfa_m2",
    "data_quality_grade",
    "eui_kwh_m2",
    "carbon_intensity_kgco2e_m2",
    "annual_energy_kwh",
    "annual_emissions_tco2e",
    "svc_score",
    "energy_rating_score",
]


def portfolio_totals(rows: Sequence[Mapping[str, Value]]) -> dict[str, Value]:
    """The totals row: sums of quantities, area-weighted means of intensities and scores."""
    svc = area_weighted(rows, "svc_score")
    # The energy rating is a US model: its average is over US buildings only (CS11).
    rating = area_weighted([r for r in rows if r.get("country") == "US"], "energy_rating_score")
    return {
        "property_name": "Total",
        "building_name": f"{len(rows)} buildings",
        "gfa_m2": column_sum(rows, "gfa_m2"),
        "eui_kwh_m2": area_weighted(rows, "eui_kwh_m2"),
        "carbon_intensity_kgco2e_m2": area_weighted(rows, "carbon_intensity_kgco2e_m2"),
        "annual_energy_kwh": column_sum(rows, "annual_energy_kwh"),
        "annual_emissions_tco2e": column_sum(rows, "annual_emissions_tco2e"),
        "svc_score": round(svc) if svc is not None else None,
        "energy_rating_score": round(rating) if rating is not None else None,
    }


def portfolio_summary(
    report: Entry, organisation: Entry, entries: Sequence[Entry], portfolio: Entry | None
) -> Document:
    filters = report.get("filters")
    require_entries(entries, filters)
    ordered = sorted_entries(entries)
    rows = [building_row(e) for e in ordered]
    elsewhere: list[dict[str, Value]] = []  # latest figures of buildings with none in the period
    for row, entry in zip(rows, ordered, strict=True):
        period = (entry.get("benchmark") or {}).get("reporting_period")
        row["assessment_period"] = month_range(period)
        if row["eui_kwh_m2"] is not None and not overlaps(period, report["period"]):
            # Figures of other dates never stand under the requested dates (issue: a 2023
            # summary printed 2024's EUIs): they move to their own table with their own dates.
            elsewhere.append({k: row.get(k) for k in _OTHER_PERIOD_KEYS})
            for key in PERIOD_FIGURES:
                row[key] = None
            row["assessment_period"] = "no data in requested period"
    columns = [TEMPLATE_COLUMNS[k].column for k in _PORTFOLIO_COLUMNS]
    grade_at = _PORTFOLIO_COLUMNS.index("data_quality_grade") + 1
    columns.insert(grade_at, Column("assessment_period", "Assessment period"))
    totals = portfolio_totals(rows)
    with_data = sum(1 for r in rows if r["eui_kwh_m2"] is not None)
    facts: list[tuple[str, FactValue]] = [
        ("Buildings", f"{len(rows)} ({with_data} with energy data)"),
        ("Total floor area", Amount(float(totals["gfa_m2"] or 0), 0, "m²")),  # type: ignore[arg-type]
    ]
    if totals["eui_kwh_m2"] is not None:
        facts.append(("Area-weighted EUI", Amount(float(totals["eui_kwh_m2"]), 1, "kWh/m²/yr")))  # type: ignore[arg-type]
    if totals["carbon_intensity_kgco2e_m2"] is not None:
        facts.append(
            (
                "Area-weighted carbon intensity",
                Amount(float(totals["carbon_intensity_kgco2e_m2"]), 1, "kgCO2e/m²/yr"),  # type: ignore[arg-type]
            )
        )
    facts.append(
        ("Annual emissions", Amount(float(totals["annual_emissions_tco2e"] or 0), 1, "tCO2e"))  # type: ignore[arg-type]
    )
    if portfolio:
        # The engine's weighted svc covers every building's current period; with buildings left
        # out for having no data in the requested period, it is recomputed over the rows shown.
        svc = area_weighted(rows, "svc_score") if elsewhere else portfolio.get("weighted_svc_score")
        if svc is not None:
            facts.append(("Weighted svc score", Amount(float(svc), 0)))
        grades = portfolio.get("grade_distribution") or {}
        if grades:
            facts.append(
                ("Data quality grades", " · ".join(f"{g} {grades.get(g, 0)}" for g in "ABCDEF"))
            )
    title = TYPE_TITLES["portfolio_summary"]
    # A table of dashes must not read as a report with results: say first that nothing was found.
    missing: list[Section] = []
    other_text = (
        f" The latest figures held for {len(elsewhere)} of them are for other dates: they are "
        "listed under 'Figures for other periods', each with its own dates, and are not in the "
        "totals."
        if elsewhere
        else ""
    )
    if not with_data:
        missing.append(
            Note(
                "No energy data for this period",
                f"None of the {len(rows)} buildings has energy data for the requested period "
                f"({period_text(report['period'])}). They are listed below without figures."
                + other_text
                + " Import the readings for this period, or request a period that has them.",
                warning=True,
            )
        )
    elif elsewhere:
        missing.append(
            Note(
                "Buildings without data for this period",
                f"{len(elsewhere)} of the {len(rows)} buildings have no energy data for the "
                f"requested period ({period_text(report['period'])}) and are listed without "
                "figures." + other_text,
                warning=True,
            )
        )
    extra: list[Section] = []
    if elsewhere:
        extra.append(
            Table(
                "Other periods",
                "Figures for other periods (not the requested period; not in the totals)",
                [
                    Column("property_name", "Property"),
                    Column("building_name", "Building"),
                    Column("reporting_period_start", "From", "date"),
                    Column("reporting_period_end", "To", "date"),
                    *[TEMPLATE_COLUMNS[k].column for k in _OTHER_PERIOD_KEYS[4:]],
                ],
                elsewhere,
                note="Each building's latest 12 months with data, which do not overlap the "
                "requested period.",
            )
        )
    data = json_meta(report, organisation, title)
    data["buildings_with_energy_data"] = with_data
    data["buildings_with_data_for_other_periods_only"] = len(elsewhere)
    return Document(
        title,
        f"{organisation.get('name')} · {filters_text(filters)}",
        report_meta(report, organisation),
        [
            *missing,
            Facts("Portfolio", facts, emphasis=True),
            Table(
                "Buildings",
                "Buildings",
                columns,
                rows,
                totals=totals,
                note="Totals: sums of floor area, energy and emissions; EUI, carbon intensity and "
                "the svc score are floor-area-weighted means over the buildings that have them; "
                "the energy rating total is over US buildings only.",
            ),
            *extra,
            Note("Method and factors", portfolio_method(rows)),
        ],
        data=data,
    )


# The columns of the table that shows a building's figures with their own dates instead.
_OTHER_PERIOD_KEYS = (
    "property_name",
    "building_name",
    "reporting_period_start",
    "reporting_period_end",
    "eui_kwh_m2",
    "carbon_intensity_kgco2e_m2",
    "annual_energy_kwh",
    "annual_emissions_tco2e",
)


def portfolio_method(rows: Sequence[Mapping[str, Value]]) -> str:
    """The method and factor sets behind a portfolio summary, per country present."""
    countries = sorted({str(r["country"]) for r in rows if r.get("country")})
    sets = []
    for country in countries:
        years = sorted(
            {
                emissions.reporting_year(r["reporting_period_start"], r["reporting_period_end"])  # type: ignore[arg-type]
                for r in rows
                if r.get("country") == country and r.get("reporting_period_start")
            }
        )
        for year in years or [None]:
            label = f"{country} {year}" if year else country
            sets.append(f"{label}: {emissions.factor_set_text(country, year)}")
    return (
        "Each row is the building's latest 12 months with data (its assessment period, shown per "
        "row); energy in months without full readings is estimated by scaling. Carbon intensity "
        "uses location-based emission factors of the building's country, from the factor set of "
        "the reporting year (the calendar year holding most of the period): "
        + "; ".join(sets)
        + ". The energy rating is indicative: offices are scored with EPA's office model, other "
        "use types against US national medians (see each certificate); the svc score is a "
        "percentile among the service's own peers. "
        "These carbon figures differ from an LL97 or BERDO assessment of the same building, "
        "which uses the law's own coefficients (e.g. LL97 0.000288962 tCO2e/kWh for grid "
        "electricity, BERDO's yearly grid factor less the RPS share) over a calendar year."
    )
