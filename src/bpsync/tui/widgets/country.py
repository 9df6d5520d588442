"""A country filter field: two letters (ISO 3166-1 alpha-2), checked here before any request."""

from __future__ import annotations

from typing import Any

from textual.widgets import Input

PROBLEM = "Country: a two-letter code (ISO 3166), such as GB or US."


class CountryInput(Input):
    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("placeholder", "country")
        kwargs.setdefault("compact", True)
        super().__init__(max_length=2, restrict=r"[A-Za-z]{0,2}", **kwargs)

    @property
    def code(self) -> str | None:
        """The code to send, or None (empty or half typed: no filter)."""
        value = self.value.strip().upper()
        return value if len(value) == 2 else None

    @property
    def problem(self) -> str | None:
        """What is wrong with the field as typed, for the note line."""
        return PROBLEM if len(self.value.strip()) == 1 else None
