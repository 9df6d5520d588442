"""Benchmarks: one building's scores and its EUI and score history as charts over a chosen number
of periods; and the portfolio aggregate with filters and the A-F grade distribution."""

from __future__ import annotations

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Input, Label, Select, Static

from bpsync.client.models import BenchmarkResult
from bpsync.tui.format import (
    GRADES,
    PROPERTY_TYPES,
    grade_bars,
    history_series,
    number,
    score_lines,
)
from bpsync.tui.messages import BenchmarksLoaded, HistoryLoaded, PortfolioBenchmarkLoaded
from bpsync.tui.screens.base import AppScreen
from bpsync.tui.widgets.charts import BarChart, LineChart
from bpsync.tui.widgets.country import CountryInput
from bpsync.tui.widgets.footer import AppFooter
from bpsync.tui.widgets.performance import missing_svc, with_reasons
from bpsync.tui.widgets.plain import fields_table
from bpsync.tui.widgets.topbar import TopBar

PERIOD_CHOICES = (4, 8, 12, 20)


class BenchmarksScreen(AppScreen):
    HELP_TITLE = "Building benchmarks"
    HELP = (
        "The building's current scores against each standard, and the history of its EUI and "
        "scores per reporting period (oldest on the left). Choose how many periods to chart."
    )
    BINDINGS = [
        Binding("p", "periods", "Periods", id="benchmarks.periods"),
        Binding("r", "reload", "Reload", id="benchmarks.reload"),
    ]

    def __init__(self, building_id: str, name: str = "") -> None:
        super().__init__()
        self.building_id = building_id
        self.title_text = name or building_id
        self.result: BenchmarkResult | None = None
        self.svc_series: tuple[list[str], list[float]] = ([], [])

    def compose(self) -> ComposeResult:
        yield TopBar(f"Benchmarks · {self.title_text}")
        with Horizontal(id="bench"):
            yield Static("Loading…", id="scores")
            with Vertical(id="charts"):
                with Horizontal(classes="toolbar"):
                    yield Label("Periods ")
                    yield Select(
                        [(str(n), n) for n in PERIOD_CHOICES],
                        value=4,
                        allow_blank=False,
                        id="periods",
                        compact=True,
                    )
                yield LineChart("EUI kWh/m²", id="eui-chart")
                yield LineChart("svc score", top=100, id="score-chart")
        yield Static("", id="note")
        yield AppFooter()

    def on_mount(self) -> None:
        self.load()

    @property
    def periods(self) -> int:
        value = self.query_one("#periods", Select).value
        return value if isinstance(value, int) else 4

    def action_reload(self) -> None:
        self.load()

    def action_periods(self) -> None:
        select = self.query_one("#periods", Select)
        i = PERIOD_CHOICES.index(self.periods) if self.periods in PERIOD_CHOICES else 0
        select.value = PERIOD_CHOICES[(i + 1) % len(PERIOD_CHOICES)]

    @on(Select.Changed, "#periods")
    def _periods_changed(self) -> None:
        self.load_history(self.periods)

    def load(self) -> None:
        self.load_scores()
        self.load_history(self.periods)

    @work(exclusive=True, group="scores", exit_on_error=False)
    async def load_scores(self) -> None:
        result = await self.guarded("Benchmarks", self.client.benchmarks.building(self.building_id))
        if result is not None:
            self.post_message(BenchmarksLoaded(result))

    @work(exclusive=True, group="history", exit_on_error=False)
    async def load_history(self, periods: int) -> None:
        history = await self.guarded(
            "History", self.client.benchmarks.history(self.building_id, periods=periods)
        )
        if history is not None:
            self.post_message(HistoryLoaded(history, periods))

    def on_benchmarks_loaded(self, message: BenchmarksLoaded) -> None:
        self.result = message.result
        lines = with_reasons(score_lines(message.result), message.result)
        self.query_one("#scores", Static).update(fields_table(lines, 1))
        self._svc_chart()

    def on_history_loaded(self, message: HistoryLoaded) -> None:
        entries = message.history.history
        self.query_one("#eui-chart", LineChart).show(*history_series(entries, "eui_kwh_m2"))
        self.svc_series = history_series(entries, "svc_score")
        self._svc_chart()

    def _svc_chart(self) -> None:
        """The svc history, or why it has no points (said once the scores are in)."""
        why = missing_svc(self.result) if self.result is not None else ""
        self.query_one("#score-chart", LineChart).show(*self.svc_series, empty=why)


class PortfolioBenchmarksScreen(AppScreen):
    HELP_TITLE = "Portfolio benchmarks"
    HELP = (
        "Area-weighted figures over the active buildings matching the filters, and how many "
        "buildings have each data-quality grade. Minimum grade keeps buildings graded at least "
        "that well."
    )
    BINDINGS = [Binding("r", "reload", "Reload", id="portfolio_benchmarks.reload")]

    def compose(self) -> ComposeResult:
        yield TopBar("Portfolio benchmarks")
        with Horizontal(classes="toolbar"):
            yield Select(
                [(t, t) for t in PROPERTY_TYPES], prompt="any use type", id="bm-type", compact=True
            )
            yield CountryInput(id="bm-country")
            yield Select(
                [(f"grade {g} or better", g) for g in GRADES],
                prompt="any grade",
                id="bm-grade",
                compact=True,
            )
        with Horizontal(id="aggregate"):
            yield Static("Loading…", id="figures")
            yield BarChart("Buildings by data-quality grade", id="grades-chart")
        yield Static("", id="note")
        yield AppFooter()

    def on_mount(self) -> None:
        self.load(self.filters())

    def filters(self) -> dict[str, str]:
        type_ = self.query_one("#bm-type", Select).value
        grade = self.query_one("#bm-grade", Select).value
        found = {
            "type": type_ if isinstance(type_, str) else None,
            "country": self.query_one("#bm-country", CountryInput).code,
            "min_grade": grade if isinstance(grade, str) else None,
        }
        return {k: v for k, v in found.items() if v}

    @on(Select.Changed)
    @on(Input.Submitted, "#bm-country")
    def _changed(self) -> None:
        problem = self.query_one("#bm-country", CountryInput).problem
        if problem:
            self.inline(problem)
            return
        self.load(self.filters())

    def action_reload(self) -> None:
        self.load(self.filters())

    @work(exclusive=True, group="portfolio-benchmark", exit_on_error=False)
    async def load(self, filters: dict[str, str]) -> None:
        result = await self.guarded("Portfolio", self.client.benchmarks.portfolio(**filters))
        if result is not None:
            self.post_message(PortfolioBenchmarkLoaded(result, filters))

    def on_portfolio_benchmark_loaded(self, message: PortfolioBenchmarkLoaded) -> None:
        r = message.result
        rows = [
            ("Buildings", str(r.building_count)),
            ("Total GFA", f"{number(r.total_gfa_m2)} m²"),
            ("Weighted EUI", f"{number(r.weighted_eui_kwh_m2, 1)} kWh/m²"),
            ("Weighted carbon", f"{number(r.weighted_carbon_intensity_kgco2e_m2, 1)} kgCO₂e/m²"),
            ("Weighted svc score", number(r.weighted_svc_score, 1)),
        ]
        grades, counts = grade_bars(r.grade_distribution)
        rows += [(f"Grade {g}", str(n)) for g, n in zip(grades, counts, strict=True)]
        self.query_one("#figures", Static).update(fields_table(rows, 1))
        self.query_one("#grades-chart", BarChart).show(grades, counts)
        applied = ", ".join(f"{k}={v}" for k, v in message.filters.items()) or "none"
        self.inline(f"Filters: {applied}", error=False)
