"""Checking webhook deliveries on the receiving side.

The service signs every delivery twice (decisions WH10):

- `X-SVC-Signature: sha256=<hex HMAC-SHA256(secret, raw body)>` (the spec). It covers the body
  only, so a captured request stays valid forever: `verify(body, header, secret)`.
- Standard Webhooks: `webhook-id`, `webhook-timestamp` and `webhook-signature: v1,<base64
  HMAC-SHA256(secret, "{id}.{timestamp}.{body}")>`. It binds the time, so a receiver refuses
  stale or replayed requests: `verify_standard(...)`.

`verify_request(body, headers, secret)` checks both, parses the event and raises
`WebhookVerificationError` with a reason on failure. Use the raw request bytes, before any JSON
parsing. Comparisons are constant-time (`hmac.compare_digest`); nothing here logs or echoes the
secret or a signature."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Mapping
from typing import Any

__all__ = [
    "DEFAULT_TOLERANCE_SECONDS",
    "WebhookVerificationError",
    "sign",
    "standard_webhooks_secret",
    "verify",
    "verify_request",
    "verify_standard",
]

DEFAULT_TOLERANCE_SECONDS = 300  # five minutes either way, as Standard Webhooks advises


class WebhookVerificationError(Exception):
    """The request is not a genuine, fresh delivery. The message says why, never the secret."""


def _key(secret: str) -> bytes:
    """The HMAC key: the subscription secret's UTF-8 bytes, exactly as the service signs (spec:
    "keyed with the subscription's secret"; decisions WH10, T4). A secret that happens to start
    with `whsec_` is still a plain secret, never base64-decoded: the service cannot know which
    spelling was meant, so sender and receiver agree on one rule."""
    return secret.encode()


def standard_webhooks_secret(secret: str) -> str:
    """The same key in the Standard Webhooks libraries' spelling (`whsec_` + base64 of the
    secret's bytes), for receivers that verify with those libraries instead of this module."""
    return "whsec_" + base64.b64encode(secret.encode()).decode()


def sign(body: bytes, secret: str) -> str:
    """The `X-SVC-Signature` value for `body` (for tests and for senders)."""
    return "sha256=" + hmac.new(_key(secret), body, hashlib.sha256).hexdigest()


def verify(body: bytes, header: str | None, secret: str) -> bool:
    """True when `header` (the `X-SVC-Signature` value) is the signature of the raw `body`.
    Constant time in the signature's content."""
    if not header or not secret:
        return False
    expected = sign(body, secret)
    # compare_digest needs both sides ASCII; a non-ASCII header is simply wrong.
    try:
        offered = header.strip().encode("ascii")
    except UnicodeEncodeError:
        return False
    return hmac.compare_digest(expected.encode("ascii"), offered.lower())


def _header(headers: Mapping[str, str], name: str) -> str | None:
    for key, value in headers.items():
        if key.lower() == name:
            return value
    return None


def verify_standard(
    body: bytes,
    headers: Mapping[str, str],
    secret: str,
    *,
    now: float | None = None,
    tolerance: float = DEFAULT_TOLERANCE_SECONDS,
) -> bool:
    """True when the Standard Webhooks signature is valid and `webhook-timestamp` is within
    `tolerance` seconds of `now` (default: this machine's clock)."""
    try:
        _check_standard(body, headers, secret, now=now, tolerance=tolerance)
    except WebhookVerificationError:
        return False
    return True


def _check_standard(
    body: bytes,
    headers: Mapping[str, str],
    secret: str,
    *,
    now: float | None,
    tolerance: float,
) -> None:
    message_id = _header(headers, "webhook-id")
    timestamp = _header(headers, "webhook-timestamp")
    signatures = _header(headers, "webhook-signature")
    if not message_id or not timestamp or not signatures:
        raise WebhookVerificationError("missing webhook-id, webhook-timestamp or signature")
    try:
        sent_at = int(timestamp)
    except ValueError:
        raise WebhookVerificationError("webhook-timestamp is not a Unix time") from None
    current = time.time() if now is None else now
    if abs(current - sent_at) > tolerance:
        raise WebhookVerificationError(
            f"webhook-timestamp is {int(current - sent_at)} s away from now "
            f"(tolerance {int(tolerance)} s): stale or replayed"
        )
    signed = f"{message_id}.{sent_at}.".encode() + body
    expected = base64.b64encode(hmac.new(_key(secret), signed, hashlib.sha256).digest())
    # Several space-separated signatures may be offered during a key rotation.
    for candidate in signatures.split():
        version, _, value = candidate.partition(",")
        if version != "v1":
            continue
        try:
            offered = value.encode("ascii")
        except UnicodeEncodeError:
            continue
        if hmac.compare_digest(expected, offered):
            return
    raise WebhookVerificationError("no valid v1 signature for this body")


def verify_request(
    body: bytes,
    headers: Mapping[str, str],
    secret: str,
    *,
    now: float | None = None,
    tolerance: float = DEFAULT_TOLERANCE_SECONDS,
) -> dict[str, Any]:
    """Check both signatures and the timestamp, then return the event (`{id, type, created_at,
    data}`). Deduplicate by `id` (also `webhook-id`): delivery is at least once."""
    if not verify(body, _header(headers, "x-svc-signature"), secret):
        raise WebhookVerificationError("X-SVC-Signature does not match the body")
    _check_standard(body, headers, secret, now=now, tolerance=tolerance)
    try:
        event = json.loads(body)
    except (UnicodeDecodeError, ValueError):
        raise WebhookVerificationError("the body is not JSON") from None
    if not isinstance(event, dict) or event.get("id") != _header(headers, "webhook-id"):
        raise WebhookVerificationError("the event id does not match webhook-id")
    return event
