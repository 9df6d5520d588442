"""Through `bpsync` as typed (typer): `import --meter`, `watch --once` with a per-folder meter
rule, and Rich markup in messages ("[fixed]" must print, not vanish)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bpsync.cli.entry import app
from bpsync.config import ConfigError
from bpsync.ingest.lookup.meter_map import meter_map_path
from bpsync.watch.rules import FOLDER_RULES_FILE, FolderRules, read_folder_rules
from tests.conftest import Service
from tests.importer.conftest import SAMPLES

USAGE = (
    "Service Start,Service End,Usage (kWh),Total Charges\n"
    "2024-01-05,2024-02-04,612,98.40\n"
    "2024-02-05,2024-03-05,577,93.10\n"
)


@pytest.fixture
def env(service: Service, monkeypatch: pytest.MonkeyPatch) -> Service:
    monkeypatch.setenv("BPSYNC_API_KEY", service.test_key)
    monkeypatch.setenv("BPSYNC_BASE_URL", service.base_url)
    return service


def invoke(*args: str):
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def stored(service: Service, ref_name: str) -> list[tuple]:
    """(start, end, consumption) of every reading of the meter named `ref_name`."""
    with service.client(service.test_key) as api:
        for p in api.get("/v1/properties").json()["data"]:
            for b in api.get(f"/v1/properties/{p['id']}/buildings").json()["data"]:
                for m in api.get(f"/v1/buildings/{b['id']}/meters").json()["data"]:
                    if m["name"] == ref_name:
                        rows = api.get(f"/v1/buildings/{b['id']}/meters/{m['id']}/readings")
                        return [
                            (r["start_date"], r["end_date"], r["consumption"])
                            for r in rows.json()["data"]
                        ]
    raise AssertionError(f"no meter {ref_name}")


def test_import_meter_option_and_watch_folder_rule(env, tmp_path):
    """A residential "Download usage" CSV (one account per file, no meter column), imported once
    with `--meter`, and once by the watcher from a folder whose rule names the meter."""
    reg = invoke("--json", "register", "import", str(SAMPLES / "portfolio_register.xlsx"))
    assert reg.exit_code == 0, reg.output
    path = tmp_path / "annex.csv"
    path.write_text(USAGE, encoding="utf-8")
    done = invoke("--json", "import", str(path), "--meter", "ELEC-4471-0107")
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["accepted"] == 2
    assert stored(env, "Annex Electric") == [
        ("2024-01-05", "2024-02-04", 612.0),
        ("2024-02-05", "2024-03-05", 577.0),
    ]
    folder = tmp_path / "inbox-main-electric"
    folder.mkdir()
    (folder / FOLDER_RULES_FILE).write_text('meter = "ELEC-4471-0091"\n', encoding="utf-8")
    (folder / "jan-feb.csv").write_text(USAGE, encoding="utf-8")
    watched = invoke("watch", str(folder), "--once", "--stable-seconds", "0")
    assert watched.exit_code == 0, watched.output
    assert stored(env, "Main Electric") == [
        ("2024-01-05", "2024-02-04", 612.0),
        ("2024-02-05", "2024-03-05", 577.0),
    ]


def test_folder_rules_file(tmp_path: Path):
    assert read_folder_rules(tmp_path) == FolderRules()
    (tmp_path / FOLDER_RULES_FILE).write_text('meter = "M-1"\ntemplate = "x"\n')
    assert read_folder_rules(tmp_path) == FolderRules(meter="M-1", template="x")
    (tmp_path / FOLDER_RULES_FILE).write_text('meters = "M-1"\n')
    with pytest.raises(ConfigError, match=r"\[meters\] must be a table"):
        read_folder_rules(tmp_path)
    (tmp_path / FOLDER_RULES_FILE).write_text('meterz = "M-1"\n')
    with pytest.raises(ConfigError, match="unknown key"):
        read_folder_rules(tmp_path)
    (tmp_path / FOLDER_RULES_FILE).write_text('[meters]\n"4471 0091" = "mtr_1"\n')
    assert read_folder_rules(tmp_path).meter_links == {"4471 0091": "mtr_1"}
    (tmp_path / FOLDER_RULES_FILE).write_text('date_order = "dmy"\n')
    assert read_folder_rules(tmp_path).date_order == "DMY"
    (tmp_path / FOLDER_RULES_FILE).write_text('date_order = "YMD"\n')
    with pytest.raises(ConfigError, match='date_order must be "DMY" or "MDY"'):
        read_folder_rules(tmp_path)


def test_watched_folder_date_order(env, tmp_path):
    """A folder of a European utility's exports: `date_order = "DMY"` reads 01/02/2024 as
    1 February where no date in the file proves the order."""
    reg = invoke("--json", "register", "import", str(SAMPLES / "portfolio_register.xlsx"))
    assert reg.exit_code == 0, reg.output
    folder = tmp_path / "inbox"
    folder.mkdir()
    rows = "Meter Number,Service Start,Service End,Usage,Usage Unit\n"
    rows += "ELEC-4471-0091,01/02/2024,03/02/2024,612,kWh\n"
    (folder / "bills.csv").write_text(rows, encoding="utf-8")
    (folder / FOLDER_RULES_FILE).write_text('date_order = "DMY"\n', encoding="utf-8")
    watched = invoke("watch", str(folder), "--once", "--stable-seconds", "0")
    assert watched.exit_code == 0, watched.output
    assert ("2024-02-01", "2024-02-03", 612.0) in stored(env, "Main Electric")


def test_headless_watcher_takes_meter_links_from_the_folder(env, tmp_path):
    """A watcher under systemd: only BPSYNC_API_KEY/BPSYNC_BASE_URL and no meter map of its own
    (the links were made on the manager's laptop). The folder's `[meters]` table carries them."""
    reg = invoke("--json", "register", "import", str(SAMPLES / "portfolio_register.xlsx"))
    assert reg.exit_code == 0, reg.output
    links = json.loads(invoke("--json", "meters", "link").stdout)["links"]
    for path in meter_map_path("default").parent.glob("*.json"):
        path.unlink()  # this machine has no map
    folder = tmp_path / "inbox"
    folder.mkdir()
    rows = "Meter Number,Service Start,Service End,Usage,Usage Unit\n"
    rows += "ELEC-4471-0091,2024-01-05,2024-02-04,612,kWh\n"
    (folder / "bills.csv").write_text(rows, encoding="utf-8")
    refused = invoke("watch", str(folder), "--once", "--stable-seconds", "0")
    assert refused.exit_code != 0  # without the links every row is refused
    assert "not in the meter map" in (folder / "failed" / "bills.rejects.csv").read_text()
    (folder / FOLDER_RULES_FILE).write_text(
        f'[meters]\n"ELEC-4471-0091" = "{links["ELEC-4471-0091"]}"\n', encoding="utf-8"
    )
    # The same bytes dropped again are tried again (the fix was outside the file).
    (folder / "failed" / "bills.csv").rename(folder / "bills.csv")
    watched = invoke("watch", str(folder), "--once", "--stable-seconds", "0")
    assert watched.exit_code == 0, watched.output
    assert ("2024-01-05", "2024-02-04", 612.0) in stored(env, "Main Electric")


def test_markup_in_messages_is_printed_literally(env, tmp_path):
    """A file no template fits: the refusal says "(or [fixed] meter …)" and it must show."""
    path = tmp_path / "odd.csv"
    path.write_text("Thing,When,Amount Used\nA,2024-01-01,5\n", encoding="utf-8")
    result = invoke("import", str(path), "--dry-run")
    assert result.exit_code != 0
    assert "[fixed] meter" in result.output, result.output


def test_templates_suggest_writes_the_detected_decimal(tmp_path):
    path = tmp_path / "export.csv"
    path.write_text(
        "Meter Number;Start Date;End Date;Usage;Unit\nZ-1;01.01.2024;31.01.2024;1.234,5;kWh\n",
        encoding="utf-8",
    )
    result = invoke("--json", "templates", "suggest", str(path))
    assert result.exit_code == 0, result.output
    assert 'decimal = ","' in json.loads(result.stdout)["toml"]


def test_suggest_never_maps_a_register_read_as_meter_or_usage():
    """Mimics a water utility CSV with the cumulative register next to the usage."""
    from bpsync.ingest.understand.templates import suggest_template

    s = suggest_template(["Account Number", "Meter Read", "Read Date", "Days", "Usage (kgal)"])
    assert s.matched["meter"] == "Account Number"
    assert s.matched["consumption"] == "Usage (kgal)"
    s = suggest_template(["Meter Read", "Previous Reading", "Read Date", "Days"])
    assert "meter" not in s.matched and "consumption" not in s.matched


def test_register_import_of_a_raw_pm_export_is_idempotent(env, tmp_path):
    """PM's own Properties + Meters export (see test_register_pm.py) through `register import`:
    the dry run states the one-building-per-property rule, the import creates exactly what the
    export holds, and a second run changes nothing."""
    from tests.ingest.conftest import write_xlsx
    from tests.ingest.fidelity.test_register_pm import PM_METERS, PM_PROPERTIES

    good = list(PM_PROPERTIES)  # the third property's type becomes one PM has
    good[4] = [*good[4][:7], "Refrigerated Warehouse", *good[4][8:]]
    path = write_xlsx(tmp_path / "pm_export.xlsx", {"Properties": good, "Meters": PM_METERS[:4]})
    dry = invoke("register", "import", str(path), "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert "one building named after the property" in dry.stdout
    assert "buildings: 3 would be created" in dry.stdout
    assert "properties: 3 would be created" in dry.stdout and "propertys" not in dry.stdout
    first = invoke("--json", "register", "import", str(path))
    assert first.exit_code == 0, first.output
    out = json.loads(first.stdout)
    assert out["created"] == {"property": 3, "building": 3, "meter": 3}
    assert out["rules"] and "PM 9000002" in " ".join(out["rules"])
    again = json.loads(invoke("--json", "register", "import", str(path)).stdout)
    assert again["created"] == {"property": 0, "building": 0, "meter": 0}
    assert again["updated"] == {"property": 0, "building": 0, "meter": 0}
    with env.client(env.test_key) as api:
        props = {p["internal_ref"]: p for p in api.get("/v1/properties").json()["data"]}
        tower = props["2451881"]
        [building] = api.get(f"/v1/properties/{tower['id']}/buildings").json()["data"]
        assert (building["name"], building["gfa_m2"], building["floors"]) == (
            "Midtown Tower",
            10000.0,
            102,
        )
        meters = api.get(f"/v1/buildings/{building['id']}/meters").json()["data"]
        assert sorted(m["name"] for m in meters) == ["Main Electric", "Main Electric (PM 9000002)"]
    # the PM meter id now finds its meter in an import
    bills = tmp_path / "bills.csv"
    bills.write_text(
        "Meter Number,Service Start,Service End,Usage,Usage Unit\n"
        "9000002,2024-01-01,2024-01-31,1234.5,kWh\n",
        "utf-8",
    )
    done = invoke("--json", "import", str(bills))
    assert done.exit_code == 0, done.output
    assert stored(env, "Main Electric (PM 9000002)") == [("2024-01-01", "2024-01-31", 1234.5)]


def test_a_second_concurrent_import_exits_busy(env, tmp_path):
    """Exit 15 (busy), not 6 (invalid input): the file is fine, a scheduler should retry."""
    import asyncio

    from bpsync.client import AsyncServiceClient
    from bpsync.ingest.run.import_file import _lock_for, target_of

    async def target() -> str:
        async with AsyncServiceClient(env.base_url, env.test_key) as client:
            return target_of(client)

    path = tmp_path / "annex.csv"
    path.write_text(USAGE, encoding="utf-8")
    lock = _lock_for(asyncio.run(target()))
    with lock:  # another import holds the journal
        busy = invoke("--json", "import", str(path), "--meter", "ELEC-4471-0107")
    assert busy.exit_code == 15, busy.output
    assert "another bpsync import" in busy.output
    reg = invoke("--json", "register", "import", str(SAMPLES / "portfolio_register.xlsx"))
    assert reg.exit_code == 0
    done = invoke("--json", "import", str(path), "--meter", "ELEC-4471-0107")
    assert done.exit_code == 0, done.output


def test_first_import_into_a_new_organisation_groups_reasons_and_says_what_fixes_them(
    env, tmp_path
):
    """No register imported yet: every row names a meter nobody linked. One line per kind of
    problem (not 36 identical ones), and the command that fixes it."""
    lines = ["Meter Number,Service Start,Service End,Usage,Usage Unit"]
    for m in range(3):
        for month in range(1, 13):
            lines.append(f"ELEC-{m},2024-{month:02d}-01,2024-{month:02d}-28,{100 + month},kWh")
    path = tmp_path / "first.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    # Rich reads the width from COLUMNS (a pytest-xdist worker has no terminal to ask).
    result = CliRunner().invoke(
        app, ["import", str(path), "--dry-run"], terminal_width=200, env={"COLUMNS": "200"}
    )
    out = result.output
    assert out.count("not in the meter map") == 1, out
    assert "2-37 (36 rows)" in out and "3 distinct values: 'ELEC-0', 'ELEC-1', 'ELEC-2'" in out
    assert "next step:" in out and "bpsync register import REGISTER.xlsx" in out
    assert "bpsync meters link REFERENCE METER_ID" in out
    as_json = json.loads(invoke("--json", "import", str(path), "--dry-run").stdout)
    assert len(as_json["problems"]) == 36  # --json keeps one problem per row
    assert any("bpsync meters link" in step for step in as_json["next_steps"])


def test_problem_groups_and_row_ranges():
    from bpsync.ingest.send.results import _ranges, group_problems

    assert _ranges([2, 3, 4, 7, 9, 10]) == "2-4, 7, 9-10"
    assert _ranges([1, 3, 5, 7, 9]) == "1, 3, 5, 7, …"
    problems = [
        {"row": 2, "severity": "error", "code": "bad_date", "reason": "not a date", "value": "x"},
        {"row": 3, "severity": "error", "code": "bad_date", "reason": "not a date", "value": "y"},
        {"row": 4, "severity": "error", "code": "bad_date", "reason": "in the future"},
    ]
    groups = group_problems(problems)
    assert [(g.where, g.text) for g in groups] == [
        ("2-3 (2 rows)", "not a date (2 distinct values: 'x', 'y')"),
        ("4", "in the future"),
    ]
