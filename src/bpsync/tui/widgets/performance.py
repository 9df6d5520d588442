"""A building's performance at a glance (issue 28): the city emissions law that applies to it
(LL97 or BERDO: limit, emissions, excess and penalty for each period to 2050, as a table and a
chart; "not covered" with the reason otherwise), its EPC grade and decarbonisation-pathway
(CRREM-style) stranding years, its other scores with the reason for each one missing, said where
the score would be, and its EUI history. Pure functions turn the service's answers into lines;
`PerformancePanel` shows them and loads them in a worker."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.widgets import Static

from bpsync import units as U
from bpsync.client import errors as E
from bpsync.client.models import BenchmarkHistory, BenchmarkResult, BenchmarkScore, Building
from bpsync.compliance import (
    COMPLIANT,
    NO_DATA,
    NOT_COVERED,
    OVER_LIMIT,
    ComplianceOutlook,
    PeriodOutlook,
    fetch_outlook,
)
from bpsync.tui.format import DASH, describe, eui, history_series, intensity, money, number
from bpsync.tui.widgets.charts import GroupedBarChart, LineChart
from bpsync.tui.widgets.plain import plain

if TYPE_CHECKING:
    from bpsync.client.service import AsyncServiceClient
    from bpsync.units import Units

MIN_PEER_GROUP = 5  # the service's smallest svc peer group, building included (decisions B7)
HISTORY_PERIODS = 8
STATUS_STYLE = {
    COMPLIANT: "bold green",
    OVER_LIMIT: "bold red",
    NO_DATA: "bold yellow",
    NOT_COVERED: "dim",
}


def _score(result: BenchmarkResult, standard: str) -> BenchmarkScore | None:
    return next((s for s in result.scores if s.standard == standard), None)


# --- scores, each missing one with its reason -----------------------------------------------------


def svc_text(result: BenchmarkResult) -> str:
    """The svc score and percentile, or why there is none (no energy data, a peer group under
    five buildings)."""
    svc = _score(result, "svc")
    if svc is None:
        return f"{DASH} (not calculated by the service)"
    if svc.score is not None:
        peers = f" of {svc.peer_count}" if svc.peer_count is not None else ""
        return (
            f"{number(svc.score)} · percentile {number(svc.percentile)} in {svc.peer_group}{peers}"
        )
    if result.eui_kwh_m2 is None:
        return f"{DASH} · no energy data in the period"
    count = svc.peer_count or 1
    return (
        f"{DASH} · needs {MIN_PEER_GROUP} buildings in its peer group: "
        f"{svc.peer_group or 'its group'} has {count}"
    )


def rating_text(result: BenchmarkResult) -> str:
    """The energy rating (1-100) with its eligibility, or why there is none."""
    rating = _score(result, "energy_rating")
    if rating is None:
        return f"{DASH} (not calculated by the service)"
    if rating.score is None:
        if result.eui_kwh_m2 is None:
            return f"{DASH} · no energy data in the period"
        return f"{DASH} · no national median for this use type"
    if not rating.eligible:
        return f"{number(rating.score)} · not eligible: needs 12 full months of every meter"
    if rating.certification_eligible:
        return f"{number(rating.score)} · certification eligible"
    # The service's reason (assumed use details, outside the US) runs to four lines at 120
    # columns and pushed the charts off the panel: at a glance it is only named.
    indicative = " (indicative)" if getattr(rating, "indicative_reason", None) else ""
    return f"{number(rating.score)} · not certifiable{indicative}"


def epc_text(result: BenchmarkResult, country: str | None) -> str:
    epc = _score(result, "eu_epc")
    if epc is not None and epc.grade:
        method = f" ({epc.country_methodology} method)" if epc.country_methodology else ""
        return f"{epc.grade}{method}"
    if result.eui_kwh_m2 is None:
        return f"{DASH} · no energy data in the period"
    where = f" in {country}" if country else ""
    return f"not covered{where} (the service grades EU and GB buildings)"


def pathway_text(result: BenchmarkResult) -> str:
    """When the building strands on its decarbonisation pathway (1.5 °C and 2 °C)."""
    path = _score(result, "decarbonisation_pathway")
    if path is None:
        return f"{DASH} (not calculated by the service)"
    if path.current_intensity_kgco2e_m2 is None:
        return f"{DASH} · no carbon figure (no energy data in the period)"

    def year(value: int | None) -> str:
        return str(value) if value else "not before 2050"

    return f"1.5 °C {year(path.stranding_year_1_5c)} · 2 °C {year(path.stranding_year_2c)}"


def score_rows(
    result: BenchmarkResult, units: Units, country: str | None = None
) -> list[tuple[str, str]]:
    """(label, value) lines: figures, EPC, pathway, then the scores; a missing value says why."""
    period = result.reporting_period
    span = f"{period.start} → {period.end}" if period and period.start else "no data in any period"
    path = _score(result, "decarbonisation_pathway")
    rows = [
        ("Period", span),
        ("EUI", eui(result.eui_kwh_m2, units) if result.eui_kwh_m2 is not None else DASH),
        ("Carbon", intensity(result.carbon_intensity_kgco2e_m2, units) or DASH),
        ("EPC grade", epc_text(result, country)),
        ("Stranding", pathway_text(result)),
    ]
    if path is not None and path.target_intensity_kgco2e_m2 is not None:
        target = intensity(path.target_intensity_kgco2e_m2, units)
        rows.append(("  target now", f"{target} ({path.pathway or DASH})"))
    rows += [("svc score", svc_text(result)), ("Energy rating", rating_text(result))]
    regional = _score(result, "regional_rating")
    if regional is not None and regional.applicable:
        scheme = f" ({regional.scheme})" if regional.scheme else ""
        rows.append(("Regional rating", f"{number(regional.score)}{scheme}"))
    return rows


def with_reasons(lines: list[tuple[str, str]], result: BenchmarkResult) -> list[tuple[str, str]]:
    """The benchmarks screen's score lines with each missing score saying why, in its own line;
    a regional rating that does not apply says so in its first clause only (the rest, which
    scheme the service does model, took five lines for every building outside GB)."""
    reasons = {"svc score": svc_text(result), "Energy rating": rating_text(result)}
    out = []
    for label, value in lines:
        if label in reasons and value == DASH:
            value = reasons[label]
        elif label == "Regional rating" and value.startswith("not applicable"):
            value = value.split(";")[0].rstrip(".")
        out.append((label, value))
    return out


def missing_svc(result: BenchmarkResult) -> str:
    """Why the svc history has no points, short enough for the chart's title."""
    svc = _score(result, "svc")
    if svc is None or result.eui_kwh_m2 is None:
        return svc_text(result).removeprefix(f"{DASH} · ").removeprefix(f"{DASH} ")
    if svc.score is None:
        return f"needs {MIN_PEER_GROUP} in its peer group, has {svc.peer_count or 1}"
    return ""


