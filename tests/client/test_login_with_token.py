"""`bpsync login --api-key --with-token` (issue 28 item 8): the key read from standard input, as
`gh auth login --with-token` reads a token, for headless set-ups. The issue's `echo $KEY | bpsync
login --api-key` printed a GetPassWarning; neither form warns now."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bpsync.cli.entry import app
from bpsync.cli.output import EXIT
from tests.client.conftest import MemoryKeyring
from tests.conftest import Service


def invoke(*args: str, input: str) -> object:
    return CliRunner().invoke(app, list(args), input=input, catch_exceptions=False)


@pytest.mark.parametrize("flags", [("--api-key", "--with-token"), ("--with-token",)])
def test_the_key_is_read_from_standard_input(
    service: Service, memory_keyring: MemoryKeyring, flags: tuple[str, ...]
) -> None:
    """Blank lines and spaces around the key are dropped; --with-token alone means --api-key."""
    result = invoke(
        "login",
        *flags,
        "--base-url",
        service.base_url,
        "--json",
        input=f"\n  {service.test_key} \n\n",
    )
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    assert memory_keyring.items[("bpsync", "default:api_key")] == service.test_key
    assert service.test_key not in result.output  # type: ignore[attr-defined]
    assert "API key:" not in result.output  # type: ignore[attr-defined]  (no prompt)
    assert json.loads(result.stdout)["environment"] == "sandbox"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("stdin", "said"),
    [("", "it held nothing"), ("svc_test_a\nsvc_test_b\n", "it held 2 lines")],
    ids=["empty", "two lines"],
)
def test_standard_input_that_is_not_one_key_is_refused(
    service: Service, memory_keyring: MemoryKeyring, stdin: str, said: str
) -> None:
    result = invoke(
        "login", "--api-key", "--with-token", "--base-url", service.base_url, input=stdin
    )
    assert result.exit_code == EXIT.INVALID  # type: ignore[attr-defined]
    assert f"--with-token reads one API key from standard input; {said}" in result.output  # type: ignore[attr-defined]
    assert not memory_keyring.items


def test_with_token_does_not_go_with_oauth(service: Service) -> None:
    result = invoke("login", "--oauth", "--with-token", "--base-url", service.base_url, input="x")
    assert result.exit_code == EXIT.USAGE  # type: ignore[attr-defined]
    assert "--with-token reads an API key" in result.output  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "flags", [("--api-key", "--with-token"), ("--api-key",)], ids=["with-token", "piped prompt"]
)
def test_a_piped_key_gives_no_warning(service: Service, tmp_path: Path, flags: tuple[str, ...]):
    """The real command in a new session without a terminal, the key piped in: stored, and
    nothing on stderr but bpsync's own lines (getpass warned it could not hide the input)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BPSYNC_")}
    env.update(
        BPSYNC_CONFIG_DIR=str(tmp_path / "config"),
        BPSYNC_STATE_DIR=str(tmp_path / "state"),
        PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring",
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "bpsync",
            "login",
            *flags,
            "--secret-store",
            "file",
            "--base-url",
            service.base_url,
        ],
        input=service.test_key + "\n",
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        start_new_session=True,
    )
    assert done.returncode == 0, done.stderr
    assert "Warning" not in done.stderr and "getpass" not in done.stderr, done.stderr
    assert service.test_key not in done.stdout + done.stderr
    status = subprocess.run(
        [sys.executable, "-m", "bpsync", "status", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert json.loads(status.stdout)["service"] == "reachable", status.stderr
