"""The wheel a user installs: built from this checkout, installed into a fresh virtual environment
outside the repository, it has its built-in templates and the demo's sample data (package data
read through importlib.resources, not paths next to `src/`); without the `service` extra the
demo and `bpservice` say how to get the server instead of failing with a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_wheel_install_has_templates_and_runs_the_demo(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(ROOT)],
        check=True,
        capture_output=True,
    )
    wheel = next(dist.glob("bpsync-*.whl"))
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    bindir = env_dir / "bin"
    subprocess.run(
        [str(bindir / "python"), "-m", "pip", "install", "-q", str(wheel)],
        check=True,
        capture_output=True,
    )
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BPSYNC_", "PYTHON"))}
    env.update(
        HOME=str(home),
        BPSYNC_CONFIG_DIR=str(home / "config"),
        BPSYNC_STATE_DIR=str(home / "state"),
        BPSYNC_DATA_DIR=str(home / "data"),
        PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring",
    )

    def bpsync(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(bindir / "bpsync"), *args],
            cwd=home,  # nowhere near the repository
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )

    # The tool alone: templates work; the demo says how to get the service it embeds.
    listed = bpsync("--json", "templates", "list")
    assert listed.returncode == 0, listed.stderr
    names = {t["name"] for t in json.loads(listed.stdout)}
    assert {"utility_service_period", "pm_add_bills_v2", "green_button"} <= names
    where = bpsync("--json", "templates", "show", "green_button")
    path = json.loads(where.stdout)["path"]
    assert "site-packages" in path and str(ROOT) not in path  # the installed copy
    no_service = bpsync("demo", "--no-tui")
    assert no_service.returncode != 0 and "pip install 'bpsync[service]'" in no_service.stderr
    assert "Traceback" not in no_service.stderr
    server = subprocess.run(
        [str(bindir / "bpservice"), "--help"], env=env, capture_output=True, text=True
    )
    assert server.returncode == 2 and "pip install 'bpsync[service]'" in server.stderr

    subprocess.run(
        [
            str(bindir / "python"),
            "-m",
            "pip",
            "install",
            "-q",
            f"bpsync[service] @ {wheel.as_uri()}",
        ],
        check=True,
        capture_output=True,
    )
    demo = bpsync("demo", "--no-tui")
    assert demo.returncode == 0, demo.stderr
    assert "Portfolio benchmarks: 3 buildings, 32,500 m²" in demo.stdout
