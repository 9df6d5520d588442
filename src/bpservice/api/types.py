"""Field types for request bodies: strict where the spec says "number" or "date", so wrong types
are refused rather than guessed at."""

from __future__ import annotations

import datetime as dt
import re
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field, StringConstraints

from bpservice.domain import vocab

_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def _date_string(value: Any) -> Any:
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return value
    if not isinstance(value, str) or not _DATE_RE.match(value):
        raise ValueError("must be a date written YYYY-MM-DD")
    return value


def _country(value: str) -> str:
    code = value.strip().upper()
    if code not in vocab.COUNTRY_CODES:
        raise ValueError(f"{value!r} is not an ISO 3166-1 alpha-2 country code")
    return code


def _currency(value: str) -> str:
    code = value.strip().upper()
    if code not in vocab.CURRENCY_CODES:
        raise ValueError(f"{value!r} is not an ISO 4217 currency code")
    return code


_EMAIL_RE = re.compile(r"^[^@\s\x00]{1,64}@[^@\s\x00]+\.[^@\s\x00]{2,}$")


def _email(value: str) -> str:
    if not _EMAIL_RE.match(value):
        raise ValueError(f"{value!r} is not an email address")
    return value.lower()


def _one_of(allowed: tuple[str, ...], what: str) -> Any:
    """A string from a closed vocabulary; the OpenAPI schema lists the values as an enum."""

    def check(value: str) -> str:
        if value not in allowed:
            raise ValueError(
                f"{value!r} is not a valid {what}; expected one of: {', '.join(allowed)}"
            )
        return value

    return Annotated[str, AfterValidator(check), Field(json_schema_extra={"enum": list(allowed)})]


def case_insensitive_pattern(codes: frozenset[str] | set[str]) -> str:
    """An anchored regular expression matching exactly `codes` (all of one length) in any letter
    case: the OpenAPI document then states what the API accepts (`gb` is upper-cased, `UK` is
    refused), which an enum of upper-case codes would not. Written as a trie to stay short."""

    def either(c: str) -> str:
        return f"{c.upper()}{c.lower()}" if c.isalpha() else re.escape(c)

    def trie(words: list[str]) -> str:
        if all(len(w) == 1 for w in words):
            return "[" + "".join(either(w) for w in words) + "]"
        by_first: dict[str, list[str]] = {}
        for word in words:
            by_first.setdefault(word[0], []).append(word[1:])
        branches = ["[" + either(c) + "]" + trie(rest) for c, rest in by_first.items()]
        return branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"

    return "^" + trie(sorted(codes)) + "$"


def ids_pattern(most: int) -> str:
    """A comma-separated list of 1 to `most` ids, as the list filters take it (the first
    non-blank; blank entries are ignored)."""
    return f"^\\s*[^,\\s][^,]*(,[^,]*){{0,{most - 1}}}$"


def _no_nul(value: str) -> str:
    # PostgreSQL text cannot hold NUL, and no name or reference legitimately contains one.
    if "\x00" in value:
        raise ValueError("must not contain NUL characters")
    return value


Email = Annotated[
    str,
    StringConstraints(strip_whitespace=True, max_length=254),
    AfterValidator(_email),
    Field(json_schema_extra={"pattern": _EMAIL_RE.pattern}, examples=["ana@example.com"]),
]
ISODate = Annotated[
    dt.date,
    BeforeValidator(_date_string),
    Field(json_schema_extra={"pattern": r"^\d{4}-\d{2}-\d{2}$"}),
]

# Metered utility data starts in the 1880s; the bound keeps year-1 dates (whose one-year anomaly
# window and reporting periods fall before the calendar) out of every calculation.
EARLIEST_READING_DATE = dt.date(1900, 1, 1)


def _reading_date(value: dt.date) -> dt.date:
    if value < EARLIEST_READING_DATE:
        raise ValueError(f"must be on or after {EARLIEST_READING_DATE.isoformat()}")
    return value


ReadingDate = Annotated[
    ISODate,
    AfterValidator(_reading_date),
    Field(
        description="YYYY-MM-DD, on or after 1900-01-01",
        json_schema_extra={"pattern": r"^(19|[2-9]\d)\d{2}-\d{2}-\d{2}$"},
    ),
]
Name = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=200),
    AfterValidator(_no_nul),
    # Stripped first, so a name of spaces or tabs is empty: the document says "not only blanks".
    Field(json_schema_extra={"pattern": r"\S"}),
]
ShortText = Annotated[
    str, StringConstraints(strip_whitespace=True, max_length=200), AfterValidator(_no_nul)
]
Country = Annotated[
    str,
    StringConstraints(min_length=2, max_length=2),
    AfterValidator(_country),
    Field(
        description="An assigned ISO 3166-1 alpha-2 country code, in any case (stored upper-case)",
        examples=["GB"],
        json_schema_extra={"pattern": case_insensitive_pattern(vocab.COUNTRY_CODES)},
    ),
]
Currency = Annotated[
    str,
    StringConstraints(min_length=3, max_length=3),
    AfterValidator(_currency),
    Field(
        description="An ISO 4217 currency code, in any case (stored upper-case)",
        examples=["GBP"],
        json_schema_extra={"pattern": case_insensitive_pattern(vocab.CURRENCY_CODES)},
    ),
]
UseType = _one_of(vocab.USE_TYPES, "use type")
PropertyType = _one_of(vocab.PROPERTY_TYPES, "property type")
MeterType = _one_of(vocab.METER_TYPES, "meter type")
MeterSource = _one_of(vocab.METER_SOURCES, "meter source")
Role = _one_of(vocab.ROLES, "role")

# Bounds keep every stored number finite and inside what SQLite and PostgreSQL hold.
Area = Annotated[float, Field(strict=True, allow_inf_nan=False, gt=0, le=1e8)]
OptionalArea = Annotated[float, Field(strict=True, allow_inf_nan=False, ge=0, le=1e8)]
Quantity = Annotated[float, Field(strict=True, allow_inf_nan=False, ge=-1e15, le=1e15)]
NonNegative = Annotated[float, Field(strict=True, allow_inf_nan=False, ge=0, le=1e12)]
Percent = Annotated[float, Field(strict=True, allow_inf_nan=False, ge=0, le=100)]
HoursPerWeek = Annotated[float, Field(strict=True, allow_inf_nan=False, ge=0, le=168)]
Latitude = Annotated[float, Field(strict=True, allow_inf_nan=False, ge=-90, le=90)]
Longitude = Annotated[float, Field(strict=True, allow_inf_nan=False, ge=-180, le=180)]


def _whole_number(value: Any) -> Any:
    """JSON has one number type: `4.0` is the integer 4, as JSON Schema (and so the OpenAPI
    document's `integer`) counts it. Strings, booleans and fractions are still refused."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# The validator wraps the constrained int, so it runs first (and the bounds stay in the schema).
YearBuilt = Annotated[int, Field(strict=True, ge=1000, le=2100), BeforeValidator(_whole_number)]
Floors = Annotated[int, Field(strict=True, ge=1, le=500), BeforeValidator(_whole_number)]
