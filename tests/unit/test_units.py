"""SI and US units (bpsync.units, the format helpers, the profile's `units`): the conversions are
the shared reference's figures, and the default follows the portfolio's country."""

from __future__ import annotations

from pathlib import Path

import pytest

from bpsync import units as U
from bpsync.config import ConfigError, Profile, load_config, save_profile
from bpsync.tui import format as F


def test_conversions_are_the_reference_figures() -> None:
    assert U.area(1, "us") == pytest.approx(10.7639)
    assert U.eui(3.15459, "us") == pytest.approx(1.0)
    assert U.energy(0.293071, "us") == pytest.approx(1.0)
    assert U.energy(29.3071, "us", therms=True) == pytest.approx(1.0)
    assert U.intensity(10.7639, "us") == pytest.approx(1.0)
    assert U.area(5, "si") == 5 and U.eui(None, "us") is None


def test_formatted_with_their_symbols() -> None:
    assert F.area(8200, "si") == "8,200 m²"
    assert F.area(8200, "us") == "88,264 ft²"
    assert F.area(8200, "us", unit=False) == "88,264"
    assert F.eui(315.459, "us") == "100.0 kBtu/ft²"
    assert F.eui(None, "us") == F.DASH
    assert F.intensity(107.639, "us") == "10.00 kgCO₂e/ft²"
    assert F.energy(2930.71, "us", therms=True) == "100 therms"
    assert F.energy(1000, "si") == "1,000 kWh"
    assert F.money(1234.5) == "$1,234"


def test_default_follows_the_portfolio_country() -> None:
    assert U.default_units(["US", "US", "GB"]) == "us"
    assert U.default_units(["US", "GB"]) == "si"
    assert U.default_units(["GB", "FR", "US", "US"]) == "si"
    assert U.default_units([]) == "si"
    assert U.parse_units(" US ") == "us"
    with pytest.raises(ValueError, match="'si' or 'us'"):
        U.parse_units("imperial")


def test_a_profile_keeps_its_units(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    save_profile(Profile(name="nyc", units="us"), path=path)
    assert load_config(path).profiles["nyc"].units == "us"  # type: ignore[index]
    assert "units" not in Profile(name="x").to_toml_table()  # unset: follow the portfolio
    path.write_text('[profiles.bad]\nunits = "metric"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="units must be si or us"):
        load_config(path)
