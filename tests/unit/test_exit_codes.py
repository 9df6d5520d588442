"""Every exit code docs/client.md lists is one the commands use, and back: the table and the
`EXIT` enum never drift apart (exit 16 came with corrected bills, issue 30)."""

from __future__ import annotations

import re
from pathlib import Path

from bpsync.cli.output import EXIT
from bpsync.ingest.send.results import NOT_APPLIED

DOC = Path(__file__).resolve().parents[2] / "docs" / "client.md"


def test_the_documented_exit_codes_are_the_enum() -> None:
    section = DOC.read_text(encoding="utf-8").split("### Exit codes", 1)[1].split("\n## ", 1)[0]
    documented = {int(m) for m in re.findall(r"^\| (\d+) \|", section, re.MULTILINE)}
    assert documented == {int(e) for e in EXIT}
    assert NOT_APPLIED == EXIT.NOT_APPLIED == 16
