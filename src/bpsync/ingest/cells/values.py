"""Cell values as real files hold them: placeholders, numbers stored as text with currency symbols
and thousands separators, and header cells with line breaks, hints and units in brackets."""

from __future__ import annotations

import datetime as dt
import math
import re
from dataclasses import dataclass

from bpsync.ingest.cells.units import lookup_unit
from bpsync.ingest.problems import column_letter

# Cells that mean "no value" in utility exports and Portfolio Manager sheets (compared casefolded).
PLACEHOLDERS = frozenset(
    {
        "",
        "-",
        "--",
        "---",
        "—",
        "\u2013",  # en dash
        "n/a",
        "na",
        "n.a.",
        "#n/a",
        "not available",
        "not applicable",
        "none",
        "null",
        "nil",
        "nan",
        "(blank)",
        "?",
    }
)

_MINUS = "\u2212"  # the typographic minus sign some exports use
_SPACES = re.compile(r"[\s\u00a0\u2007\u202f]+")
_CURRENCY_SIGNS = "$£€¥₹₩₽₺₴₦₱"
_CURRENCY_CODES = re.compile(r"^(?:[A-Z]{3})\s*|\s*(?:[A-Z]{3})$")
# Thousands grouping must be regular (1,234,567) so "1,5" is never read as 15.
_GROUPED = {
    ".": re.compile(r"^\d{1,3}(?:[,'\u2019 ]\d{3})+(?:\.\d*)?$"),
    ",": re.compile(r"^\d{1,3}(?:[.'\u2019 ]\d{3})+(?:,\d*)?$"),
}
_PLAIN = {
    ".": re.compile(r"^(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$"),
    ",": re.compile(r"^(?:\d+,?\d*|,\d+)(?:[eE][+-]?\d+)?$"),
}

# The service refuses consumption and cost outside ±1e15 (docs/decisions.md D7).
MAX_MAGNITUDE = 1e15


