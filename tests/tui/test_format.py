"""The screens' pure rules: formatting, locks, sums, search, charts' series, errors, keymap."""

from __future__ import annotations

import datetime as dt

import pytest

from bpsync.client import errors as E
from bpsync.client.models import HistoryEntry, Period, Property, Reading, UseTypeArea
from bpsync.config import ConfigError
from bpsync.tui.format import (
    describe,
    elapsed,
    environment_badge,
    flags_text,
    gfa_sum,
    grade_bars,
    history_series,
    is_locked,
    matches,
    reading_row,
    size,
)
from bpsync.tui.keymap import load_keymap, parse_keymap
from bpsync.tui.screens.reports import default_period

NOW = dt.datetime(2026, 11, 20, 9, 30, tzinfo=dt.UTC)


def reading(start: str, end: str, flags: list[str] | None = None) -> Reading:
    return Reading(
        id="rdg_1",
        meter_id="mtr_1",
        start_date=dt.date.fromisoformat(start),
        end_date=dt.date.fromisoformat(end),
        consumption=10.0,
        unit="kWh",
        source="api",
        anomaly_flags=flags or [],
        created_at=NOW,
    )


def test_a_reading_is_locked_when_it_ends_on_or_before_locked_through() -> None:
    lock = dt.date(2026, 6, 30)
    assert is_locked(reading("2026-06-01", "2026-06-30"), lock)
    assert not is_locked(reading("2026-06-15", "2026-07-14"), lock)
    assert not is_locked(reading("2026-01-01", "2026-01-31"), None)
    assert "locked" in reading_row(reading("2026-06-01", "2026-06-30"), lock)[-1].plain
    assert reading_row(reading("2026-07-01", "2026-07-31"), lock)[-1].plain == ""


def test_anomaly_flags_are_highlighted() -> None:
    text = flags_text(["spike"])
    assert text.plain == "spike" and "yellow" in str(text.spans[0].style)
    assert "red" in str(flags_text(["negative"]).spans[0].style)
    assert flags_text([]).plain == "\u2013"


def test_gfa_sum_of_use_types() -> None:
    assert (
        gfa_sum(
            [UseTypeArea(type="office", gfa_m2=7400.1), UseTypeArea(type="retail", gfa_m2=799.9)]
        )
        == 8200.0
    )
    assert gfa_sum(None) == 0


def test_search_matches_every_word_anywhere() -> None:
    prop = Property.model_validate(
        {
            "id": "prp_abc",
            "name": "Galerie Haussmann",
            "address": {"street": "40 Boulevard Haussmann", "city": "Paris", "country": "FR"},
            "type": "retail",
            "internal_ref": "FR-7",
            "status": "active",
            "building_count": 1,
            "total_gfa_m2": 1.0,
            "created_at": NOW,
            "updated_at": NOW,
        }
    )
    assert matches(prop, "haussmann paris") and matches(prop, "fr-7") and matches(prop, "")
    assert matches(prop, "PRP_ABC") and not matches(prop, "abc")
    assert not matches(prop, "london")


def test_history_is_charted_oldest_first_skipping_gaps() -> None:
    entries = [
        HistoryEntry(period=Period(end=dt.date(2026, 10, 31)), eui_kwh_m2=200.0, svc_score=None),
        HistoryEntry(period=Period(end=dt.date(2025, 10, 31)), eui_kwh_m2=None, svc_score=55),
        HistoryEntry(period=Period(end=dt.date(2024, 10, 31)), eui_kwh_m2=220.0, svc_score=50),
    ]
    assert history_series(entries, "eui_kwh_m2") == (["2024-10", "2026-10"], [220.0, 200.0])
    assert history_series(entries, "svc_score") == (["2024-10", "2025-10"], [50.0, 55.0])


def test_grade_bars_always_show_a_to_f() -> None:
    assert grade_bars({"B": 2, "E": 1}) == (["A", "B", "C", "D", "E", "F"], [0, 2, 0, 0, 1, 0])


def test_badges() -> None:
    assert environment_badge("production") == ("LIVE", "-live")
    assert environment_badge("sandbox") == ("SANDBOX", "-sandbox")
    assert environment_badge(None)[1] == "-oauth"
    assert environment_badge(None, signed_in=False)[0] == "NOT SIGNED IN"


def test_errors_read_as_sentences() -> None:
    locked = E.LockedError(
        403, "building_locked", "Locked.", extra={"locked_through": "2026-06-30"}
    )
    assert describe(locked) == "The building is locked through 2026-06-30."
    limited = E.RateLimitError(429, "rate_limit_exceeded", "Slow down.")
    assert describe(limited).startswith("Rate limited")
    assert "cannot be reached" in describe(E.APIConnectionError("refused"))
    assert "(404 not_found)" in describe(E.NotFoundError(404, "not_found", "No such property."))


def test_small_formatters() -> None:
    assert elapsed(NOW, NOW + dt.timedelta(seconds=42)) == "42s"
    assert elapsed(NOW, NOW + dt.timedelta(seconds=185)) == "3m 05s"
    assert elapsed(NOW, NOW + dt.timedelta(hours=1, minutes=2)) == "1h 02m"
    assert size(512) == "512 B" and size(4400) == "4.3 KB"
    assert default_period(dt.date(2026, 11, 20)) == (dt.date(2025, 1, 1), dt.date(2025, 12, 31))


def test_keymap_from_the_config_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    config = tmp_path / "config" / "config.toml"
    assert load_keymap(config) == {}
    config.parent.mkdir()
    config.write_text(
        'default_profile = "default"\n[keymap]\n"portfolio.archive" = "A"\n'
        '"app.help" = ["f1", "question_mark"]\n'
    )
    assert load_keymap(config) == {"portfolio.archive": "A", "app.help": "f1,question_mark"}
    with pytest.raises(ConfigError):
        parse_keymap({"archive": "A"})
    with pytest.raises(ConfigError):
        parse_keymap({"portfolio.archive": "a b; rm"})
    config.write_text("[keymap\n")
    with pytest.raises(ConfigError):
        load_keymap(config)


def test_storing_a_key_keeps_the_keymap_table() -> None:
    from bpsync.config import Profile, load_config
    from bpsync.paths import config_file
    from bpsync.tui.connection import store_key

    config_file().parent.mkdir(parents=True)
    config_file().write_text('[keymap]\n"portfolio.archive" = "A"\n')
    store_key(Profile(name="ana"), "svc_test_" + "k" * 32)
    assert load_keymap() == {"portfolio.archive": "A"}
    assert load_config().names == ["ana"]
    assert "svc_test_" not in config_file().read_text()
