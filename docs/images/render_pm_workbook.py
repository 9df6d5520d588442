"""Draw docs/images/pm_bills_workbook.png: the cells of a workbook `bpsync export pm-bills` really
wrote, against a throwaway local service (run from the repository root:
`.venv/bin/python docs/images/render_pm_workbook.py`). No spreadsheet program is needed: the
cells are read back with openpyxl and drawn as a grid with Pillow, as they are (values, header
line breaks, date format), with the workbook's sheet tabs underneath."""

from __future__ import annotations

import datetime as dt
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))  # the repository root, for tests.conftest

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
BOLD = "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"


def export(root: Path) -> Path:
    import keyring
    from typer.testing import CliRunner

    from bpsync.cli.entry import app
    from bpsync.ingest import link_meter
    from tests.conftest import FakeClock, LiveServer, MemoryKeyring, _bootstrap, make_service_app

    os.environ["BPSYNC_CONFIG_DIR"] = str(root / "config")
    os.environ["BPSYNC_STATE_DIR"] = str(root / "state")
    keyring.set_keyring(MemoryKeyring())
    clock = FakeClock()
    service_app = make_service_app(root / "svc.db", clock, per_key=10_000, bulk=10_000)
    with LiveServer(service_app) as server:
        svc = _bootstrap(service_app, clock, server.url)
        with svc.client() as api:
            prop = api.post(
                "/v1/properties",
                json={
                    "name": "Riverside Park",
                    "address": {"street": "1 River Rd", "city": "New York", "country": "US"},
                    "type": "office",
                    "internal_ref": "22178843",
                },
            ).json()["data"]
            bld = api.post(
                f"/v1/properties/{prop['id']}/buildings",
                json={
                    "name": "Riverside Tower",
                    "primary_use_type": "office",
                    "gfa_m2": 18500,
                    "year_built": 1987,
                    "floors": 22,
                },
            ).json()["data"]
            meters = {}
            for name, kind, unit, pm, base in (
                ("Main Electric", "electricity", "kWh", "8837461", 182_000),
                ("Gas Boiler", "natural_gas", "therms", "8837463", 5_400),
                ("Domestic Water", "water", "kgal", None, 410),
            ):
                meter = api.post(
                    f"/v1/buildings/{bld['id']}/meters",
                    json={"type": kind, "unit": unit, "name": name},
                ).json()["data"]["id"]
                meters[name] = meter
                readings = []
                for m in range(1, 7):
                    start = dt.date(2024, m, 1)
                    end = dt.date(2024, m + 1, 1) - dt.timedelta(days=1)
                    reading = {
                        "start_date": str(start),
                        "end_date": str(end),
                        "consumption": base + 1_250 * (m % 3) - 40 * m,
                        "cost": round((base + 1_250 * (m % 3)) * 0.21, 2),
                        "cost_currency": "USD",
                    }
                    if kind == "electricity":
                        reading["demand_kw"] = 410.0 + 12 * m
                    readings.append(reading)
                api.post(
                    f"/v1/buildings/{bld['id']}/meters/{meter}/readings/batch",
                    json={"readings": readings},
                )
                if pm:
                    link_meter("default", pm, meter)
        out = root / "pm_bills.xlsx"
        env = {"BPSYNC_API_KEY": svc.test_key, "BPSYNC_BASE_URL": svc.base_url}
        result = CliRunner().invoke(app, ["export", "pm-bills", "-o", str(out)], env=env)
        print(result.stdout)
    return out


def render(path: Path, target: Path, sheet: str, columns: int, rows: int) -> None:
    import openpyxl
    from PIL import Image, ImageDraw, ImageFont

    wb = openpyxl.load_workbook(path)
    ws = wb[sheet]
    font, bold = ImageFont.truetype(FONT, 13), ImageFont.truetype(BOLD, 13)

    def text(value: object, number_format: str) -> str:
        if value is None:
            return ""
        if isinstance(value, dt.datetime):
            return value.strftime("%m/%d/%Y") if "yyyy" in number_format else str(value)
        if isinstance(value, float) and value.is_integer():
            return str(int(value))
        return str(value)

    grid = [
        [text(ws.cell(r, c).value, ws.cell(r, c).number_format) for c in range(1, columns + 1)]
        for r in range(1, rows + 1)
    ]
    widths = []
    for c in range(columns):
        lines = [ln for row in grid for ln in row[c].split("\n")]
        widths.append(max(60, max(int(bold.getlength(ln)) for ln in lines) + 16))
    heights = [max(2, max(len(cell.split("\n")) for cell in grid[0])) * 17 + 10] + [24] * (rows - 1)
    gutter, tabs = 36, 30
    width, height = gutter + sum(widths) + 1, 22 + sum(heights) + tabs + 1
    image = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(image)
    x = gutter
    for c, w in enumerate(widths):  # column letters
        draw.rectangle([x, 0, x + w, 22], fill="#eeeeee", outline="#bbbbbb")
        draw.text((x + w / 2, 11), chr(ord("A") + c), font=font, fill="#555555", anchor="mm")
        x += w
    y = 22
    for r, row in enumerate(grid):
        h = heights[r]
        draw.rectangle([0, y, gutter, y + h], fill="#eeeeee", outline="#bbbbbb")
        draw.text((gutter / 2, y + h / 2), str(r + 1), font=font, fill="#555555", anchor="mm")
        x = gutter
        for c, cell in enumerate(row):
            w = widths[c]
            fill = "#d9e1f2" if r == 0 else "white"
            draw.rectangle([x, y, x + w, y + h], fill=fill, outline="#bbbbbb")
            draw.multiline_text(
                (x + 6, y + 5), cell, font=bold if r == 0 else font, fill="black", spacing=3
            )
            x += w
        y += h
    x = 6
    for name in wb.sheetnames:  # the tabs, hidden ones greyed
        hidden = wb[name].sheet_state != "visible"
        w = int((bold if name == sheet else font).getlength(name)) + 16
        colour = "#999999" if hidden else ("black" if name == sheet else "#333333")
        draw.rectangle(
            [x, y + 4, x + w, y + tabs - 4],
            fill="white" if name == sheet else "#f3f3f3",
            outline="#bbbbbb",
        )
        draw.text(
            (x + 8, y + tabs / 2),
            name,
            font=bold if name == sheet else font,
            fill=colour,
            anchor="lm",
        )
        x += w + 4
    image.save(target)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = export(Path(tmp))
        render(path, HERE / "pm_bills_workbook.png", "Add Bills-Electricity", 15, 8)


if __name__ == "__main__":
    main()
