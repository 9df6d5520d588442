"""schemathesis against the live service's own OpenAPI document, with every check (no 5xx,
responses and headers match the schema, status codes documented, auth enforced...), authenticated
with a bootstrapped key. Bounded and derandomized so it runs in CI; BPSYNC_PROOF_FULL=1 runs more
examples per operation."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi import checks

from bpservice.app import create_app
from bpservice.settings import Settings
from tests.conftest import FakeClock, LiveServer, Service, _bootstrap
from tests.proof.conftest import FULL, GENEROUS
from tests.service.conftest import Tree, ok, reading

EXAMPLES = 100 if FULL else 15
EXCLUDED = [checks.positive_data_acceptance, checks.negative_data_rejection]


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """One live service for the whole module, seeded with a small tree so that generated ids
    have something real next to them."""
    clock = FakeClock(dt.datetime(2026, 11, 20, 9, 30, tzinfo=dt.UTC))
    path: Path = tmp_path_factory.mktemp("fuzz") / "svc.db"
    app = create_app(
        Settings(
            database_url=f"sqlite:///{path}", rate_limits=GENEROUS, clock=clock, run_workers=False
        )
    )
    with LiveServer(app) as server:
        service = _bootstrap(app, clock, server.url)
        with service.client() as api:
            tree = Tree(api)
            ok(api.post(tree.readings, json=reading("2025-01-01", "2025-01-31")), 201)
        yield service


@pytest.fixture
def api_schema(fuzzed: Service) -> schemathesis.BaseSchema:
    return schemathesis.openapi.from_url(f"{fuzzed.base_url}/openapi.json")


# The /v1 API. The authorization server's pages (/oauth, {auth_url} in the spec) answer in OAuth's
# own formats and are attacked in tests/service/test_oauth.py (their undocumented error statuses
# are reported, not fuzzed here).
schema = schemathesis.pytest.from_fixture("api_schema").include(path_regex="^/v1/")


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
def test_the_service_keeps_its_own_contract(case: schemathesis.Case, fuzzed: Service) -> None:
    case.call_and_validate(
        headers={"Authorization": f"Bearer {fuzzed.test_key}"}, excluded_checks=EXCLUDED
    )