def cell_text(value: object) -> str:
    """A cell as the text a user would recognise (for messages and reject reports)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    if isinstance(value, dt.datetime):
        if value.time() == dt.time():
            return value.date().isoformat()
        return value.isoformat(sep=" ")
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value)


def is_blank(value: object) -> bool:
    """True for empty cells and placeholders such as "N/A", "-" or "Not Available"."""
    if value is None:
        return True
    if isinstance(value, str):
        stripped = value.strip()
        return not stripped or stripped.casefold() in PLACEHOLDERS
    return False


class NumberError(ValueError):
    """Why a cell is not a number (the message is shown to the user)."""


def parse_number(value: object, decimal: str = ".") -> float | None:
    """A number from a cell, or None when the cell is blank or a placeholder.

    Accepts numbers stored as text: currency symbols or codes ($1,234.50, 1 234,50 €, USD 12),
    regular thousands separators, spaces (also non-breaking), a leading sign, accounting
    parentheses for negatives, and a trailing percent-free unit-free value. Raises NumberError
    for anything else, for NaN/infinity, and beyond ±1e15."""
    if type(value) is str and decimal == ".":
        try:  # fast path: most cells are plain numbers
            number = float(value)
        except ValueError:
            pass
        else:
            if abs(number) <= MAX_MAGNITUDE and "_" not in value:  # NaN and inf fail the test
                return number
    if value is None:
        return None
    if isinstance(value, bool):
        raise NumberError("a TRUE/FALSE cell is not a number")
    if isinstance(value, int | float):
        number = float(value)
        return _checked(number)
    if isinstance(value, dt.date | dt.time | dt.timedelta):
        raise NumberError("a date is not a number")
    text = str(value).strip()
    if not text or text.casefold() in PLACEHOLDERS:
        return None
    negative = False
    if text.startswith("(") and text.endswith(")"):
        negative, text = True, text[1:-1].strip()
    text = _SPACES.sub(" ", text).strip(_CURRENCY_SIGNS + " ")
    text = _CURRENCY_CODES.sub("", text).strip(_CURRENCY_SIGNS + " ")
    if text[:1] in ("+", "-", _MINUS):
        negative = negative != (text[0] in ("-", _MINUS))
        text = text[1:].strip(_CURRENCY_SIGNS + " ")
    if text.endswith("-") and not negative:  # some ledgers write 12.50-
        negative, text = True, text[:-1].strip()
    if decimal not in _PLAIN:
        raise NumberError(f"unknown decimal separator {decimal!r}")
    if _PLAIN[decimal].match(text):
        number = float(text.replace(",", ".")) if decimal == "," else float(text)
    elif _GROUPED[decimal].match(text):
        integer, _, fraction = text.partition(decimal)
        digits = re.sub(r"[^\d]", "", integer)
        number = float(f"{digits}.{fraction or '0'}")
    else:
        raise NumberError("not a number")
    return _checked(-number if negative else number)


def _checked(number: float) -> float:
    if math.isnan(number) or math.isinf(number):
        raise NumberError("not a finite number")
    if abs(number) > MAX_MAGNITUDE:
        raise NumberError("larger than the service accepts (±1e15)")
    return number


_TRUE = frozenset({"y", "yes", "true", "1", "e", "est", "estimated", "estimate", "x"})
_FALSE = frozenset({"n", "no", "false", "0", "a", "act", "actual", "r", "read", ""})


def parse_flag(value: object, true_values: frozenset[str] = _TRUE) -> bool | None:
    """A yes/no cell (the "Estimation" column): True, False, or None when unrecognised."""
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return bool(value)
    text = str(value).strip().casefold()
    if text in true_values:
        return True
    if text in _FALSE or text in PLACEHOLDERS:
        return False
    return None


# ---- headers -------------------------------------------------------------------------------------

_HINT = re.compile(
    r"\s*[\(\[](?:required|optional|mandatory|req\.?|opt\.?|if applicable|see notes?|pre-?filled|auto-?filled|read[- ]only)[\)\]]\s*"
    r"|\s*\*+\s*$",
    re.IGNORECASE,
)
_CURRENCY_IN_HEADER = {
    "$": "USD",
    "usd": "USD",
    "us$": "USD",
    "£": "GBP",
    "gbp": "GBP",
    "€": "EUR",
    "eur": "EUR",
    "c$": "CAD",
    "cad": "CAD",
    "a$": "AUD",
    "aud": "AUD",
    "chf": "CHF",
    "¥": "JPY",
}


# Floor-area units in headers ("Gross Floor Area (ft²)"): not meter units, but captured the same way.
_AREA_UNITS = {
    "m²": "m2",
    "m2": "m2",
    "sq m": "m2",
    "sqm": "m2",
    "square metres": "m2",
    "square meters": "m2",
    "ft²": "ft2",
    "ft2": "ft2",
    "sq ft": "ft2",
    "sqft": "ft2",
    "sf": "ft2",
    "square feet": "ft2",
}


@dataclass(frozen=True, slots=True)
class Header:
    """One header cell: `text` as cleaned for display, `key` for matching (casefolded, without
    hints or a trailing unit/currency bracket), and what the bracket said."""

    text: str
    key: str
    unit: str | None = None
    currency: str | None = None
    index: int = 0
    name: str = ""  # `text` without the unit/currency bracket, original case

    @property
    def label(self) -> str:
        return self.name or self.text


def _trailing_bracket(text: str) -> tuple[int, str] | None:
    """(start, content) of a bracket group ending the text, nested brackets allowed:
    "Usage (MBtu (million Btu))" → content "MBtu (million Btu)"."""
    if not text.endswith((")", "]")):
        return None
    depth = 0
    for i in range(len(text) - 1, -1, -1):
        ch = text[i]
        if ch in ")]":
            depth += 1
        elif ch in "([":
            depth -= 1
            if depth == 0:
                return i, text[i + 1 : -1].strip()
    return None


def clean_header_text(value: object) -> str:
    """Line breaks, tabs, double and trailing spaces collapsed; "(Required)"-style hints dropped."""
    text = _SPACES.sub(" ", cell_text(value)).strip()
    previous = None
    while previous != text:
        previous, text = text, _HINT.sub(" ", text).strip()
    return text


def header_key(text: str) -> str:
    """The matching key of a header or of a column name in a template."""
    return _SPACES.sub(" ", text.replace("_", " ")).strip().casefold()


def parse_header(value: object, index: int = 0) -> Header:
    """Split a header cell into its name and the unit or currency in a trailing bracket:
    "Usage\\n(kWh)" → key "usage", unit "kWh"; "Cost ($)" → key "cost", currency "USD"."""
    text = clean_header_text(value)
    key = header_key(text)
    unit = currency = None
    name = text
    match = _trailing_bracket(text)
    if match:
        start, inner = match
        known_unit = lookup_unit(inner)
        code = _CURRENCY_IN_HEADER.get(inner.casefold())
        area = _AREA_UNITS.get(" ".join(inner.casefold().replace(".", " ").split()))
        if area is not None:
            unit = area
        elif known_unit is not None:
            unit = known_unit.name
        elif code is not None:
            currency = code
        if unit or currency:
            name = text[:start].strip()
            key = header_key(name)
    return Header(text=text, key=key, unit=unit, currency=currency, index=index, name=name)


def dedupe_headers(headers: list[Header]) -> list[Header]:
    """Give repeated header names a suffix (" (2)", " (3)") so each column can be named.
    Empty header cells become "Column B" after their letter."""
    seen: dict[str, int] = {}
    out = []
    for h in headers:
        text, key = h.text, h.key
        if not key:
            text = f"Column {column_letter(h.index)}"
            key = header_key(text)
        # Only the same whole text repeats: "Usage (CCF)" and "Usage (Therms)" share the key
        # "usage" but are two columns that templates name by their full text (issue 11).
        full = header_key(text)
        count = seen.get(full, 0) + 1
        seen[full] = count
        if count > 1:
            text, key = f"{text} ({count})", f"{key} ({count})"
        name = h.name if count == 1 and h.key else text
        out.append(Header(text, key, h.unit, h.currency, h.index, name))
    return out
