"""Pure rules of the authorization server: password hashing, token minting, PKCE, signed form
tokens, redirect-URI registration and matching, scope parsing. No I/O here."""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import json
import re
import secrets
import time
from typing import Any
from urllib.parse import urlsplit

from bpservice.domain.vocab import SCOPES

ACCESS_TOKEN_PREFIX = "oat_"
REFRESH_TOKEN_PREFIX = "ort_"
CODE_PREFIX = "oac_"
CLIENT_SECRET_PREFIX = "ocs_"

# scrypt at N=2^15, r=8, p=1 (32 MiB, ~0.1 s): OWASP's 2023 minimum is N=2^17 with p=1 or an
# equivalent cost; we trade a little for test speed and record it in the decisions file.
SCRYPT_N = 2**15
SCRYPT_R = 8
SCRYPT_P = 1
PASSWORD_MIN = 12
PASSWORD_MAX = 256


# --- secrets and hashes ---------------------------------------------------------------------------


def mint(prefix: str) -> str:
    """A new secret: prefix + 43 URL-safe characters (256 bits)."""
    return prefix + secrets.token_urlsafe(32)


def digest(secret: str) -> str:
    """SHA-256 of a high-entropy secret: what the database stores."""
    return hashlib.sha256(secret.encode()).hexdigest()


def same_secret(secret: str, stored_digest: str) -> bool:
    return hmac.compare_digest(digest(secret), stored_digest)


# --- passwords ------------------------------------------------------------------------------------


def password_problem(password: str) -> str | None:
    """Why a new password is refused, or None. Length only, as NIST SP 800-63B advises."""
    if len(password) < PASSWORD_MIN:
        return f"The password must have at least {PASSWORD_MIN} characters."
    if len(password) > PASSWORD_MAX:
        return f"The password must have at most {PASSWORD_MAX} characters."
    return None


def hash_password(password: str, *, salt: bytes | None = None) -> str:
    """`scrypt$N$r$p$salt$hash`, salt and hash in URL-safe base64; a fresh 16-byte salt each time."""
    salt = salt or secrets.token_bytes(16)
    derived = hashlib.scrypt(
        password.encode(), salt=salt, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P, maxmem=64 * 1024 * 1024
    )
    return "$".join(
        ["scrypt", str(SCRYPT_N), str(SCRYPT_R), str(SCRYPT_P), _b64(salt), _b64(derived)]
    )


def verify_password(password: str, stored: str | None) -> bool:
    if not stored:
        # Spend the same time as a real check so response time does not reveal unknown users.
        hash_password(password)
        return False
    try:
        scheme, n, r, p, salt, expected = stored.split("$")
        if scheme != "scrypt":
            return False
        derived = hashlib.scrypt(
            password.encode(),
            salt=_unb64(salt),
            n=int(n),
            r=int(r),
            p=int(p),
            maxmem=64 * 1024 * 1024,
        )
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(derived, _unb64(expected))


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


# --- PKCE (RFC 7636) ------------------------------------------------------------------------------

_VERIFIER_RE = re.compile(r"^[A-Za-z0-9\-._~]{43,128}$")
_CHALLENGE_RE = re.compile(r"^[A-Za-z0-9\-_]{43}$")


def valid_challenge(challenge: str) -> bool:
    """An S256 challenge is the unpadded base64url of a SHA-256: exactly 43 characters."""
    return bool(_CHALLENGE_RE.match(challenge))


def s256(verifier: str) -> str:
    return _b64(hashlib.sha256(verifier.encode("ascii")).digest())


def verifier_matches(verifier: str, challenge: str) -> bool:
    if not _VERIFIER_RE.match(verifier):
        return False
    return hmac.compare_digest(s256(verifier), challenge)


# --- scopes ---------------------------------------------------------------------------------------


def parse_scopes(raw: str | None) -> list[str] | None:
    """Space-separated scope names → a de-duplicated list in the order given; None if any is
    unknown or none is given."""
    names = list(dict.fromkeys((raw or "").split()))
    if not names or any(n not in SCOPES for n in names):
        return None
    return names


# --- signed form tokens (CSRF) --------------------------------------------------------------------


def sign_form(key: bytes, payload: dict[str, Any], ttl_seconds: int, now: float) -> str:
    """A tamper-proof token carrying `payload` and an expiry: base64(json).base64(hmac)."""
    body = _b64(json.dumps({**payload, "exp": int(now) + ttl_seconds}, sort_keys=True).encode())
    mac = _b64(hmac.new(key, body.encode(), hashlib.sha256).digest())
    return f"{body}.{mac}"


def read_form(key: bytes, token: str, now: float | None = None) -> dict[str, Any] | None:
    """The payload of a token this key signed and that has not expired, else None."""
    body, _, mac = token.partition(".")
    if not body or not mac:
        return None
    expected = _b64(hmac.new(key, body.encode(), hashlib.sha256).digest())
    if not hmac.compare_digest(expected, mac):
        return None
    try:
        payload = json.loads(_unb64(body))
    except ValueError:
        return None
    if not isinstance(payload, dict) or not isinstance(payload.get("exp"), int):
        return None
    if payload["exp"] < (time.time() if now is None else now):
        return None
    return payload


def cookie_binding(cookie_value: str) -> str:
    """What a form token stores about the browser's CSRF cookie (a hash, not the value)."""
    return digest("csrf:" + cookie_value)[:32]


# --- redirect URIs (RFC 6749 §3.1.2, RFC 8252 §7) -------------------------------------------------

_LOOPBACK_HOSTS = ("127.0.0.1", "[::1]")


def redirect_uri_problem(uri: str) -> str | None:
    """Why a redirect URI cannot be registered, or None.

    https anywhere; http only on a loopback address (RFC 8252 §7.3) or localhost; a private-use
    scheme in reverse-domain form (RFC 8252 §7.1, e.g. `com.example.app:/callback`). Never a
    fragment (RFC 6749 §3.1.2)."""
    if len(uri) > 2000 or any(c.isspace() for c in uri):
        return "must be at most 2000 characters without spaces"
    try:
        parts = urlsplit(uri)
        _ = parts.port
    except ValueError:
        return "is not a valid URI"
    if parts.fragment or "#" in uri:
        return "must not contain a fragment"
    scheme = parts.scheme.lower()
    if scheme == "https":
        return None if parts.hostname else "needs a host"
    if scheme == "http":
        host = parts.hostname or ""
        if _is_loopback(host) or host == "localhost":
            return None
        return "http is allowed only for loopback redirects (127.0.0.1, [::1], localhost)"
    if "." in scheme and re.match(r"^[a-z][a-z0-9+.\-]*$", scheme):
        return None
    return "must be https, http on a loopback address, or a reverse-domain private-use scheme"


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def redirect_uri_matches(requested: str, registered: list[str]) -> bool:
    """Exact string match, except that a registered loopback-IP URI matches any port
    (RFC 8252 §7.3: native apps bind an ephemeral port at run time)."""
    if requested in registered:
        return True
    try:
        want = urlsplit(requested)
        _ = want.port  # a malformed port raises here
    except ValueError:
        return False
    if want.scheme != "http" or want.hostname is None or not _is_loopback(want.hostname):
        return False
    for uri in registered:
        have = urlsplit(uri)
        if (
            have.scheme == "http"
            and have.hostname is not None
            and _is_loopback(have.hostname)
            and have.hostname == want.hostname
            and have.path == want.path
            and have.query == want.query
        ):
            return True
    return False
