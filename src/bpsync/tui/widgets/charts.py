"""Charts drawn with plotext inside Textual (textual-plotext)."""

from __future__ import annotations

from collections.abc import Sequence

from textual_plotext import PlotextPlot


class LineChart(PlotextPlot):
    """A labelled line over periods; shows a note instead of axes when there is nothing to draw."""

    DEFAULT_CSS = "LineChart { height: 1fr; min-height: 6; }"

    def __init__(self, title: str, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.chart_title = title
        self.labels: list[str] = []
        self.values: list[float] = []

    def on_mount(self) -> None:
        super().on_mount()
        self._draw()

    def show(self, labels: Sequence[str], values: Sequence[float]) -> None:
        self.labels, self.values = list(labels), list(values)
        self._draw()

    def _draw(self) -> None:
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        plt.title(self.chart_title if self.values else f"{self.chart_title}: no data yet")
        if self.values:
            xs = list(range(1, len(self.values) + 1))
            plt.plot(xs, self.values, marker="braille")
            plt.xticks(xs, self.labels)
        self.refresh()


class BarChart(PlotextPlot):
    DEFAULT_CSS = "BarChart { height: 1fr; min-height: 6; }"

    def __init__(self, title: str, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.chart_title = title
        self.labels: list[str] = []
        self.values: list[int] = []

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
        self.refresh()
