"""One logging setup: the client's retry lines land in the watcher's own log (JSON lines with
--log-json), not on a second, differently formatted stream."""

from __future__ import annotations

import json
import logging
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bpsync import logs
from bpsync.cli.entry import app


def dead_url() -> str:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


@pytest.fixture(autouse=True)
def _restore_logging():
    yield
    logs.setup(False)  # later tests get the default routing back


def test_client_retries_reach_the_watchers_json_log(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("BPSYNC_API_KEY", "svc_test_" + "k" * 32)
    monkeypatch.setenv("BPSYNC_BASE_URL", dead_url())
    folder = tmp_path / "inbox"
    folder.mkdir()
    # A meter id (D2's shape): only such values are looked up at the (dead) service.
    (folder / "bills.csv").write_text(
        "Meter ID,Service Start,Service End,Usage,Usage Unit\n"
        "mtr_0123456789abcdefghijklmn,2024-01-01,2024-01-31,5,kWh\n"
    )
    result = CliRunner().invoke(
        app, ["watch", str(folder), "--once", "--stable-seconds", "0", "--log-json"]
    )
    lines = [json.loads(line) for line in result.stderr.splitlines() if line.startswith("{")]
    retries = [r for r in lines if r["event"] == "client" and "retry" in r["message"]]
    assert retries, result.stderr
    assert retries[0]["logger"] == "bpsync.client" and retries[0]["level"] == "info"
    assert any(r["event"] == "unavailable" for r in lines)
    # every line of the run is JSON: nothing reached stderr in another format
    assert all(line.startswith("{") for line in result.stderr.splitlines() if line.strip())


def test_a_command_stays_quiet_unless_verbose(capsys) -> None:
    logs.setup(False)
    logging.getLogger("bpsync.client").info("GET /v1/x failed; retry 1 in 0.5 s")
    assert capsys.readouterr().err == ""
