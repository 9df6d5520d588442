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


def test_unknown_file_layout_is_inferred_saved_and_suggested(env, tmp_path):
    """No template names these columns: the import reads them from headers and values, says so,
    and `--save-template` / `templates suggest --save` keep the same mapping."""
    path = tmp_path / "odd.csv"
    path.write_text("Site Meter,Start Date,End Date,Total Usage (kWh)\nA,2024-01-01,2024-01-31,5\n")
    dry = invoke("import", str(path), "--dry-run")
    said = " ".join(dry.output.split())
    assert "no template names these columns, so they were read from headers and values" in said
    assert "meter: 'Site Meter'" in said and "unit: kWh (from the header" in said
    # saved first, then the import reads with it; meter "A" is linked to nothing: the row is
    # refused with its reason (exit 13)
    saved = invoke("--json", "import", str(path), "--save-template", "odd_site")
    assert saved.exit_code == 13 and json.loads(saved.stdout)["template"] == "odd_site"
    assert "saved the inferred mapping as template 'odd_site'" in saved.stderr
    shown = invoke("templates", "show", "odd_site")
    assert 'name = "odd_site"' in shown.stdout and '"Site Meter"' in shown.stdout
    listed = invoke("--json", "templates", "list")
    names = {t["name"]: t["source"] for t in json.loads(listed.stdout)}
    assert names["odd_site"] == "yours" and names["long_csv"] == "shipped"
    # the saved template now matches the file by its columns
    again = invoke("--json", "import", str(path), "--force")
    assert again.exit_code == 13 and json.loads(again.stdout)["template"] == "odd_site"
    suggested = invoke("--json", "templates", "suggest", str(path))
    assert json.loads(suggested.stdout)["matched"] == {
        "start_date": "Start Date",
        "end_date": "End Date",
        "consumption": "Total Usage (kWh)",
        "meter": "Site Meter",
    }
    refused = invoke("import", str(path), "--save-template", "twice")
    assert refused.exit_code == 6 and "already reads this file" in refused.output
    incomplete = tmp_path / "worse.csv"
    incomplete.write_text("Foo,Bar\n1,2\n")
    refused = invoke("templates", "suggest", str(incomplete), "--save", "worse")
    assert refused.exit_code == 6 and "still needed" in refused.output
    unknown = invoke("--json", "import", str(incomplete))
    assert unknown.exit_code == 6
    error = json.loads(unknown.stderr.strip().splitlines()[-1])["error"]
    assert "no template matches" in error["message"] and "suggested mapping" in error["message"]


def test_date_order_option(env, tmp_path):
    """`--date-order DMY` reads 01/02/2026 as 1 February where nothing in the file decides."""
    path = tmp_path / "dmy.csv"
    path.write_text("Meter Number,Start Date,End Date,Usage\nA,01/02/2026,03/02/2026,5\n")
    refused = invoke("import", str(path), "--dry-run")
    assert refused.exit_code == 6 and "could be day-first or month-first" in refused.output
    dry = invoke("import", str(path), "--dry-run", "--date-order", "DMY")
    said = " ".join(dry.output.split())
    assert "dates such as 03/04 read day-first where the file does not say" in said


def test_meters_link(env):
    assert invoke("meters", "link", "ACCT-1", "mtr_abc").exit_code == 0
    assert invoke("meters", "link", "ACCT-1", "not-a-meter").exit_code == 6
    listed = invoke("--json", "meters", "link")
    assert json.loads(listed.stdout)["links"] == {"ACCT-1": "mtr_abc"}
    assert invoke("meters", "link", "ACCT-1", "--remove").exit_code == 0
    assert invoke("meters", "link", "ACCT-1", "--remove").exit_code == 5
