"""A full session of real `bpsync -v` processes leaks no secret.

The session: `login --api-key --secret-store file` (the key typed at the hidden prompt), status,
lists, an import, a folder watch (`watch DIR --once`), a report created and downloaded, a webhook
subscription (secret from a file), benchmarks, then an OAuth login as a user through the service's
own authorization server (client secret typed at the prompt, the browser step played by this
test, the redirect pasted: `--no-browser`), calls as that user, and a token refresh after the
service's clock passes the access token's hour.

Then every byte the processes wrote (stdout, stderr with DEBUG logs), the service's own log
records, and every file under the config, state and data dirs and the download folder is searched
for the API key, each access and refresh token, the OAuth client secret and the webhook secret:
whole, and every 16-character piece of them. The only file allowed to hold them is the opt-in
secret store itself (`state/secrets.json`), which is checked to hold them (so the search is known
to work) and to be readable by its owner only."""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bpservice import admin
from bpservice.workers.reports import generate_pending
from tests.client.test_oauth import PASSWORD, browser
from tests.conftest import Service

ROOT = Path(__file__).resolve().parents[2]
WEBHOOK_SECRET = "whsec-proof-7Hq2Lx9Vb4Nc8Rt1Zp6Ks3Wd"
PIECE = 16  # a leaked piece this long is a leak (masked keys show 4 characters)


