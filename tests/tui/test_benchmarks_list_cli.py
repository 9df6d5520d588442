"""`bpsync benchmarks list` (issue 28, item 1): the portfolio's table of buildings on the command
line, as a table, `--json` and `--csv`, with search, sort and units; bad input is one line."""

from __future__ import annotations

import csv
import io
import json

import pytest
from typer.testing import CliRunner

from bpsync.cli.entry import app
from tests.tui.conftest import Seeded, login


def invoke(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def test_list_json_csv_and_table(seeded: Seeded) -> None:
    login(seeded.service)
    result = invoke("benchmarks", "list", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["units"] == "si" and len(data["buildings"]) == 6
    tower = next(b for b in data["buildings"] if b["building"] == "Tower A")
    assert tower["law"] == "LL97" and tower["gfa"] == 46_000
    assert tower["compliance"]["basis_year"] == 2025
    assert tower["compliance"]["periods"][0]["label"] == "2024\u20132029"
    assert tower["penalty_now"] == tower["compliance"]["periods"][0]["penalty"]
    assert tower["score"] is None and "a score needs 5" in tower["score_note"]

    result = invoke("benchmarks", "list", "--csv", "--units", "us", "--sort", "-gfa")
    rows = list(csv.reader(io.StringIO(result.stdout)))
    assert rows[0][2:6] == ["Building", "GFA ft²", "EUI kBtu/ft²", "kgCO₂e/ft²"]
    assert rows[1][2] == "Tower A" and float(rows[1][3]) == pytest.approx(46_000 * 10.7639)
    assert rows[1][-1] == "projected from 2025's emissions"

    result = invoke("benchmarks", "list", "--search", "boston", "--sort", "building")
    assert result.exit_code == 0
    assert "Buildings (2 of 6)" in result.stdout
    assert "North Block" in result.stdout and "Tower A" not in result.stdout
    assert "BERDO" in result.stdout and "projected from 2025's emissions" in result.stdout


def test_bad_sort_and_units_are_one_line(seeded: Seeded) -> None:
    login(seeded.service)
    result = invoke("benchmarks", "list", "--sort", "size")
    assert result.exit_code == 2 and "--sort takes one of" in result.output
    assert "Traceback" not in result.output
    result = invoke("benchmarks", "list", "--units", "imperial")
    assert result.exit_code == 2 and "units must be 'si' or 'us'" in result.output


def test_a_key_without_meter_access_still_lists_every_building(seeded: Seeded) -> None:
    """Compliance needs the meters' readings; a key that may not read them gets every other
    column, and the compliance cells say why they are empty."""
    key = seeded.service.new_key(["properties:read", "benchmarks:read"])
    login(seeded.service, key)
    result = invoke("benchmarks", "list", "--json")
    assert result.exit_code == 0, result.output
    rows = {b["building"]: b for b in json.loads(result.stdout)["buildings"]}
    assert len(rows) == 6 and rows["Tower A"]["eui"] is not None
    tower = rows["Tower A"]["compliance"]
    assert tower["status"] == "no data" and tower["reason"].startswith("Figures not available")
    assert rows["Riverside House"]["compliance"]["status"] == "not covered"
