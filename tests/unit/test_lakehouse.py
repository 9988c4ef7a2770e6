"""The lakehouse remembers the landing it is built from, and refuses another one by mistake."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrylake.errors import LandingError
from retrylake.lakehouse import Lakehouse


def test_a_new_lakehouse_takes_its_landing_and_keeps_it(tmp_path: Path):
    first = Lakehouse(tmp_path / "lake", tmp_path / "a")
    first.claim_landing(full_refresh=False)
    first.claim_landing(full_refresh=False)  # the same landing again: fine
    assert first.landing_record.read_text().strip() == str(tmp_path / "a")


def test_another_landing_needs_a_full_refresh(tmp_path: Path):
    Lakehouse(tmp_path / "lake", tmp_path / "a").claim_landing(full_refresh=False)
    other = Lakehouse(tmp_path / "lake", tmp_path / "b")
    with pytest.raises(LandingError, match="--full-refresh"):
        other.claim_landing(full_refresh=False)
    other.claim_landing(full_refresh=True)
    assert other.landing_record.read_text().strip() == str(tmp_path / "b")


def test_only_a_named_landing_must_exist(tmp_path: Path):
    Lakehouse.resolve(str(tmp_path / "lake"), None).check_landing_exists()  # default: created
    with pytest.raises(LandingError, match="does not exist"):
        Lakehouse.resolve(str(tmp_path / "lake"), str(tmp_path / "nowhere")).check_landing_exists()
    Lakehouse.resolve(str(tmp_path / "lake"), "hdfs://nn/landing").check_landing_exists()


def test_a_move_to_another_landing_holds_until_its_full_refresh_succeeds(tmp_path: Path):
    """Until the full refresh that moved it succeeds, the tables may hold both landings' files:
    every other run is refused, on either landing."""
    Lakehouse(tmp_path / "lake", tmp_path / "a").claim_landing(full_refresh=False)
    moved = Lakehouse(tmp_path / "lake", tmp_path / "b")
    moved.claim_landing(full_refresh=True)  # ... and the run fails
    for landing in ("a", "b"):
        with pytest.raises(LandingError, match="did not finish"):
            Lakehouse(tmp_path / "lake", tmp_path / landing).claim_landing(full_refresh=False)
    moved.claim_landing(full_refresh=True)
    moved.landing_settled()
    moved.claim_landing(full_refresh=False)
    # a full refresh on the landing it has is no move
    moved.claim_landing(full_refresh=True)
    assert not moved.landing_switch_record.exists()
