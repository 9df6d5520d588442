"""What issue 32's cheaper request must keep: the key is looked up on every request, so a key
revoked through one instance is refused by every instance on the very next request, with the
scopes its row grants."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from bpservice import admin
from bpservice.app import create_app
from bpservice.settings import Settings


def test_a_revoked_key_is_refused_by_every_instance_on_the_next_request(tmp_path: Path) -> None:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'svc.db'}", run_workers=False)
    first, second = create_app(settings), create_app(settings)
    with first.state.db.write() as session:
        info = admin.bootstrap(session)
        scoped = admin.create_api_key(
            session, info["org_id"], environment="test", scopes=["properties:read"]
        )
    headers = {"Authorization": f"Bearer {scoped.key}"}
    with TestClient(first, headers=headers) as a, TestClient(second, headers=headers) as b:
        for client in (a, b):
            assert client.get("/v1/properties").status_code == 200
            # the scopes come from the key's row: the lookup did not widen them
            refused = client.get("/v1/buildings/bld_x/meters")
            assert refused.json()["error"]["code"] == "insufficient_scope"
        with first.state.db.write() as session:
            admin.revoke_api_key(session, scoped.id)
        for client in (b, a):
            r = client.get("/v1/properties")
            assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized"
        # the organisation's other keys still work
        other = {"Authorization": f"Bearer {info['test_key']}"}
        assert b.get("/v1/properties", headers=other).status_code == 200
