"""`bpservice admin …`: keys are printed once, listings never show secrets, revocation is immediate."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
from typer.testing import CliRunner

from bpservice.cli import app
from tests.conftest import FakeClock, LiveServer, make_service_app
from tests.service.conftest import fast

runner = CliRunner()


def run(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_bootstrap_keys_list_and_revoke(tmp_path: Path, clock: FakeClock) -> None:
    db = str(tmp_path / "admin.db")
    info = json.loads(run("admin", "bootstrap", "--db", db, "--json", "--org-name", "Acme"))
    assert info["test_key"].startswith("svc_test_") and info["live_key"].startswith("svc_live_")
    assert info["org_id"].startswith("org_") and info["owner_user_id"].startswith("usr_")
    plain = run("admin", "bootstrap", "--db", db, "--owner-email", "o@acme.example")
    assert "shown once" in plain

    viewer = json.loads(
        run(
            "admin",
            "create-user",
            info["org_id"],
            "v@acme.example",
            "--role",
            "viewer",
            "--db",
            db,
            "--json",
        )
    )
    made = json.loads(
        run(
            "admin", "create-key", info["org_id"], "--scope", "properties:read",
            "--user-id", viewer["user_id"], "--environment", "live", "--db", db, "--json",
        )
    )  # fmt: skip
    assert made["key"].startswith("svc_live_") and made["scopes"] == ["properties:read"]

    for args in (("admin", "list-keys", "--db", db, "--json"), ("admin", "list-keys", "--db", db)):
        listing = run(*args)
        for secret in (info["test_key"], info["live_key"], made["key"]):
            assert secret not in listing
            # not even the random part beyond the short display prefix
            assert secret[13:] not in listing
    keys = json.loads(run("admin", "list-keys", info["org_id"], "--db", db, "--json"))
    assert {k["id"] for k in keys} == {info["test_key_id"], info["live_key_id"], made["key_id"]}
    assert all(k["prefix"].endswith("…") and k["revoked_at"] is None for k in keys)

    server_app = make_service_app(Path(db), clock)
    with fast(LiveServer(server_app)) as server:
        headers = {"Authorization": f"Bearer {made['key']}"}
        with httpx.Client(base_url=server.url, headers=headers) as client:
            assert client.get("/v1/properties").status_code == 200
            assert client.post("/v1/properties", json={}).status_code == 403
            assert "revoked" in run("admin", "revoke-key", made["key_id"], "--db", db)
            r = client.get("/v1/properties")
            assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized"
        with httpx.Client(
            base_url=server.url, headers={"Authorization": f"Bearer {info['test_key']}"}
        ) as client:
            assert client.get("/v1/properties").status_code == 200
    keys = json.loads(run("admin", "list-keys", info["org_id"], "--db", db, "--json"))
    assert [k["id"] for k in keys if k["revoked_at"]] == [made["key_id"]]


def test_admin_errors_exit_non_zero(tmp_path: Path) -> None:
    db = str(tmp_path / "admin.db")
    info = json.loads(run("admin", "bootstrap", "--db", db, "--json"))
    for args in (
        ("admin", "revoke-key", "key_nothing", "--db", db),
        ("admin", "create-key", info["org_id"], "--scope", "everything", "--db", db),
        ("admin", "create-key", info["org_id"], "--environment", "staging", "--db", db),
        ("admin", "create-user", info["org_id"], "owner@example.com", "--db", db),
        ("admin", "create-user", "org_nothing", "x@example.com", "--db", db),
    ):
        result = runner.invoke(app, list(args))
        assert result.exit_code == 1, args
        assert "error:" in result.output
        assert "svc_" not in result.output


def test_admin_without_a_database_says_so_instead_of_creating_one(
    tmp_path: Path, monkeypatch
) -> None:
    """`bpservice admin create-key ORG` typed without --db in a folder with no database: an
    error naming the missing file (none is created), not "organisation has no owner"."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BPSERVICE_DB", raising=False)
    result = runner.invoke(app, ["admin", "create-key", "org_123"])
    assert result.exit_code == 1
    assert "no database at" in result.output and "--db" in result.output
    assert not (tmp_path / "bpservice.db").exists()
    listed = runner.invoke(app, ["admin", "list-keys"])
    assert listed.exit_code == 1 and not (tmp_path / "bpservice.db").exists()
    # with a database, an unknown organisation is named as such
    db = str(tmp_path / "real.db")
    run("admin", "bootstrap", "--db", db)
    unknown = runner.invoke(app, ["admin", "create-key", "org_nothing", "--db", db])
    assert unknown.exit_code == 1 and "no organisation org_nothing" in unknown.output
