"""Signed download URLs: `.../v1/reports/{id}/download?expires=<unix seconds>&signature=<hex>`, where
signature = HMAC-SHA256(service key, "{report id}.{expires}"). The key is created once and kept in
the database (service_secrets), so a restart or a second process keeps issued URLs valid. The key is
never logged, returned or written anywhere else."""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac

from bpservice.db.service_secrets import service_secret
from bpservice.db.session import Database

SECRET_NAME = "report_download_signing_key"
DOWNLOAD_TTL = dt.timedelta(hours=24)  # spec, Limits: report download URL validity


class SignatureProblem(Exception):
    """Why a download URL was refused: `code` is `download_url_expired` or `download_url_invalid`."""

    def __init__(self, code: str, message: str, expired_at: dt.datetime | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.expired_at = expired_at


def signing_key(db: Database, now: dt.datetime) -> bytes:
    """The service's URL-signing key: one per database, shared by every instance."""
    return service_secret(db, SECRET_NAME, now)


def signature(key: bytes, report_id: str, expires: int) -> str:
    return hmac.new(key, f"{report_id}.{expires}".encode(), hashlib.sha256).hexdigest()


def issue(key: bytes, base_url: str, report_id: str, now: dt.datetime) -> tuple[str, dt.datetime]:
    """A fresh URL valid for 24 hours from `now`, and its expiry time."""
    expires_at = (now + DOWNLOAD_TTL).replace(microsecond=0)
    expires = int(expires_at.timestamp())
    query = f"expires={expires}&signature={signature(key, report_id, expires)}"
    return f"{base_url.rstrip('/')}/v1/reports/{report_id}/download?{query}", expires_at


def verify(
    key: bytes, report_id: str, expires: str | None, given: str | None, now: dt.datetime
) -> None:
    """Raise SignatureProblem unless the pair is a genuine, unexpired signature for the report.
    The signature is checked before the expiry, so a tampered expiry is "invalid", not "expired"."""
    if not expires or not given or not expires.isdigit() or len(expires) > 12:
        raise SignatureProblem(
            "download_url_invalid",
            "The download URL is incomplete or malformed; read the report again for a fresh URL.",
        )
    expected = signature(key, report_id, int(expires))
    if not hmac.compare_digest(expected, given.lower()):
        raise SignatureProblem(
            "download_url_invalid",
            "The download URL's signature does not match; read the report again for a fresh URL.",
        )
    expired_at = dt.datetime.fromtimestamp(int(expires), dt.UTC)
    if now >= expired_at:
        raise SignatureProblem(
            "download_url_expired",
            "The download URL expired (URLs are valid for 24 hours); read the report again "
            "(GET /v1/reports/{id}) for a fresh URL.",
            expired_at=expired_at,
        )
