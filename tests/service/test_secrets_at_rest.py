"""Webhook signing secrets are sealed at rest (issue 14, item 6).

The service must sign with the secret, so it cannot keep only a hash; what it keeps in the row is a
Fernet token that is useless without the server key. These tests read the rows directly.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from cryptography.fernet import Fernet
from sqlalchemy import select
from typer.testing import CliRunner

from bpservice import cli
from bpservice.db.webhook_models import WebhookSubscription
from bpservice.secretbox import PREFIX, SecretBox, SecretKeyError, parse_keys
from tests.conftest import Service
from tests.service.test_webhooks import Receiver, deliver, submit_reading, subscribe

SECRET = "a-tenant-chosen-secret-0123456789"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver().start()
    yield r
    r.stop()


def _stored(service: Service, webhook_id: str) -> str:
    with service.app.state.db.read() as session:
        return session.scalars(
            select(WebhookSubscription.secret).where(WebhookSubscription.id == webhook_id)
        ).one()


def test_the_row_holds_a_sealed_secret_and_deliveries_still_verify(
    service: Service, api: httpx.Client, receiver: Receiver
) -> None:
    sub = subscribe(api, receiver.url, ["meter.reading.created"])
    stored = _stored(service, sub["id"])
    assert stored.startswith(PREFIX) and receiver.secret not in stored

    submit_reading(api, month=2)
    assert deliver(service) == 1
    [got] = receiver.received
    assert got.svc_signature_ok and got.standard_signature_ok  # signed with the real secret

    # A new secret is sealed too, and the next delivery is signed with it.
    r = api.patch(f"/v1/webhooks/{sub['id']}", json={"secret": SECRET + "-rotated"})
    assert r.status_code == 200, r.text
    assert SECRET not in _stored(service, sub["id"])
    assert service.app.state.secret_box.open(_stored(service, sub["id"])) == SECRET + "-rotated"


def test_keys_rotate_and_a_wrong_key_fails_loudly() -> None:
    old, new = Fernet.generate_key(), Fernet.generate_key()
    sealed = SecretBox([old]).seal(SECRET)
    assert SecretBox([new, old]).open(sealed) == SECRET  # NEW,OLD: the old rows still open
    assert SecretBox([new, old]).seal(SECRET) != sealed
    with pytest.raises(SecretKeyError) as caught:
        SecretBox([new]).open(sealed)
    assert SECRET not in str(caught.value)
    # Rows written before sealing existed are read as they are (and sealed on their next update).
    assert SecretBox([new]).open("legacy-plaintext-secret") == "legacy-plaintext-secret"


def test_configured_keys_are_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    assert parse_keys(None) == [] and parse_keys("") == []
    key = Fernet.generate_key().decode()
    assert parse_keys(f"{key}, {key}") == [key.encode(), key.encode()]
    with pytest.raises(ValueError, match="Fernet keys"):
        parse_keys("not-a-key")

    printed = CliRunner().invoke(cli.app, ["admin", "new-secrets-key"])
    assert printed.exit_code == 0 and parse_keys(printed.output.strip())

    monkeypatch.setenv("BPSERVICE_SECRETS_KEY", "not-a-key")
    refused = CliRunner().invoke(cli.app, ["worker", "--db", "unused.db"])
    assert refused.exit_code != 0 and "Fernet keys" in refused.output
