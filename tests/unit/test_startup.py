"""The command line starts without its heavy libraries (issue 28 item 7, issue 32 item 3): pandas,
pyarrow, numpy, Textual, openpyxl, watchdog and the service load only in the commands that use
them, and httpx and pydantic's models only once a command talks to a service. Every command, and
every cron tick of `watch --once`, paid about 1.5 s of CPU for them; bench/bench_startup.py
measures the start against the anchor `python -c "import typer, rich, httpx"`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = (
    "pandas",
    "pyarrow",
    "numpy",
    "textual",
    "openpyxl",
    "watchdog",
    "bpservice",
    "httpx",
    "pydantic",
    "python_calamine",
)

PROBE = """
import json, sys
from bpsync.cli.entry import main
sys.argv = ["bpsync", *sys.argv[1:]]
try:
    main()
except SystemExit:
    pass
sys.stderr.write("LOADED=" + json.dumps(sorted(m for m in HEAVY if m in sys.modules)) + "\\n")
""".replace("HEAVY", repr(HEAVY))


def loaded(*argv: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=60
    )
    line = next(x for x in done.stderr.splitlines() if x.startswith("LOADED="))
    return json.loads(line.removeprefix("LOADED="))


def test_the_entry_module_imports_nothing_heavy() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import json, sys, bpsync.cli.entry\n"
            f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert json.loads(done.stdout) == [], done.stderr


@pytest.mark.parametrize(
    "argv",
    [("--help",), ("version",), ("watch", "--help"), ("import", "--help"), ("export", "--help")],
    ids=lambda a: " ".join(a),
)
def test_help_and_version_load_nothing_heavy(argv: tuple[str, ...]) -> None:
    assert loaded(*argv) == []


def test_a_command_loads_what_it_uses() -> None:
    """`templates list` reads the shipped templates: the engine's rooms it needs, not pandas."""
    assert "pandas" not in loaded("templates", "list")


def test_the_app_and_its_screens_load_no_engine_or_service() -> None:
    """Every screen opens in under 0.3 s (bench/bench_screens.py): the import wizard's module
    loaded pandas and pyarrow when it was first shown (0.67 s); the engine now loads in the
    wizard's file-reading thread, the service never."""
    screens = sorted(
        p.stem
        for p in (Path(__file__).resolve().parents[2] / "src/bpsync/tui/screens").glob("*.py")
        if p.stem != "__init__"
    )
    code = (
        "import json, sys, importlib\n"
        "import bpsync.tui.app\n"
        f"for s in {screens!r}: importlib.import_module('bpsync.tui.screens.' + s)\n"
        "print(json.dumps(sorted(m for m in ('pandas', 'pyarrow', 'numpy', 'openpyxl', "
        "'python_calamine', 'bpservice') if m in sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert json.loads(done.stdout) == [], done.stderr
    assert "wizard" in screens and "reports" in screens
