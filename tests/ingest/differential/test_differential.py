"""The columnar engine against the per-row engine it replaced: for every file of the corpus
(tests/ingest/differential/corpus.py), the same accepted readings (exact values), the same
problems (code, reason, file, sheet, row, column, value, severity, meter, the row's cells, in the
same order), the same notes and summary. The expected outcomes were recorded by the per-row
engine before it was deleted (golden.json.gz, see corpus.py)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tests.ingest.differential import corpus

GOLDEN = json.loads(gzip.decompress(corpus.GOLDEN.read_bytes()))
CASES = {case.name: case for case in corpus.cases()}


def test_the_golden_covers_every_case() -> None:
    assert sorted(GOLDEN) == sorted(CASES)


# Deliberate changes since the per-row engine recorded the golden outcomes:
# - a row over a stored reading with other figures is a correction or rebill (issue 30): a
#   warning listing what it replaces, applied with --update, where it was the error
#   `overlap_stored`;
# - the notes name the file's columns the template reads nothing from (issue 27 item 6).
REPLACING = ("correction", "rebill")


def since_the_golden(want: dict, got: dict) -> dict:
    """The golden outcome with the deliberate changes applied, checked where they apply."""
    want = json.loads(json.dumps(want))
    if "error" in want:
        return want
    moved = [p for p in want["problems"] if p[0] == "overlap_stored"]
    if not moved:
        return want
    replacing = {p[4] for p in got["problems"] if p[0] in REPLACING}
    assert {p[4] for p in moved} == replacing  # the same rows, now listed as replacements
    want["problems"] = [p for p in want["problems"] if p[0] != "overlap_stored"]
    still = {p[4] for p in want["problems"] if p[8] == "error"}
    summary = want["summary"]
    summary["errors"] -= len(moved)
    summary["warnings"] += sum(1 for p in got["problems"] if p[0] in REPLACING)
    summary["rejected_rows"] -= len({p[4] for p in moved} - still)
    return want


@pytest.mark.parametrize("name", sorted(CASES))
def test_same_outcome_as_the_per_row_engine(name: str, tmp_path: Path) -> None:
    got = json.loads(json.dumps(corpus.outcome(CASES[name], tmp_path)))
    want = since_the_golden(GOLDEN[name], got)
    if "problems" in got:
        got["problems"] = [p for p in got["problems"] if p[0] not in REPLACING]
    if "notes" in got:
        unused = [n for n in got["notes"] if n.startswith("columns not used: ")]
        assert all("'" in n for n in unused)  # each unused column named
        got["notes"] = [n for n in got["notes"] if n not in unused]
    for key in sorted(set(want) | set(got)):
        if key in ("readings", "problems"):
            continue
        assert got.get(key) == want.get(key), key
    if "error" in want:
        return
    assert len(got["readings"]) == len(want["readings"])
    for a, b in zip(got["readings"], want["readings"], strict=True):
        assert a == b
    assert [p[:10] for p in got["problems"]] == [p[:10] for p in want["problems"]]
    # And each problem's row cells. A workbook cell holding only spaces reads as empty through
    # calamine (openpyxl kept the spaces); both are a blank cell to bpsync.
    assert [blank_spaces(p[10]) for p in got["problems"]] == [
        blank_spaces(p[10]) for p in want["problems"]
    ]


def blank_spaces(cells: list[str]) -> list[str]:
    return [c if c.strip() else "" for c in cells]
