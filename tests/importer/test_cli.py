"""The commands through typer (as `bpsync` runs them): import, register, templates, meters link."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from bpsync.cli.entry import app
from tests.conftest import Service
from tests.importer.conftest import SAMPLES


@pytest.fixture
def env(service: Service, monkeypatch: pytest.MonkeyPatch) -> Service:
    monkeypatch.setenv("BPSYNC_API_KEY", service.test_key)
    monkeypatch.setenv("BPSYNC_BASE_URL", service.base_url)
    return service


def invoke(*args: str):
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def test_register_then_import_then_noop(env, samples):
    reg = invoke("--json", "register", "import", str(SAMPLES / "portfolio_register.xlsx"))
    assert reg.exit_code == 0, reg.output
    assert json.loads(reg.stdout)["created"] == {"property": 2, "building": 3, "meter": 7}
    path = samples("utility_read_dates.csv")
    dry = invoke("import", str(path), "--dry-run")
    assert dry.exit_code == 0 and "Dry run: 24 reading(s)" in dry.stdout
    first = invoke("import", str(path), "--json")
    assert first.exit_code == 0, first.output
    body = json.loads(first.stdout)
    assert (body["status"], body["accepted"], body["environment"]) == ("complete", 24, "sandbox")
    again = invoke("import", str(path))
    assert again.exit_code == 0 and "already imported" in again.stdout
    bad = invoke("--json", "import", str(samples("deliberate_errors.xlsx")))
    assert bad.exit_code == 13
    assert json.loads(bad.stdout)["reject_report"].endswith("deliberate_errors.rejects.xlsx")


def test_invalid_register_sends_nothing(env):
    result = invoke("register", "import", str(SAMPLES / "deliberate_errors.xlsx"))
    assert result.exit_code == 6 and "nothing was sent" in result.output


def test_unknown_file_layout_gets_a_suggestion(env, tmp_path):
    path = tmp_path / "odd.csv"
    path.write_text("Site Meter,Start Date,End Date,Total Usage (kWh)\nA,2024-01-01,2024-01-31,5\n")
    result = invoke("--json", "import", str(path))
    assert result.exit_code == 6
    error = json.loads(result.stderr.strip().splitlines()[-1])["error"]
    assert "no template matches" in error["message"] and "suggested mapping" in error["message"]
    saved = invoke("templates", "suggest", str(path), "--save", "odd_site")
    assert saved.exit_code == 0 and "meter" in saved.stdout
    listed = invoke("--json", "templates", "list")
    names = {t["name"]: t["source"] for t in json.loads(listed.stdout)}
    assert names["odd_site"] == "yours" and names["long_csv"] == "shipped"
    shown = invoke("templates", "show", "odd_site")
    assert 'name = "odd_site"' in shown.stdout
    # the saved template now matches: meter "A" is unknown, so the row is rejected (exit 13)
    again = invoke("--json", "import", str(path))
    assert again.exit_code == 13 and json.loads(again.stdout)["template"] == "odd_site"
    incomplete = tmp_path / "worse.csv"
    incomplete.write_text("Foo,Bar\n1,2\n")
    refused = invoke("templates", "suggest", str(incomplete), "--save", "worse")
    assert refused.exit_code == 6 and "still needed" in refused.output


def test_meters_link(env):
    assert invoke("meters", "link", "ACCT-1", "mtr_abc").exit_code == 0
    assert invoke("meters", "link", "ACCT-1", "not-a-meter").exit_code == 6
    listed = invoke("--json", "meters", "link")
    assert json.loads(listed.stdout)["links"] == {"ACCT-1": "mtr_abc"}
    assert invoke("meters", "link", "ACCT-1", "--remove").exit_code == 0
    assert invoke("meters", "link", "ACCT-1", "--remove").exit_code == 5
