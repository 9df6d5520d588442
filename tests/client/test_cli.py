"""The command line against the real service: login, status, profiles, resource commands, JSON
output, exit codes, and secrets never printed."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import keyring
import pytest
from keyring.backends import fail as fail_backend
from typer.testing import CliRunner

from bpservice.workers.reports import generate_pending
from bpsync.cli.entry import app
from bpsync.cli.output import EXIT
from bpsync.config import load_config
from tests.client.conftest import MemoryKeyring
from tests.conftest import Service

ADDRESS_ARGS = ["--street", "1 Way", "--city", "Leeds", "--country", "GB", "--type", "office"]


@pytest.fixture
def cli() -> CliRunner:
    return CliRunner()


def invoke(cli: CliRunner, *args: str, input: str | None = None, env: dict | None = None):  # type: ignore[no-untyped-def]
    return cli.invoke(app, list(args), input=input, env=env, catch_exceptions=False)


def login(cli: CliRunner, service: Service, key: str | None = None, *extra: str):  # type: ignore[no-untyped-def]
    key = key or service.test_key
    return invoke(
        cli, "login", "--api-key", "--base-url", service.base_url, *extra, input=key + "\n"
    )


def test_login_status_and_logout(
    cli: CliRunner, service: Service, memory_keyring: MemoryKeyring
) -> None:
    result = login(cli, service)
    assert result.exit_code == 0, result.output
    assert service.test_key not in result.output
    assert memory_keyring.items[("bpsync", "default:api_key")] == service.test_key
    config = load_config()
    assert config.default_profile == "default"
    assert config.profiles["default"].base_url == service.base_url  # type: ignore[index]
    assert service.test_key not in Path(load_config.__globals__["config_file"]()).read_text()

    status = invoke(cli, "status", "--json")
    assert status.exit_code == 0, status.output
    info = json.loads(status.stdout)
    assert info["environment"] == "sandbox" and info["auth_method"] == "api_key"
    assert info["service"] == "reachable" and info["credentials"] == "keyring"
    assert info["key"].startswith("svc_test_…") and info["key"][-4:] == service.test_key[-4:]
    assert info["rate_limits"]["key"]["limit"] == 100_000
    human = invoke(cli, "status")
    assert "sandbox" in human.stdout and service.test_key not in human.output

    assert invoke(cli, "logout").exit_code == 0
    assert ("bpsync", "default:api_key") not in memory_keyring.items
    after = invoke(cli, "properties", "list")
    assert after.exit_code == EXIT.AUTH and "bpsync login" in after.stderr


def test_login_refuses_an_unknown_key(cli: CliRunner, service: Service) -> None:
    result = login(cli, service, "svc_live_" + "z" * 32)
    assert result.exit_code == EXIT.AUTH
    assert "z" * 32 not in result.output
    assert load_config().profiles == {}
    assert login(cli, service, "not-a-key").exit_code == EXIT.INVALID


def test_resources_json_and_exit_codes(cli: CliRunner, service: Service) -> None:
    login(cli, service)
    created = invoke(cli, "properties", "create", "--name", "Riverside", *ADDRESS_ARGS, "--json")
    assert created.exit_code == 0, created.output
    assert "sandbox" in created.stderr  # which environment, on stderr
    prop = json.loads(created.stdout)
    listed = json.loads(invoke(cli, "--json", "properties", "list").stdout)
    assert [p["id"] for p in listed["data"]] == [prop["id"]] and listed["meta"]["total"] == 1
    table = invoke(cli, "properties", "list")
    assert "Riverside" in table.stdout and "page 1 of 1" in table.stdout

    building = json.loads(
        invoke(
            cli,
            "buildings",
            "create",
            prop["id"],
            "--name",
            "Main",
            "--use",
            "office",
            "--gfa",
            "1000",
            "--year-built",
            "1999",
            "--floors",
            "3",
            "--json",
        ).stdout
    )
    meter = json.loads(
        invoke(
            cli,
            "meters",
            "create",
            building["id"],
            "--type",
            "electricity",
            "--unit",
            "kWh",
            "--json",
        ).stdout
    )
    missing = invoke(cli, "properties", "get", "prp_missing")
    assert missing.exit_code == EXIT.NOT_FOUND and "not_found" in missing.stderr
    invalid = invoke(
        cli,
        "properties",
        "create",
        "--name",
        "X",
        "--street",
        "s",
        "--city",
        "c",
        "--country",
        "UK",
        "--type",
        "office",
        "--json",
    )
    assert invalid.exit_code == EXIT.INVALID
    error = json.loads(invalid.stderr.splitlines()[-1])["error"]
    assert error["service_code"] == "validation_error" and error["details"][0]["field"]
    assert invoke(cli, "properties", "archive", prop["id"]).exit_code == 0
    again = invoke(cli, "properties", "archive", prop["id"])
    assert again.exit_code == EXIT.CONFLICT
    assert invoke(cli, "properties", "bogus").exit_code == EXIT.USAGE
    return_value = (building, meter)
    assert return_value


def test_readings_submit_file_and_lock(cli: CliRunner, service: Service, tmp_path: Path) -> None:
    login(cli, service)
    prop = json.loads(
        invoke(cli, "properties", "create", "--name", "P", *ADDRESS_ARGS, "--json").stdout
    )
    building = json.loads(
        invoke(
            cli,
            "buildings",
            "create",
            prop["id"],
            "--name",
            "B",
            "--use",
            "office",
            "--gfa",
            "500",
            "--year-built",
            "2001",
            "--floors",
            "2",
            "--json",
        ).stdout
    )
    meter = json.loads(
        invoke(
            cli,
            "meters",
            "create",
            building["id"],
            "--type",
            "electricity",
            "--unit",
            "kWh",
            "--json",
        ).stdout
    )
    rows = tmp_path / "bills.csv"
    rows.write_text(
        "start_date,end_date,consumption,cost\n"
        "2025-01-01,2025-01-31,1000,120\n"
        "2025-02-01,2025-02-28,1100,\n"
        "2025-02-10,2025-02-12,5,\n"
    )
    result = invoke(cli, "readings", "submit", building["id"], meter["id"], str(rows), "--json")
    assert result.exit_code == EXIT.PARTIAL
    outcome = json.loads(result.stdout)
    assert outcome["accepted"] == 2 and outcome["errors"][0]["index"] == 2
    listed = json.loads(
        invoke(cli, "readings", "list", building["id"], meter["id"], "--all", "--json").stdout
    )
    assert [r["cost"] for r in listed["data"]] == [120, None]
    lock = invoke(cli, "buildings", "lock", building["id"], "--through", "2025-01-31", "--json")
    assert json.loads(lock.stdout)["locked_through"] == "2025-01-31"
    first = listed["data"][0]["id"]
    locked = invoke(cli, "readings", "delete", building["id"], meter["id"], first)
    assert locked.exit_code == EXIT.PERMISSION and "building_locked" in locked.stderr


def test_users_benchmarks_reports_and_webhooks(
    cli: CliRunner, service: Service, tmp_path: Path
) -> None:
    login(cli, service)
    invited = invoke(
        cli, "users", "invite", "--email", "bo@example.com", "--role", "viewer", "--json"
    )
    assert json.loads(invited.stdout)["status"] == "invited"
    assert "bo@example.com" in invoke(cli, "users", "list").stdout
    portfolio = json.loads(invoke(cli, "benchmarks", "portfolio", "--json").stdout)
    assert portfolio["building_count"] == 0
    empty = invoke(
        cli,
        "reports",
        "create",
        "--type",
        "portfolio_summary",
        "--format",
        "pdf",
        "--start",
        "2025-01-01",
        "--end",
        "2025-12-31",
        "--json",
    )
    generate_pending(service.app)
    failed = invoke(cli, "reports", "download", json.loads(empty.stdout)["id"], "--wait")
    assert failed.exit_code == EXIT.REPORT_FAILED and "failed" in failed.stderr
    prop = json.loads(
        invoke(cli, "properties", "create", "--name", "P", *ADDRESS_ARGS, "--json").stdout
    )
    invoke(
        cli,
        "buildings",
        "create",
        prop["id"],
        "--name",
        "B",
        "--use",
        "office",
        "--gfa",
        "500",
        "--year-built",
        "2001",
        "--floors",
        "2",
    )

    types = json.loads(invoke(cli, "reports", "types", "--json").stdout)
    assert "portfolio_summary" in {t["type"] for t in types}
    created = invoke(
        cli,
        "reports",
        "create",
        "--type",
        "portfolio_summary",
        "--format",
        "xlsx",
        "--start",
        "2025-01-01",
        "--end",
        "2025-12-31",
        "--json",
    )
    assert created.exit_code == 0, created.output
    report = json.loads(created.stdout)
    generate_pending(service.app)
    done = invoke(cli, "reports", "download", report["id"], "-o", str(tmp_path), "--wait", "--json")
    assert done.exit_code == 0, done.output
    saved = json.loads(done.stdout)
    assert Path(saved["path"]).read_bytes()[:2] == b"PK"  # an xlsx is a zip
    # "-o reports/" means a folder, even when it does not exist yet (it is created)
    into = tmp_path / "reports"
    again = invoke(cli, "reports", "download", report["id"], "-o", f"{into}/", "--json")
    assert again.exit_code == 0, again.output
    assert into.is_dir() and Path(json.loads(again.stdout)["path"]).parent == into
    # a path without the slash names the file
    named = invoke(cli, "reports", "download", report["id"], "-o", str(tmp_path / "q.xlsx"))
    assert named.exit_code == 0 and (tmp_path / "q.xlsx").read_bytes()[:2] == b"PK"

    secret = tmp_path / "secret.txt"
    secret.write_text("whsec-" + "q" * 30)
    hook = invoke(
        cli,
        "webhooks",
        "create",
        "--url",
        "https://hooks.example.com/x",
        "--event",
        "property.created",
        "--secret-file",
        str(secret),
        "--json",
    )
    assert hook.exit_code == 0, hook.output
    assert "q" * 30 not in hook.output
    hook_id = json.loads(hook.stdout)["id"]
    prompted = invoke(
        cli,
        "webhooks",
        "create",
        "--url",
        "https://hooks.example.com/y",
        "--event",
        "*",
        input="p" * 24 + "\n",
    )
    assert prompted.exit_code == 0 and "p" * 24 not in prompted.output
    assert invoke(cli, "webhooks", "pause", hook_id).exit_code == 0
    listed = json.loads(invoke(cli, "webhooks", "list", "--status", "paused", "--json").stdout)
    assert [w["id"] for w in listed["data"]] == [hook_id]


def test_production_is_announced_and_env_overrides(cli: CliRunner, service: Service) -> None:
    env = {"BPSYNC_API_KEY": service.live_key, "BPSYNC_BASE_URL": service.base_url}
    result = invoke(cli, "properties", "list", env=env)
    assert result.exit_code == 0, result.output
    assert "PRODUCTION" in result.stderr
    status = json.loads(invoke(cli, "status", "--json", env=env).stdout)
    assert status["environment"] == "production" and status["credentials"] == "BPSYNC_API_KEY"
    assert set(status["overridden_by_env"]) >= {"base_url", "auth_method"}


def test_no_keyring_is_reported_not_silently_worked_around(
    cli: CliRunner, service: Service, tmp_path: Path
) -> None:
    keyring.set_keyring(fail_backend.Keyring())
    refused = login(cli, service)
    assert refused.exit_code == EXIT.CONFIG
    assert "BPSYNC_API_KEY" in refused.stderr and "--secret-store file" in refused.stderr
    assert not (tmp_path / "state" / "secrets.json").exists()

    # The environment variable works without any store.
    env = {"BPSYNC_API_KEY": service.test_key, "BPSYNC_BASE_URL": service.base_url}
    assert invoke(cli, "properties", "list", env=env).exit_code == 0

    # The explicit opt-in: a 0600 file, marked insecure.
    opted = login(cli, service, None, "--secret-store", "file")
    assert opted.exit_code == 0, opted.output
    secrets_file = tmp_path / "state" / "secrets.json"
    assert stat.S_IMODE(secrets_file.stat().st_mode) == 0o600
    status = invoke(cli, "status")
    assert "INSECURE" in status.stdout
    assert json.loads(invoke(cli, "status", "--json").stdout)["secret_store_insecure"] is True

    # A later login that does not ask for the file store again never writes to it (the profile
    # having used it before is not consent for this key).
    before = secrets_file.read_bytes()
    again = login(cli, service, service.live_key)
    assert again.exit_code == EXIT.CONFIG and "--secret-store file" in again.stderr
    assert secrets_file.read_bytes() == before


def test_profiles(cli: CliRunner, service: Service) -> None:
    assert "No profiles" in invoke(cli, "profiles").stdout
    login(cli, service)
    assert login(cli, service, service.live_key, "--profile", "prod").exit_code == 0
    rows = json.loads(invoke(cli, "profiles", "--json").stdout)
    assert [(r["name"], r["default"]) for r in rows] == [("default", True), ("prod", False)]
    assert invoke(cli, "profiles", "use", "prod").exit_code == 0
    assert json.loads(invoke(cli, "status", "--json").stdout)["environment"] == "production"
    assert invoke(cli, "-p", "nope", "properties", "list").exit_code == EXIT.CONFIG
    assert invoke(cli, "profiles", "use", "nope").exit_code == EXIT.NOT_FOUND


def test_help_everywhere(cli: CliRunner) -> None:
    for args in (
        ["--help"],
        ["properties", "--help"],
        ["readings", "submit", "--help"],
        ["reports", "download", "--help"],
        ["login", "--help"],
    ):
        result = invoke(cli, *args)
        assert result.exit_code == 0 and "Usage" in result.stdout


def test_oauth_login_from_the_command_line(
    cli: CliRunner,
    service: Service,
    memory_keyring: MemoryKeyring,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tests.client.test_oauth import open_in_thread, setup_oauth

    oauth_app = setup_oauth(service)
    assert oauth_app.client_secret is not None
    opened: list[str] = []
    monkeypatch.setattr("bpsync.cli.account.webbrowser.open", open_in_thread(opened))
    result = invoke(
        cli,
        "login",
        "--oauth",
        "--base-url",
        service.base_url,
        "--client-id",
        oauth_app.client_id,
        "--scope",
        "properties:read",
        "--json",
        input=oauth_app.client_secret.reveal() + "\n",
    )
    assert result.exit_code == 0, result.output
    assert oauth_app.client_secret.reveal() not in result.output
    assert json.loads(result.stdout)["scopes"] == "properties:read"
    assert "code_challenge=" in opened[0]
    stored = json.loads(memory_keyring.items[("bpsync", "default:oauth")])
    assert stored["access_token"] not in result.output

    status = json.loads(invoke(cli, "status", "--json").stdout)
    assert status["auth_method"] == "oauth" and status["scopes"] == ["properties:read"]
    assert status["token_expired"] is False and status["service"] == "reachable"
    listed = invoke(cli, "properties", "list", "--json")
    assert listed.exit_code == 0 and "OAuth app" in listed.stderr
    denied = invoke(cli, "properties", "create", "--name", "X", *ADDRESS_ARGS)
    assert denied.exit_code == EXIT.PERMISSION  # the token holds properties:read only
    assert invoke(cli, "logout").exit_code == 0
    assert ("bpsync", "default:oauth") not in memory_keyring.items


def test_errors_say_what_to_do(cli: CliRunner, service: Service, tmp_path: Path) -> None:
    """A refused key names the login command; a dead URL names the URL and the likely cause; a
    readings file with a unit column is refused by name, not with a validation dump."""
    import socket

    bogus = "svc_test_" + "x" * 32
    env = {"BPSYNC_API_KEY": bogus, "BPSYNC_BASE_URL": service.base_url}
    refused = invoke(cli, "properties", "list", env=env)
    assert refused.exit_code == EXIT.AUTH
    assert "API key was refused" in refused.stderr and "BPSYNC_API_KEY" in refused.stderr
    assert bogus not in refused.stderr

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dead = {"BPSYNC_API_KEY": service.test_key, "BPSYNC_BASE_URL": f"http://127.0.0.1:{port}"}
    down = invoke(cli, "properties", "list", env=dead)
    assert down.exit_code == EXIT.CONNECTION
    assert f"http://127.0.0.1:{port}: connection refused. Is the service running" in down.stderr

    readings = tmp_path / "readings.csv"
    readings.write_text("start_date,end_date,consumption,unit\n2024-01-01,2024-01-31,5,kWh\n")
    unit = invoke(cli, "readings", "submit", "bld_x", "mtr_x", str(readings), env=env)
    assert unit.exit_code == EXIT.INVALID
    assert "'unit' not accepted" in unit.stderr and "bpsync import" in unit.stderr
    readings.write_text("start_date,end_date,consumption\n2024-01-01,2024-01-31,lots\n")
    bad = invoke(cli, "readings", "submit", "bld_x", "mtr_x", str(readings), env=env)
    assert "row 2, column consumption ('lots')" in bad.stderr and "pydantic" not in bad.stderr
    helped = invoke(cli, "readings", "submit", "--help")
    assert "start_date, end_date, consumption" in helped.stdout
