"""A custom report: the template's columns for each building, sorted as the template says."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bpservice.reporting.catalogue import TEMPLATE_COLUMNS
from bpservice.reporting.content.blocks import (
    PERIOD_FIGURES,
    TYPE_TITLES,
    Entry,
    building_row,
    column_sum,
    filters_text,
    json_meta,
    month_range,
    overlaps,
    period_text,
    report_meta,
    require_entries,
)
from bpservice.reporting.document import (
    Document,
    Note,
    Section,
    Table,
    Value,
)

# A custom template's columns that belong to the building's assessment period (with the
# per-meter-type energy columns).
_CUSTOM_PERIOD_FIGURES = (
    *PERIOD_FIGURES,
    "svc_percentile",
    "eu_epc_grade",
    "stranding_year_1_5c",
    "stranding_year_2c",
)


def _sort_key(key: str) -> Any:
    def sort(row: Mapping[str, Value]) -> tuple[int, Any]:
        value = row.get(key)
        # None last, whatever the direction; numbers and text never compared with each other.
        if value is None:
            return (2, "")
        if isinstance(value, int | float):
            return (0, value)
        return (1, str(value))

    return sort


def custom(
    report: Entry, organisation: Entry, template: Entry, entries: Sequence[Entry]
) -> Document:
    filters = report.get("filters")
    require_entries(entries, filters)
    keys = list(template["columns"])
    rows = [building_row(e) for e in entries]
    # As in the portfolio summary: a building whose latest 12 months with data do not overlap
    # the requested period shows no figures under the requested dates; a note gives its dates.
    elsewhere = []
    for row, entry in zip(rows, entries, strict=True):
        period = (entry.get("benchmark") or {}).get("reporting_period")
        if row["eui_kwh_m2"] is not None and not overlaps(period, report["period"]):
            elsewhere.append(f"{row['building_name']} ({month_range(period)})")
            for key in _CUSTOM_PERIOD_FIGURES:
                row[key] = None
            for key in TEMPLATE_COLUMNS:
                if key.endswith("_kwh"):
                    row[key] = None
    rows.sort(
        key=lambda r: (str(r["property_name"]), str(r["building_name"]), str(r["building_id"]))
    )
    sort = template.get("sort")
    if sort:
        key = sort.lstrip("-")
        if sort.startswith("-"):
            # Descending with None still last: sort present values, then append the rest.
            present = [r for r in rows if r.get(key) is not None]
            present.sort(key=_sort_key(key), reverse=True)
            rows = present + [r for r in rows if r.get(key) is None]
        else:
            rows.sort(key=_sort_key(key))
    selected = [{k: r.get(k) for k in keys} for r in rows]
    columns = [TEMPLATE_COLUMNS[k].column for k in keys]
    totals: dict[str, Value] | None = None
    summable = [k for k in keys if TEMPLATE_COLUMNS[k].summable]
    if summable:
        totals = {k: column_sum(selected, k) for k in summable}
        first = keys[0]
        if first not in totals:
            totals[first] = "Total"
    title = str(template.get("title") or template.get("name") or TYPE_TITLES["custom"])
    data = json_meta(report, organisation, title)
    data["template"] = {"id": template.get("id"), "name": template.get("name")}
    sections: list[Section] = []
    if elsewhere:
        sections.append(
            Note(
                "Buildings without data for this period",
                f"{len(elsewhere)} of the {len(rows)} buildings have no energy data for the "
                f"requested period ({period_text(report['period'])}); their figures are left "
                "blank. Their latest data is for other dates: " + "; ".join(elsewhere) + ".",
                warning=True,
            )
        )
    data["buildings_with_data_for_other_periods_only"] = len(elsewhere)
    return Document(
        title,
        f"{organisation.get('name')} · {filters_text(filters)}",
        report_meta(report, organisation),
        [*sections, Table("Report", title, columns, selected, totals=totals)],
        data=data,
    )
