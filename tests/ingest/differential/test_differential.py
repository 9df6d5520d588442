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


@pytest.mark.parametrize("name", sorted(CASES))
def test_same_outcome_as_the_per_row_engine(name: str, tmp_path: Path) -> None:
    got = json.loads(json.dumps(corpus.outcome(CASES[name], tmp_path)))
    want = GOLDEN[name]
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
