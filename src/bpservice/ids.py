"""Identifiers: a type prefix and an opaque random suffix (spec, Conventions)."""

from __future__ import annotations

import re
import secrets

_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"
SUFFIX_LENGTH = 24

PREFIXES = {
    "organisation": "org_",
    "property": "prp_",
    "building": "bld_",
    "meter": "mtr_",
    "reading": "rdg_",
    "user": "usr_",
    "report": "rpt_",
    "event": "evt_",
    "api_key": "key_",
    "webhook": "whk_",
    "delivery": "dlv_",
    "report_template": "rtp_",
    "oauth_client": "cli_",
}

_ID_RE = re.compile(rf"^[a-z]{{3}}_[0-9a-z]{{{SUFFIX_LENGTH}}}$")


_SPACE = len(_ALPHABET) ** SUFFIX_LENGTH  # about 2**124


def new_id(kind: str) -> str:
    # One draw from the OS's CSPRNG written in base 36: uniform like 24 separate choices, and
    # about twenty times faster (a 500-reading batch mints 1,000 ids).
    number = secrets.randbelow(_SPACE)
    digits = []
    for _ in range(SUFFIX_LENGTH):
        number, digit = divmod(number, len(_ALPHABET))
        digits.append(_ALPHABET[digit])
    return PREFIXES[kind] + "".join(digits)


def looks_like(kind: str, value: str) -> bool:
    return value.startswith(PREFIXES[kind]) and bool(_ID_RE.match(value))
