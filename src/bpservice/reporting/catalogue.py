"""What can be generated: the report types (spec, Reports) and the columns a custom template can pick."""

from __future__ import annotations

from dataclasses import dataclass

from bpservice.domain.vocab import ENERGY_METER_TYPES, METER_TYPES
from bpservice.reporting.document import Column


@dataclass(frozen=True)
class ReportType:
    type: str
    description: str
    formats: tuple[str, ...]
    scope: str  # "building" or "organisation"


# Exactly the spec's table, in its order.
REPORT_TYPES: tuple[ReportType, ...] = (
    ReportType(
        "benchmark_certificate",
        "Benchmark certificate for one building: reporting period, scores against each standard, "
        "energy use intensity and carbon intensity.",
        ("pdf",),
        "building",
    ),
    ReportType(
        "portfolio_summary",
        "Portfolio summary: one row per building with grade, EUI, carbon intensity, energy, "
        "emissions and scores, and portfolio totals.",
        ("pdf", "xlsx"),
        "organisation",
    ),
    ReportType(
        "compliance_esg",
        "ESG disclosure workbook: energy, greenhouse-gas and water tables per property.",
        ("xlsx",),
        "organisation",
    ),
    ReportType(
        "compliance_ll97",
        "NYC Local Law 97 assessment for one building: emissions by source, the limit by "
        "occupancy group, excess emissions and the estimated penalty.",
        ("pdf", "xlsx"),
        "building",
    ),
    ReportType(
        "compliance_berdo",
        "Boston BERDO 2.0 assessment for one building: emissions intensity against the emissions "
        "standard for its building type(s) and compliance period.",
        ("pdf", "xlsx"),
        "building",
    ),
    ReportType(
        "custom",
        "Custom report from a saved template: the template's columns, one row per building.",
        ("pdf", "xlsx", "csv", "json"),
        "organisation",
    ),
)
REPORT_TYPES_BY_NAME = {t.type: t for t in REPORT_TYPES}
FORMATS = ("pdf", "xlsx", "csv", "json")

CONTENT_TYPES = {
    "pdf": "application/pdf",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "csv": "text/csv; charset=utf-8",
    "json": "application/json",
}


@dataclass(frozen=True)
class TemplateColumn:
    column: Column
    description: str
    # Whether the totals row sums this column (quantities do; intensities, scores and years do not).
    summable: bool = False


def _energy_columns() -> list[TemplateColumn]:
    return [
        TemplateColumn(
            Column(f"{m}_kwh", f"{m.replace('_', ' ').capitalize()} energy", "number", 0, "kWh"),
            f"Annualised {m.replace('_', ' ')} consumption in kWh",
            summable=True,
        )
        for m in METER_TYPES
        if m in ENERGY_METER_TYPES
    ]


_COLUMNS: list[TemplateColumn] = [
    TemplateColumn(Column("property_id", "Property id"), "Property identifier (prp_)"),
    TemplateColumn(Column("property_name", "Property"), "Property name"),
    TemplateColumn(Column("property_type", "Property type"), "Property type"),
    TemplateColumn(Column("internal_ref", "Internal ref"), "The property's internal reference"),
    TemplateColumn(Column("city", "City"), "City of the property"),
    TemplateColumn(Column("country", "Country"), "ISO 3166-1 alpha-2 country of the property"),
    TemplateColumn(Column("building_id", "Building id"), "Building identifier (bld_)"),
    TemplateColumn(Column("building_name", "Building"), "Building name"),
    TemplateColumn(Column("primary_use_type", "Use type"), "Primary use type of the building"),
    TemplateColumn(
        Column("gfa_m2", "GFA", "number", 0, "m²"), "Gross floor area in m²", summable=True
    ),
    TemplateColumn(
        Column("gfa_sqft", "GFA", "number", 0, "ft²"), "Gross floor area in ft²", summable=True
    ),
    TemplateColumn(Column("year_built", "Year built", "integer"), "Year of construction"),
    TemplateColumn(Column("floors", "Floors", "integer"), "Number of floors"),
    TemplateColumn(Column("occupancy_pct", "Occupancy", "percent", 0), "Occupancy percentage"),
    TemplateColumn(
        Column("operating_hours_week", "Hours/week", "number", 0), "Operating hours per week"
    ),
    TemplateColumn(Column("data_quality_grade", "Grade"), "Data quality grade (A-F)"),
    TemplateColumn(
        Column("reporting_period_start", "Period start", "date"), "Start of the benchmark period"
    ),
    TemplateColumn(
        Column("reporting_period_end", "Period end", "date"), "End of the benchmark period"
    ),
    TemplateColumn(
        Column("eui_kwh_m2", "EUI", "number", 1, "kWh/m²"), "Energy use intensity, kWh/m²/yr"
    ),
    TemplateColumn(
        Column("carbon_intensity_kgco2e_m2", "Carbon intensity", "number", 1, "kgCO2e/m²"),
        "Carbon intensity, kgCO2e/m²/yr",
    ),
    TemplateColumn(
        Column("annual_energy_kwh", "Annual energy", "number", 0, "kWh"),
        "Annualised site energy, all energy meters, kWh",
        summable=True,
    ),
    TemplateColumn(
        Column("annual_emissions_tco2e", "Annual emissions", "number", 1, "tCO2e"),
        "Annual emissions: carbon intensity x GFA, tCO2e",
        summable=True,
    ),
    *_energy_columns(),
    TemplateColumn(
        Column("annual_water_m3", "Water", "number", 0, "m³"),
        "Annualised water consumption, m³",
        summable=True,
    ),
    TemplateColumn(
        Column("water_intensity_m3_m2", "Water intensity", "number", 2, "m³/m²"),
        "Water consumption per m² of GFA",
    ),
    TemplateColumn(Column("svc_score", "svc score", "integer"), "svc benchmark score (1-100)"),
    TemplateColumn(
        Column("svc_percentile", "svc percentile", "integer"), "Percentile within the peer group"
    ),
    TemplateColumn(Column("svc_peer_group", "Peer group"), "svc peer group"),
    TemplateColumn(
        Column("energy_rating_score", "Energy rating", "integer"), "Energy rating score (1-100)"
    ),
    TemplateColumn(Column("eu_epc_grade", "EPC grade"), "EU EPC grade"),
    TemplateColumn(
        Column("stranding_year_1_5c", "Stranding 1.5°C", "integer"),
        "Decarbonisation pathway stranding year, 1.5 °C",
    ),
    TemplateColumn(
        Column("stranding_year_2c", "Stranding 2°C", "integer"),
        "Decarbonisation pathway stranding year, 2 °C",
    ),
]
TEMPLATE_COLUMNS: dict[str, TemplateColumn] = {c.column.key: c for c in _COLUMNS}
MAX_TEMPLATE_COLUMNS = 40