class Session:
    """Runs `python -m bpsync` with private dirs and records everything it prints."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.outputs: list[tuple[str, str]] = []  # (command, text)
        env = {k: v for k, v in os.environ.items() if not k.startswith("BPSYNC_")}
        env.update(
            BPSYNC_CONFIG_DIR=str(tmp / "config"),
            BPSYNC_STATE_DIR=str(tmp / "state"),
            BPSYNC_DATA_DIR=str(tmp / "data"),
            PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring",  # no keyring, as in CI
            COLUMNS="200",
        )
        self.env = env

    def start(self, *args: str) -> subprocess.Popen:
        # A new session has no controlling terminal, so the hidden prompts read stdin, exactly
        # as when a script pipes the secret in.
        return subprocess.Popen(
            [sys.executable, "-m", "bpsync", "-v", *args],
            env=self.env,
            cwd=self.tmp,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )

    def record(self, args: tuple[str, ...], out: str, err: str) -> None:
        self.outputs.append((" ".join(args) + " [stdout]", out))
        self.outputs.append((" ".join(args) + " [stderr]", err))

    def run(self, *args: str, stdin: str = "", ok: bool = True) -> str:
        proc = self.start(*args)
        out, err = proc.communicate(stdin, timeout=120)
        self.record(args, out, err)
        if ok:
            assert proc.returncode == 0, f"bpsync {' '.join(args)}: {err}"
        return out


def pieces(secret: str) -> set[str]:
    """The secret and every PIECE-long substring of it."""
    return {secret} | {secret[i : i + PIECE] for i in range(len(secret) - PIECE + 1)}


def leaks(text: str | bytes, secrets: dict[str, str]) -> list[str]:
    data = text.encode("utf-8", "replace") if isinstance(text, str) else text
    return [
        name for name, secret in secrets.items() if any(p.encode() in data for p in pieces(secret))
    ]


def stored_tokens(store: Path) -> dict[str, str]:
    """The OAuth tokens in the opt-in secret store (to know what to look for)."""
    out = {}
    for name, value in json.loads(store.read_text(encoding="utf-8")).items():
        if name.endswith(":oauth"):
            tokens = json.loads(value)
            out[f"{name} access token"] = tokens["access_token"]
            out[f"{name} refresh token"] = tokens["refresh_token"]
    return out


@pytest.fixture
def service_logs(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    """The service (in this process) logs at DEBUG too: its records are searched as well."""
    caplog.set_level(logging.DEBUG)
    yield caplog


def setup_portfolio(service: Service, tmp: Path) -> tuple[str, list[str]]:
    with service.client() as api:
        prop = api.post(
            "/v1/properties",
            json={
                "name": "Secrets",
                "address": {"street": "1 A St", "city": "Leeds", "country": "GB"},
                "type": "office",
            },
        ).json()["data"]
        building = api.post(
            f"/v1/properties/{prop['id']}/buildings",
            json={
                "name": "Main",
                "primary_use_type": "office",
                "gfa_m2": 4000,
                "year_built": 1999,
                "floors": 4,
            },
        ).json()["data"]["id"]
        meters = [
            api.post(
                f"/v1/buildings/{building}/meters",
                json={"type": "electricity", "unit": "kWh", "name": f"M{i}"},
            ).json()["data"]["id"]
            for i in range(3)
        ]
    return building, meters


def bills(meters: list[str], year: int) -> str:
    lines = ["Meter ID,Start Date,End Date,Consumption,Unit"]
    for i, m in enumerate(meters):
        for month in range(1, 13):
            start = dt.date(year, month, 1)
            end = (start + dt.timedelta(days=32)).replace(day=1) - dt.timedelta(days=1)
            lines.append(f"{m},{start},{end},{9000 + 100 * i + month},kWh")
    return "\n".join(lines) + "\n"


def oauth_login(session: Session, base_url: str, client_id: str, client_secret: str) -> None:
    """`bpsync login --oauth --no-browser`: type the client secret, read the URL it prints, play
    the browser, paste the address the browser lands on."""
    args = (
        "--profile",
        "user",
        "login",
        "--oauth",
        "--no-browser",
        "--client-id",
        client_id,
        "--scope",
        "properties:read",
        "--scope",
        "benchmarks:read",
        "--secret-store",
        "file",
        "--base-url",
        base_url,
    )
    proc = session.start(*args)
    assert proc.stdin and proc.stderr
    proc.stdin.write(client_secret + "\n")
    proc.stdin.flush()
    seen: list[str] = []
    deadline = time.monotonic() + 60
    url = ""
    while not url:
        assert time.monotonic() < deadline and proc.poll() is None, "".join(seen)
        line = proc.stderr.readline()
        seen.append(line)
        if "/oauth/authorize?" in line:
            url = line[line.index("http") :].strip()
    proc.stdin.write(browser(url, follow=False) + "\n")
    proc.stdin.flush()
    out, err = proc.communicate(timeout=60)
    session.record(args, out, "".join(seen) + err)
    assert proc.returncode == 0, "".join(seen) + err


@pytest.mark.slow
def test_a_full_session_leaks_no_secret(
    service: Service, tmp_path: Path, service_logs: pytest.LogCaptureFixture
) -> None:
    building, meters = setup_portfolio(service, tmp_path)
    with service.app.state.db.write() as db:
        oauth = admin.create_oauth_app(
            db,
            service.org_id,
            name="bpsync",
            redirect_uris=["http://127.0.0.1/callback"],
            environment="test",
            now=service.clock(),
        )
        user = admin.create_user(
            db, service.org_id, "ana@example.com", role="admin", now=service.clock()
        )
        admin.set_password(db, user.id, PASSWORD, now=service.clock())
    session = Session(tmp_path)
    url = service.base_url

    # --- an API key ---------------------------------------------------------------------------
    login = ("login", "--api-key", "--secret-store", "file", "--base-url", url, "--default")
    session.run(*login, stdin=service.test_key + "\n")
    session.run("status")
    session.run("properties", "list")
    session.run("meters", "list", building)
    (tmp_path / "bills.csv").write_text(bills(meters, 2024), encoding="utf-8")
    session.run("import", str(tmp_path / "bills.csv"))
    session.run("--json", "import", str(tmp_path / "bills.csv"))  # a no-op the second time
    drop = tmp_path / "drop"
    drop.mkdir()
    (drop / "more.csv").write_text(bills(meters, 2023), encoding="utf-8")
    session.run("watch", str(drop), "--once", "--stable-seconds", "0")
    assert (drop / "processed").is_dir() and not (drop / "more.csv").exists()
    create = "--json reports create --type portfolio_summary --format pdf --start 2024-01-01"
    report = json.loads(session.run(*create.split(), "--end", "2024-12-31"))
    assert generate_pending(service.app, service.clock()) == 1
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    session.run("reports", "download", report["id"], "--output", str(downloads))
    assert [p.suffix for p in downloads.iterdir()] == [".pdf"]
    secret_file = tmp_path / "webhook-secret.txt"  # the user's own file, outside bpsync's dirs
    secret_file.write_text(WEBHOOK_SECRET + "\n", encoding="utf-8")
    subscribe = (
        "--json webhooks create --url https://example.com/hook --event meter.reading.created"
    )
    hook = json.loads(session.run(*subscribe.split(), "--secret-file", str(secret_file)))
    session.run("webhooks", "list")
    session.run("webhooks", "get", hook["id"])
    session.run("benchmarks", "building", building)
    session.run("benchmarks", "portfolio")
    session.run("readings", "list", building, meters[0])

    # --- an OAuth user ------------------------------------------------------------------------
    oauth_login(session, url, oauth.client_id, oauth.client_secret)
    store = tmp_path / "state" / "secrets.json"
    first_tokens = stored_tokens(store)
    session.run("--profile", "user", "properties", "list")
    session.run("--profile", "user", "status")
    service.clock.advance(3700)  # the access token's hour is over: the next call refreshes
    session.run("--profile", "user", "benchmarks", "portfolio")
    later_tokens = stored_tokens(store)
    assert set(first_tokens.values()).isdisjoint(later_tokens.values())  # refreshed and rotated

    secrets = {
        "API key": service.test_key,
        "OAuth client secret": oauth.client_secret,
        "webhook secret": WEBHOOK_SECRET,
        **{f"first {k}": v for k, v in first_tokens.items()},
        **{f"refreshed {k}": v for k, v in later_tokens.items()},
    }
    assert all(len(s) >= PIECE for s in secrets.values())

    found: list[str] = []
    for command, text in session.outputs:
        found += [f"{name} in `bpsync {command}`" for name in leaks(text, secrets)]
    found += [f"{name} in the service's logs" for name in leaks(service_logs.text, secrets)]
    searched = 0
    for root in ("config", "state", "data", "downloads", "drop"):
        for path in sorted((tmp_path / root).rglob("*")):
            if not path.is_file() or path == store:
                continue
            searched += 1
            found += [f"{name} in {path}" for name in leaks(path.read_bytes(), secrets)]
    assert not found, found
    # The search covered real files: config, journal, rate-limit state, reports, receipts.
    assert searched >= 5, searched
    names = {p.name for p in tmp_path.rglob("*")}
    assert {"config.toml", "imports.sqlite"} <= names
    # The opt-in store does hold what was searched for (so a leak would have been seen), and
    # only its owner can read it.
    held = leaks(store.read_bytes(), secrets)
    assert {"API key", "OAuth client secret"} <= set(held)
    assert {k for k in later_tokens} <= {h.removeprefix("refreshed ") for h in held}
    assert stat.S_IMODE(store.stat().st_mode) == 0o600
    # Logs were really on: the processes said what they sent.
    assert any("GET /v1/properties" in text for _, text in session.outputs)