# --- compliance ----------------------------------------------------------------------------------


def compliance_line(outlook: ComplianceOutlook | None) -> Text:
    """One line for the top of the building screen: the law, the status of the current period
    and what it costs, or why the building is not covered."""
    if outlook is None:
        return Text("Compliance: reading…", style="dim")
    law = outlook.law or "LL97/BERDO"
    text = Text("Compliance ", style="bold")
    if not outlook.covered:
        return text.append(f"{law}: not covered · ").append(outlook.reason)
    current, following = outlook.current(), outlook.next()
    text.append(f"{law} ").append(outlook.status, style=STATUS_STYLE.get(outlook.status, ""))
    if current is not None and current.excess_tco2e is not None:
        text.append(f" in {current.label}").append(_cost(current))
        if following is not None and following.excess_tco2e is not None:
            state = OVER_LIMIT if following.over else COMPLIANT
            text.append(f" · {following.label} ").append(state, style=STATUS_STYLE[state])
            text.append(_cost(following))
    elif outlook.status == NO_DATA:
        text.append(f" · {outlook.reason}")
    return text


def _cost(p: PeriodOutlook) -> str:
    if not p.over:
        return ""
    return f": {number(p.excess_tco2e)} tCO₂e over, {money(p.penalty, p.currency)} a year"


def compliance_table(outlook: ComplianceOutlook) -> Group | Text:
    """Each period to 2050 as a row (tCO₂e and penalty per year of the period), under a title
    saying what the figures rest on, with the notes of periods that have no figures."""
    if not outlook.covered or not outlook.periods:
        law = outlook.law or "LL97/BERDO"
        state = "not covered" if not outlook.covered else outlook.status
        return Text(f"{law}: {state} · {outlook.reason}")
    table = Table(box=None, padding=(0, 1), pad_edge=False, expand=False)
    table.add_column("Period")
    for heading in ("Limit t", "Emitted t", "Excess t", "Penalty/yr"):
        table.add_column(heading, justify="right")
    for p in outlook.periods:
        table.add_row(*period_cells(p))
    title = Text(f"{outlook.law} per year of each period", style="bold")
    parts: list[Any] = [title, table]
    notes: dict[str, list[str]] = {}
    for p in outlook.periods:
        if p.note:
            notes.setdefault(p.note, []).append(p.label)
    if outlook.basis_text:
        basis = outlook.basis_text
        parts.append(Text(f"{basis[:1].upper()}{basis[1:]}.", style="dim"))
    parts += [Text(f"{', '.join(labels)}: {note}", style="dim") for note, labels in notes.items()]
    return Group(*parts)


def period_cells(p: PeriodOutlook) -> tuple[Any, ...]:
    excess = number(p.excess_tco2e)
    style = "bold red" if p.over else ""
    return (
        p.label,
        number(p.limit_tco2e),
        number(p.emissions_tco2e),
        Text(excess, style=style),
        Text(money(p.penalty, p.currency) if p.penalty is not None else DASH, style=style),
    )


def compliance_series(outlook: ComplianceOutlook) -> tuple[list[str], list[list[float]]]:
    """(period labels, [limits, emissions]) for the chart: only periods with both figures."""
    shown = [
        p for p in outlook.periods if p.limit_tco2e is not None and p.emissions_tco2e is not None
    ]
    return [p.label for p in shown], [
        [float(p.limit_tco2e or 0) for p in shown],
        [float(p.emissions_tco2e or 0) for p in shown],
    ]


