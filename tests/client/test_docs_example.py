"""docs/client.md's library example, run exactly as printed (a separate Python process, the
key and URL from the environment as the example says) against the real service."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import Service, make_org

DOC = Path(__file__).resolve().parents[2] / "docs" / "client.md"


def library_example() -> str:
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## Library") :]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "docs/client.md has no python example under ## Library"
    return match.group(1)


def test_the_library_example_runs_as_printed(service: Service, tmp_path: Path) -> None:
    org = make_org(service, meters=1)
    script = tmp_path / "example.py"
    script.write_text(library_example(), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("BPSYNC_")}
    env.update(
        BPSYNC_API_KEY=org.key,
        BPSYNC_BASE_URL=service.base_url,
        BPSYNC_CONFIG_DIR=str(tmp_path / "config"),
        BPSYNC_STATE_DIR=str(tmp_path / "state"),
    )
    done = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "sandbox" and lines[1] == "1 properties in GB"
    assert len(lines) == 3 and lines[2].endswith(" owner")  # no batch error; the sync facade
    # the batch reading was stored (a second run would report an overlap at index 0)
    again = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120
    )
    assert "0 reading_overlap" in again.stdout, again.stdout + again.stderr
