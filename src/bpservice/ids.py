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


def new_id(kind: str) -> str:
    suffix = "".join(secrets.choice(_ALPHABET) for _ in range(SUFFIX_LENGTH))
    return PREFIXES[kind] + suffix


def looks_like(kind: str, value: str) -> bool:
    return value.startswith(PREFIXES[kind]) and bool(_ID_RE.match(value))
