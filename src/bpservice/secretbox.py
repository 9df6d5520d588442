"""Webhook signing secrets at rest: encrypted with a server key, decrypted only to sign.

The service has to sign with the secret itself, so it cannot keep a one-way hash of it (as it does
for API keys). What it can do is keep the stored copy useless to anyone who has the database
without the key: a dump, a backup, a read-only replica, an SQL injection that reads rows.

The key comes from settings (`BPSERVICE_SECRETS_KEY`, one or more Fernet keys separated by commas:
the first encrypts, all decrypt, so keys can be rotated). Without one, a key is made once and kept
in the database's `service_secrets` table; that still keeps the secret out of the webhook table's
own rows, exports and logs, but not from someone who holds the whole database, which is why
`docs/security.md` tells production deployments to set the key.
"""

from __future__ import annotations

import base64
import datetime as dt
from collections.abc import Sequence

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from bpservice.db.service_secrets import service_secret
from bpservice.db.session import Database

PREFIX = "enc1:"
DB_KEY_NAME = "webhook_secrets_key"


class SecretKeyError(RuntimeError):
    """A stored secret could not be decrypted with the configured keys (a wrong or missing key)."""


def parse_keys(configured: str | None) -> list[bytes]:
    """The comma-separated Fernet keys of a setting, checked; [] when none is configured."""
    if not configured:
        return []
    keys = [part.strip().encode() for part in configured.split(",") if part.strip()]
    for key in keys:
        try:
            Fernet(key)
        except (ValueError, TypeError):
            raise ValueError(
                "BPSERVICE_SECRETS_KEY must hold Fernet keys (32 url-safe base64 bytes each; "
                "make one with `bpservice admin new-secrets-key`)"
            ) from None
    return keys


class SecretBox:
    """Encrypts and decrypts stored secrets with the first of `keys` (all of them decrypt)."""

    def __init__(self, keys: Sequence[bytes]) -> None:
        if not keys:
            raise ValueError("a SecretBox needs at least one key")
        self._fernet = MultiFernet([Fernet(key) for key in keys])

    def seal(self, plaintext: str) -> str:
        return PREFIX + self._fernet.encrypt(plaintext.encode()).decode()

    def open(self, stored: str) -> str:
        if not stored.startswith(PREFIX):
            return stored  # written before encryption at rest; sealed again on its next update
        try:
            return self._fernet.decrypt(stored[len(PREFIX) :].encode()).decode()
        except InvalidToken:
            raise SecretKeyError(
                "a webhook secret could not be decrypted: BPSERVICE_SECRETS_KEY differs from the "
                "key it was stored with (keep the old key after the new one to rotate)"
            ) from None


def secret_box(db: Database, configured: str | None, now: dt.datetime) -> SecretBox:
    """The service's box: the configured keys, else the key kept in the database."""
    keys = parse_keys(configured)
    if not keys:
        keys = [base64.urlsafe_b64encode(service_secret(db, DB_KEY_NAME, now))]
    return SecretBox(keys)
