"""Charts drawn with plotext inside Textual (textual-plotext), drawn so they do not mislead
(issue 28): value axes start at zero, a change is stated in words in the title (a 1 % change
on a 269.8-273.1 axis looked like a cliff), and counts get whole-number ticks only."""

from __future__ import annotations

import math
from collections.abc import Sequence

from textual_plotext import PlotextPlot

NICE_STEPS = (1.0, 2.0, 2.5, 5.0, 10.0)


def nice_step(span: float, ticks: int = 4) -> float:
    """A round tick step (1, 2, 2.5 or 5 times a power of ten) giving about `ticks` steps over
    `span`."""
    if span <= 0:
        return 1.0
    raw = span / ticks
    power = 10 ** math.floor(math.log10(raw))
    return next(s * power for s in NICE_STEPS if s * power >= raw)


def zero_axis(values: Sequence[float], *, top: float | None = None) -> list[float]:
    """The y ticks of a value axis that starts at zero (or below, for negative values) and ends
    on a round number at or above the largest value; `top` fixes the end (a 0-100 score)."""
    high = max([0.0, *values]) if top is None else top
    low = min([0.0, *values])
    step = nice_step(high - low) if high > low else 1.0
    start = math.floor(low / step) * step
    end = high if top is not None else math.ceil(high / step) * step
    count = max(1, round((end - start) / step))  # all zeros: still an axis 0-1
    return [round(start + i * step, 10) for i in range(count + 1)]


def count_axis(counts: Sequence[int], rows: int = 8) -> list[int]:
    """Whole-number ticks from 0 for a chart of counts (never 0.5 buildings): a step of 1 while
    it fits in `rows` lines, else a round integer step."""
    high = max([0, *counts])
    if high == 0:
        return [0, 1]
    step = 1 if high <= rows else math.ceil(nice_step(high, min(rows, 5)))
    end = math.ceil(high / step) * step
    return list(range(0, end + 1, step))


def tick_label(value: float) -> str:
    """A tick as people write it: 250 not 250.0, 2.5 kept, thousands separated."""
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.1f}"


def change_text(values: Sequence[float]) -> str:
    """The first-to-last change in words, so the title says what the line shows:
    "269.8 → 273.1 (+1.2 %)"; "" with fewer than two values."""
    if len(values) < 2:
        return ""
    first, last = values[0], values[-1]
    words = f"{first:,.1f} → {last:,.1f}"
    if first:
        words += f" ({(last - first) / abs(first) * 100:+.1f} %)"
    return words


def _axis(plt: object, ticks: Sequence[float]) -> None:
    plt.ylim(ticks[0], ticks[-1])  # type: ignore[attr-defined]
    plt.yticks(list(ticks), [tick_label(t) for t in ticks])  # type: ignore[attr-defined]


class LineChart(PlotextPlot):
    """A labelled line over periods with its points marked and a value axis from zero (or fixed
    at `top`, e.g. 100 for a score); the title states the change. Shows a note instead of axes
    when there is nothing to draw."""

    DEFAULT_CSS = "LineChart { height: 1fr; min-height: 6; }"

    def __init__(self, title: str, *, top: float | None = None, id: str | None = None) -> None:
        super().__init__(id=id)
        self.chart_title = title
        self.top = top
        self.labels: list[str] = []
        self.values: list[float] = []
        self.empty_note = "no data yet"
        self.ticks: list[float] = []

    def on_mount(self) -> None:
        super().on_mount()
        self._draw()

    def show(self, labels: Sequence[str], values: Sequence[float], empty: str = "") -> None:
        """Draw `values` over `labels`; `empty` says why there is nothing, when there is not."""
        self.labels, self.values = list(labels), list(values)
        self.empty_note = empty or "no data yet"
        self._draw()

    def title_text(self) -> str:
        if not self.values:
            return f"{self.chart_title}: {self.empty_note}"
        change = change_text(self.values)
        return f"{self.chart_title} · {change}" if change else self.chart_title

    def _draw(self) -> None:
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        plt.title(self.title_text())
        if self.values:
            xs = list(range(1, len(self.values) + 1))
            # Line and points on the same character grid (a braille line sat a row off its
            # points); a 2-point line still shows its 2 points.
            plt.plot(xs, self.values, marker="dot")
            plt.scatter(xs, self.values, marker="●")
            plt.xticks(xs, self.labels)
            if len(xs) == 1:
                plt.xlim(0.5, 1.5)
            self.ticks = zero_axis(self.values, top=self.top)
            _axis(plt, self.ticks)
        self.refresh()


class BarChart(PlotextPlot):
    """Counts per label: bars from zero with whole-number ticks."""

    DEFAULT_CSS = "BarChart { height: 1fr; min-height: 6; }"

    def __init__(self, title: str, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.chart_title = title
        self.labels: list[str] = []
        self.values: list[int] = []
        self.ticks: list[int] = []

    def on_mount(self) -> None:
        super().on_mount()
        self._draw()

    def show(self, labels: Sequence[str], values: Sequence[int]) -> None:
        self.labels, self.values = list(labels), list(values)
        self._draw()

    def _draw(self) -> None:
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        plt.title(self.chart_title)
        if self.labels:
            plt.bar(self.labels, self.values)
            self.ticks = count_axis(self.values)
            _axis(plt, self.ticks)
        self.refresh()


class GroupedBarChart(PlotextPlot):
    """Two or more series side by side per label (a period's limit beside its emissions), on a
    value axis from zero."""

    DEFAULT_CSS = "GroupedBarChart { height: 1fr; min-height: 8; }"

    def __init__(self, title: str, series: Sequence[str], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.chart_title = title
        self.series = list(series)
        self.labels: list[str] = []
        self.values: list[list[float]] = []
        self.empty_note = "no data yet"
        self.ticks: list[float] = []

    def on_mount(self) -> None:
        super().on_mount()
        self._draw()

    def show(
        self, labels: Sequence[str], values: Sequence[Sequence[float]], empty: str = ""
    ) -> None:
        """`values` holds one list per series, each as long as `labels`."""
        self.labels, self.values = list(labels), [list(v) for v in values]
        self.empty_note = empty or "no data yet"
        self._draw()

    def title_text(self) -> str:
        drawn = bool(self.labels) and any(self.values)
        return self.chart_title if drawn else f"{self.chart_title}: {self.empty_note}"

    def _draw(self) -> None:
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        plt.title(self.title_text())
        if self.labels and any(self.values):
            plt.multiple_bar(self.labels, self.values, labels=self.series)
            self.ticks = zero_axis([v for s in self.values for v in s])
            _axis(plt, self.ticks)
        self.refresh()
