"""A watched folder's `update = true` (.bpsync-folder.toml): files dropped there apply
corrections of stored readings; without it (the default) they are left as they are (issue 30)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bpsync.config import ConfigError
from bpsync.watch.rules import FOLDER_RULES_FILE, read_folder_rules
from tests.conftest import Org, Service
from tests.watch.conftest import Harness, bills_text, expected, month, stored


def test_update_is_off_by_default_and_must_be_a_boolean(tmp_path: Path) -> None:
    assert read_folder_rules(tmp_path).update is False
    (tmp_path / FOLDER_RULES_FILE).write_text('template = "long_csv"\n')
    assert read_folder_rules(tmp_path).update is False
    (tmp_path / FOLDER_RULES_FILE).write_text("update = true\n")
    assert read_folder_rules(tmp_path).update is True
    (tmp_path / FOLDER_RULES_FILE).write_text('update = "yes"\n')
    with pytest.raises(ConfigError, match="update must be true or false"):
        read_folder_rules(tmp_path)


@pytest.mark.parametrize("update", [False, True])
def test_a_corrected_bill_dropped_in_the_folder(
    service: Service, org: Org, tmp_path: Path, update: bool
) -> None:
    folder = tmp_path / "drop"
    folder.mkdir()
    m = org.meters[0]
    first = [(m, *month(2024, 1), 100.0), (m, *month(2024, 2), 200.0)]
    fixed = [(m, *month(2024, 1), 100.0), (m, *month(2024, 2), 250.0)]
    (folder / FOLDER_RULES_FILE).write_text(f"update = {'true' if update else 'false'}\n")
    (folder / "jan-feb.csv").write_text(bills_text(first))
    h = Harness(folder, once=True)
    h.importer.options.update = read_folder_rules(folder).update  # as `bpsync watch` sets it
    h.thread.start()
    h.thread.join(timeout=30)
    assert stored(service, org) == expected(first)
    (folder / "jan-feb corrected.csv").write_text(bills_text(fixed))
    h = Harness(folder, once=True)
    h.importer.options.update = read_folder_rules(folder).update
    h.thread.start()
    h.thread.join(timeout=30)
    assert h.result is not None and h.result.stopped is None
    assert stored(service, org) == expected(fixed if update else first)
