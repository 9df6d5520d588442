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


_EMAIL_RE = re.compile(r"^[^@\s]{1,64}@[^@\s]+\.[^@\s]{2,}$")


def _email(value: str) -> str:
    if not _EMAIL_RE.match(value):
        raise ValueError(f"{value!r} is not an email address")
    return value.lower()


def _one_of(allowed: tuple[str, ...], what: str) -> AfterValidator:
    def check(value: str) -> str:
        if value not in allowed:
            raise ValueError(
                f"{value!r} is not a valid {what}; expected one of: {', '.join(allowed)}"
            )
        return value

    return AfterValidator(check)


Email = Annotated[
    str, StringConstraints(strip_whitespace=True, max_length=254), AfterValidator(_email)
]
ISODate = Annotated[dt.date, BeforeValidator(_date_string)]
Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]
ShortText = Annotated[str, StringConstraints(strip_whitespace=True, max_length=200)]
Country = Annotated[
    str,
    StringConstraints(min_length=2, max_length=2),
    AfterValidator(_country),
    Field(description="ISO 3166-1 alpha-2 country code", examples=["GB"]),
]
Currency = Annotated[str, StringConstraints(min_length=3, max_length=3), AfterValidator(_currency)]
UseType = Annotated[str, _one_of(vocab.USE_TYPES, "use type")]
PropertyType = Annotated[str, _one_of(vocab.PROPERTY_TYPES, "property type")]
MeterType = Annotated[str, _one_of(vocab.METER_TYPES, "meter type")]
MeterSource = Annotated[str, _one_of(vocab.METER_SOURCES, "meter source")]
Role = Annotated[str, _one_of(vocab.ROLES, "role")]

# Bounds keep every stored number finite and inside what SQLite and PostgreSQL hold.
Area = Annotated[float, Field(strict=True, allow_inf_nan=False, gt=0, le=1e8)]
OptionalArea = Annotated[float, Field(strict=True, allow_inf_nan=False, ge=0, le=1e8)]
Quantity = Annotated[float, Field(strict=True, allow_inf_nan=False, ge=-1e15, le=1e15)]
NonNegative = Annotated[float, Field(strict=True, allow_inf_nan=False, ge=0, le=1e12)]
Percent = Annotated[float, Field(strict=True, allow_inf_nan=False, ge=0, le=100)]
HoursPerWeek = Annotated[float, Field(strict=True, allow_inf_nan=False, ge=0, le=168)]
Latitude = Annotated[float, Field(strict=True, allow_inf_nan=False, ge=-90, le=90)]
Longitude = Annotated[float, Field(strict=True, allow_inf_nan=False, ge=-180, le=180)]
YearBuilt = Annotated[int, Field(strict=True, ge=1000, le=2100)]
Floors = Annotated[int, Field(strict=True, ge=1, le=500)]
