"""The import wizard drives bpsync.ingest against the real service: file → sheet/preview →
mapping (template matched, saved as a user template) → validation with the offending rows →
plan → the full import → summary with the reject report."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import DataTable, DirectoryTree

from bpsync.paths import user_templates_dir
from bpsync.tui import messages as M
from tests.tui.conftest import Messages, Seeded, login, until
from tests.tui.test_screens import SIZE, ids, make_app, rows, screen_name, text

pytestmark = pytest.mark.anyio


async def test_wizard_imports_a_file_end_to_end(seeded: Seeded, tmp_path: Path) -> None:
    service = seeded.service
    with service.client() as api:
        prop = next(p for p in ids(api, "/v1/properties") if p["name"] == "Spreeufer Campus")
        building = ids(api, f"/v1/properties/{prop['id']}/buildings")[0]
        meter = next(
            m
            for m in ids(api, f"/v1/buildings/{building['id']}/meters")
            if m["type"] == "electricity"
        )
    folder = tmp_path / "bills"
    folder.mkdir()
    (folder / "notes.md").write_text("not importable")
    bills = folder / "bills.csv"
    bills.write_text(
        "Meter ID,Start Date,End Date,Consumption,Unit\n"
        f"{meter['id']},2026-11-01,2026-11-15,50000,kWh\n"  # new, fine
        f"{meter['id']},2026-13-01,2026-11-15,50000,kWh\n"  # row 3: not a date
        f"{meter['id']},2026-10-01,2026-10-31,126000,kWh\n"  # row 4: already stored
        "mtr_doesnotexist,2026-11-01,2026-11-15,10,kWh\n"  # row 5: unknown meter
    )
    login(service)
    msgs = Messages()
    app = make_app(import_dir=folder)
    async with app.run_test(size=SIZE, message_hook=msgs) as pilot:
        await until(pilot, lambda: screen_name(app) == "PortfolioScreen")
        await pilot.press("f6")
        await until(pilot, lambda: screen_name(app) == "ImportWizardScreen")
        wizard = app.screen
        tree = wizard.query_one("#files", DirectoryTree)
        await until(pilot, lambda: len(tree.root.children) > 0)
        assert [str(n.label) for n in tree.root.children] == ["bills.csv"]  # only importable files
        tree.focus()
        tree.move_cursor(tree.root.children[0])
        await pilot.press("enter")
        await until(pilot, lambda: msgs.of(M.WizardStep))
        assert wizard.step == "preview"
        preview = rows(app, "#preview-table")
        assert len(preview) == 4 and preview[0][:2] == ["2", meter["id"]]

        await pilot.press("ctrl+right")
        assert wizard.step == "mapping" and wizard.template.name == "long_csv"
        mapping = {r[0]: r[1] for r in rows(app, "#mapping-table")}
        assert "Start Date" in mapping["start_date"] and "Meter ID" in mapping["meter"]
        wizard.query_one("#template-name").value = "my_bills"
        await pilot.click("#save-template")
        await until(pilot, lambda: (user_templates_dir() / "my_bills.toml").exists())
        assert wizard.template.name == "my_bills"

        await pilot.press("ctrl+right")
        await until(pilot, lambda: wizard.validated is not None)
        summary = wizard.validated.result.summary()
        assert summary["readings"] == 1 and summary["rejected_rows"] >= 2
        problems = rows(app, "#problems")
        bad_rows = {r[0] for r in problems}
        assert {"3", "5"} <= bad_rows
        date_problem = next(r for r in problems if r[0] == "3")
        assert "2026-13-01" in date_problem[2] and "2026-13-01" in date_problem[5]
        assert "1 readings" in text(app, "#validation-summary")
        table = wizard.query_one("#problems", DataTable)
        table.move_cursor(row=[r[0] for r in problems].index("3"))
        await until(pilot, lambda: "row 3" in text(app, "#problem-detail"))

        # 5: the engine's dry run plans it, then the real import sends it.
        await pilot.press("ctrl+right")
        assert wizard.step == "plan"
        await until(pilot, lambda: "batch call" in text(app, "#plan-info"))
        planned = next(m.payload for m in msgs.of(M.WizardStep) if m.step == "planned")
        assert planned.status == "dry-run" and planned.plan["readings"] == 1
        await pilot.press("ctrl+s")
        await until(pilot, lambda: [m for m in msgs.of(M.WizardStep) if m.step == "submitted"])
        done = next(m.payload for m in msgs.of(M.WizardStep) if m.step == "submitted")
        assert (done.status, done.accepted) == ("complete", 1) and done.rejected >= 2
        assert msgs.of(M.SubmitProgress)[-1].accepted == 1
        report = Path(done.reject_report)
        assert report == folder / "bills.rejects.csv" and "2026-13-01" in report.read_text()
        assert str(report) in text(app, "#summary")
    with service.client() as api:
        stored = ids(api, f"/v1/buildings/{building['id']}/meters/{meter['id']}/readings")
        assert any(r["start_date"] == "2026-11-01" and r["consumption"] == 50000 for r in stored)
