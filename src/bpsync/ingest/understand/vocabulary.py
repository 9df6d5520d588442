"""The names each field of a template goes by in real exports, and how a header is judged a
meter, an account or a cumulative register: shared by the suggestion and the inference."""

from __future__ import annotations

import re

from bpsync.ingest.cells.values import Header, header_key

# Names people give each field (plus every shipped template's own names).
SYNONYMS: dict[str, tuple[str, ...]] = {
    "meter": (
        "meter",
        "meter id",
        "meter number",
        "meter no",
        "meter ref",
        "meter reference",
        "portfolio manager meter id",
        "account",
        "account number",
        "mpan",
        "mprn",
        "supply number",
    ),
    "building": ("building", "building name", "site", "site name", "property", "property name"),
    "meter_name": ("meter name", "meter description", "description"),
    "start_date": (
        "start date",
        "start",
        "from",
        "period start",
        "service start",
        "from date",
        "bill start",
    ),
    "end_date": (
        "end date",
        "end",
        "to",
        "period end",
        "service end",
        "to date",
        "bill end",
        "through",
    ),
    "bill_date": ("read date", "reading date", "bill date", "meter read date", "statement date"),
    "days": ("days", "number of days", "no of days", "billing days", "days in period"),
    "month": ("month", "billing month", "period", "usage month"),
    "consumption": (
        "consumption",
        "usage",
        "quantity",
        "usage/quantity",
        "kwh",
        "use",
        "total usage",
        "volume",
    ),
    "unit": ("unit", "units", "usage units", "uom", "unit of measure"),
    "cost": (
        "cost",
        "amount",
        "total cost",
        "charges",
        "total charges",
        "amount due",
        "bill amount",
    ),
    "currency": ("currency", "currency code"),
    "demand": ("demand", "demand kw", "peak demand", "max demand", "kw"),
    "estimated": ("estimated", "estimation", "estimate", "read type", "actual/estimated"),
}


# Meter columns, best first: the meter itself beats the account it is billed to.
METER_RANK = (
    ("meter number", "meter id", "meter no", "meter", "meter reference", "meter ref"),
    ("portfolio manager meter id", "mpan", "mprn", "supply number", "ean", "ean code", "esiid"),
    ("account number", "account", "account no", "service account"),
)


def meter_rank(h: Header) -> int:
    """0 for a meter's own number, 1 for a supply point id, 2 for an account, 3 for neither."""
    for rank, names in enumerate(METER_RANK):
        if h.key in names or header_key(h.text) in names:
            return rank
    return len(METER_RANK)


_REGISTER_WORDS = frozenset({"read", "reading", "reads", "readings", "register", "index", "dial"})


def is_register_column(h: Header) -> bool:
    """ "Meter Read", "Current Reading", "Previous Index": a cumulative register value, not usage
    and not the meter's id (a "Read Date" is a date and is judged elsewhere)."""
    words = set(re.split(r"[^a-z0-9]+", h.key))
    return bool(words & _REGISTER_WORDS) and not words & {"date", "day", "days"}
