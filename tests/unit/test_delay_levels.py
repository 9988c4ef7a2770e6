"""Delay level parsing must accept and reject exactly what the broker does (spec §2.3)."""

import pytest

from spark_udfs.delay_levels import (
    DEFAULT_DELAY_LEVELS,
    UNIT_MS,
    DelayLevelError,
    parse_delay_levels,
)


def test_default_string_has_18_levels() -> None:
    levels = parse_delay_levels(DEFAULT_DELAY_LEVELS)
    assert len(levels) == 18
    assert [level for level, _, _ in levels] == list(range(1, 19))
    assert levels[2] == (3, "10s", 10_000)
    assert levels[-1] == (18, "2h", 7_200_000)


def test_schedule_service_test_config() -> None:
    assert parse_delay_levels("5s 8s") == [(1, "5s", 5_000), (2, "8s", 8_000)]


@pytest.mark.parametrize(
    ("token", "delay_ms"),
    [("1s", 1_000), ("1m", 60_000), ("1h", 3_600_000), ("1d", 86_400_000), ("0s", 0)],
)
def test_units(token: str, delay_ms: int) -> None:
    assert parse_delay_levels(token) == [(1, token, delay_ms)]


def test_unit_table() -> None:
    assert UNIT_MS == {"s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def test_negative_and_plus_signed_numbers_parse_like_long_parse_long() -> None:
    assert parse_delay_levels("-1s +2s") == [(1, "-1s", -1_000), (2, "+2s", 2_000)]


def test_trailing_spaces_are_dropped_like_java_split() -> None:
    assert parse_delay_levels("1s 5s ") == [(1, "1s", 1_000), (2, "5s", 5_000)]
    assert len(parse_delay_levels("1s 5s   ")) == 2


def test_product_wraps_like_java_long_multiplication() -> None:
    assert parse_delay_levels("9223372036854775807s") == [(1, "9223372036854775807s", -1_000)]


def _error(s: str | None) -> DelayLevelError:
    with pytest.raises(DelayLevelError) as info:
        parse_delay_levels(s)  # type: ignore[arg-type]
    return info.value


def test_unknown_unit_names_token_and_position() -> None:
    err = _error("1s 5s 5x")
    assert str(err) == (
        "invalid delay token '5x' at position 3 in \"1s 5s 5x\": unit must be one of s, m, h, d"
    )
    assert (err.token, err.position) == ("5x", 3)


def test_uppercase_unit_is_rejected() -> None:
    err = _error("1S")
    assert (err.token, err.position) == ("1S", 1)
    assert "unit" in str(err)


def test_double_space_is_an_empty_token() -> None:
    err = _error("1s  5s")
    assert (err.token, err.position) == ("", 2)
    assert "position 2" in str(err)


def test_leading_space_is_an_empty_first_token() -> None:
    err = _error(" 1s")
    assert (err.token, err.position) == ("", 1)


@pytest.mark.parametrize("s", ["", None])
def test_empty_or_none(s: str | None) -> None:
    assert str(_error(s)) == "empty delay level string"


def test_blank_string_has_no_tokens() -> None:
    assert "no tokens" in str(_error("   "))


@pytest.mark.parametrize(
    ("s", "token", "reason"),
    [
        ("s", "s", "not a valid Java long"),
        ("-s", "-s", "not a valid Java long"),
        ("1.5s", "1.5s", "not a valid Java long"),
        ("1_0s", "1_0s", "not a valid Java long"),
        ("9223372036854775808s", "9223372036854775808s", "not a valid Java long"),
        ("1s 1 s", "1", "not a valid Java long"),
        ("1sx", "1sx", "not a valid Java long"),
        ("10ms", "10ms", "not a valid Java long"),
        ("1w", "1w", "unit must be one of"),
    ],
)
def test_bad_tokens(s: str, token: str, reason: str) -> None:
    err = _error(s)
    assert err.token == token
    assert reason in str(err)


def test_number_is_checked_before_unit_like_java() -> None:
    assert "not a valid Java long" in str(_error("ax"))


def test_error_is_a_value_error() -> None:
    assert issubclass(DelayLevelError, ValueError)