# --- the panel -----------------------------------------------------------------------------------


class PerformancePanel(VerticalScroll):
    """Compliance table and chart, EUI history chart, and the scores. `load` reads them in a
    worker; `Loaded` then goes to the screen (for its one-line summary)."""

    # Side by side from 100 columns, one under the other below (the screen's breakpoint class).
    SCOPED_CSS = False
    DEFAULT_CSS = """
    PerformancePanel { height: 1fr; padding: 0 1; }
    PerformancePanel #perf-top { height: auto; }
    PerformancePanel #perf-compliance { width: auto; max-width: 60; height: auto; }
    PerformancePanel #perf-scores { width: 1fr; height: auto; padding: 0 0 0 3; }
    .-narrow PerformancePanel #perf-top { layout: vertical; }
    .-narrow PerformancePanel #perf-compliance { width: 1fr; max-width: 100%; }
    .-narrow PerformancePanel #perf-scores { padding: 1 0 0 0; }
    PerformancePanel #perf-charts { height: 12; }
    PerformancePanel #compliance-chart, PerformancePanel #eui-history { width: 1fr; height: 12; }
    """

    class Loaded(Message):
        def __init__(self, outlook: ComplianceOutlook | None, problem: str = "") -> None:
            super().__init__()
            self.outlook, self.problem = outlook, problem

    class _Data(Message):
        def __init__(self, **parts: Any) -> None:
            super().__init__()
            self.parts = parts

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.outlook: ComplianceOutlook | None = None
        self.result: BenchmarkResult | None = None
        self.history: BenchmarkHistory | None = None
        self.country: str | None = None
        self.units: Units = "si"
        self.loaded = False  # once loaded, a load is a reload: the outlook is read afresh

    def compose(self) -> ComposeResult:
        with Horizontal(id="perf-top"):
            yield Static("Reading the compliance outlook…", id="perf-compliance")
            yield Static("Reading the scores…", id="perf-scores")
        with Horizontal(id="perf-charts"):
            yield GroupedBarChart(
                "tCO₂e a year: limit | emitted", ("limit", "emitted"), id="compliance-chart"
            )
            yield LineChart("EUI kWh/m²", id="eui-history")

    @work(exclusive=True, group="performance", exit_on_error=False)
    async def load(
        self,
        client: AsyncServiceClient,
        building: Building,
        today: dt.date,
        outlooks: dict[str, ComplianceOutlook],
    ) -> None:
        """Read the scores, the EUI history and the compliance outlook; each failure is said in
        place of what it would have shown. `outlooks` is the session's cache (shared with the
        portfolio and the reports form): used on the first load, renewed on a reload."""
        parts: dict[str, Any] = {}
        try:
            prop = await client.properties.get(building.property_id)
            parts["country"] = prop.address.country
            parts["result"] = await client.benchmarks.building(building.id)
            parts["history"] = await client.benchmarks.history(building.id, periods=HISTORY_PERIODS)
            cached = outlooks.get(building.id) if not self.loaded else None
            outlook = cached or await fetch_outlook(client, building, today=today, prop=prop)
            parts["outlook"] = outlooks[building.id] = outlook
        except (E.BPSyncError, ValueError, OSError) as exc:
            parts["problem"] = describe(exc)
        self.post_message(self._Data(**parts))

    @on(_Data)
    def _data(self, message: _Data) -> None:
        message.stop()
        parts = message.parts
        self.country = parts.get("country")
        self.result = parts.get("result")
        self.history = parts.get("history")
        self.outlook = parts.get("outlook")
        problem = parts.get("problem", "")
        self.loaded = True
        self.render_all(problem)
        self.post_message(self.Loaded(self.outlook, problem))

    def render_all(self, problem: str = "") -> None:
        """Show what was read, in `self.units`; `problem` where something could not be read."""
        missing = Text(f"Could not be read: {problem}") if problem else Text("Not read yet.")
        outlook = self.outlook
        self.query_one("#perf-compliance", Static).update(
            compliance_table(outlook) if outlook else missing
        )
        chart = self.query_one("#compliance-chart", GroupedBarChart)
        if outlook is not None and outlook.covered:
            chart.show(*compliance_series(outlook), empty=outlook.status)
        else:
            chart.show([], [], empty="no city law applies" if outlook else "not read")
        history = self.query_one("#eui-history", LineChart)
        entries = self.history.history if self.history else []
        labels, values = history_series(entries, "eui_kwh_m2")
        converted = [U.eui(v, self.units) or 0.0 for v in values]
        history.chart_title = f"EUI {U.label('eui', self.units)}"
        history.show(labels, converted, empty="no energy data in any period")
        scores = self.query_one("#perf-scores", Static)
        if self.result is None:
            scores.update(missing)
            return
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold", no_wrap=True)
        table.add_column()
        for label, value in score_rows(self.result, self.units, self.country):
            table.add_row(label, plain(value))
        scores.update(table)
