"""The commands as `bpsync` runs them: `import` lists corrections and exits 16 without
`--update` (naming the command that applies them), `import --update` applies them and counts
them apart, `history METER` (table and --json) shows the trail."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from bpsync.cli.entry import app
from tests.conftest import Org, Service
from tests.corrections.conftest import bills, month, stored

JAN, FEB = month(2024, 1), month(2024, 2)


@pytest.fixture
def env(service: Service, org: Org, monkeypatch: pytest.MonkeyPatch) -> Org:
    monkeypatch.setenv("BPSYNC_API_KEY", org.key)
    monkeypatch.setenv("BPSYNC_BASE_URL", service.base_url)
    # The history table folds long cells to the terminal's width: wide enough for the file name
    # whatever terminal (or xdist worker, 80 columns) runs the test.
    monkeypatch.setenv("COLUMNS", "200")
    return org


def invoke(*args: str):
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def test_import_update_and_history(service, env, tmp_path):
    m = env.meters[0]
    first = bills(tmp_path / "first.csv", [(m, *JAN, 1000, None, None), (m, *FEB, 900, 9.5, None)])
    assert invoke("import", str(first)).exit_code == 0
    fixed = bills(
        tmp_path / "fixed [v2].csv",
        [(m, *JAN, 1000, 120.0, None), (m, *FEB, 950, 9.5, None)],
    )
    dry = invoke("import", str(fixed), "--dry-run", "--json")
    assert dry.exit_code == 16, dry.output
    body = json.loads(dry.stdout)
    assert body["corrections_listed"] == 2 and len(body["replacements"]) == 2
    assert body["replacements"][0]["old"][0]["cost"] is None
    assert body["replacements"][0]["new"][0]["cost"] == 120.0
    plain = invoke("import", str(fixed))
    assert plain.exit_code == 16, plain.output
    assert "corrections" in plain.stdout and "not applied" in plain.stdout
    assert f"bpsync import '{fixed}' --update" in plain.stdout.replace("\n", "")
    assert [r[2] for r in stored(service, env, m)] == [1000, 900]

    applied = invoke("import", str(fixed), "--update", "--json")
    assert applied.exit_code == 0, applied.output
    result = json.loads(applied.stdout)
    assert (result["corrections"], result["rebills"], result["accepted"]) == (2, 0, 0)
    assert [r[2:4] for r in stored(service, env, m)] == [(1000, 120.0), (950, 9.5)]

    table = invoke("history", m)
    assert table.exit_code == 0 and "fixed [v2].csv" in table.stdout  # escaped, printed whole
    assert "correction" in table.stdout and "950" in table.stdout
    as_json = json.loads(invoke("history", m, "--json").stdout)
    assert as_json["meter"] == m and len(as_json["replacements"]) == 2
    feb = next(e for e in as_json["replacements"] if e["old"]["start_date"] == "2024-02-01")
    assert (feb["old"]["consumption"], feb["new"][0]["consumption"]) == (900, 950)
    assert invoke("history", "mtr_unknown").stdout.startswith("No replaced readings")
