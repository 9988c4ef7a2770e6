"""Properties parsing mirrors MessageDecoder.string2messageProperties (spec §7)."""

import pytest

from spark_udfs.properties import (
    NAME_VALUE_SEPARATOR,
    PROPERTY_SEPARATOR,
    parse_message_properties,
)

NV = NAME_VALUE_SEPARATOR
PS = PROPERTY_SEPARATOR


def test_none_is_null() -> None:
    assert parse_message_properties(None) is None


def test_empty_string_is_empty_map() -> None:
    assert parse_message_properties("") == {}


@pytest.mark.parametrize(
    ("s", "expected"),
    [
        (f"a{NV}1{PS}b{NV}2{PS}", {"a": "1", "b": "2"}),  # trailing separator, as stored
        (f"a{NV}1{PS}b{NV}2", {"a": "1", "b": "2"}),  # no trailing separator
        (f"{NV}1{PS}b{NV}2{PS}", {"b": "2"}),  # empty key
        (f"a{NV}{PS}b{NV}2{PS}", {"b": "2"}),  # empty value
        (f"a{NV}{PS}", {}),  # two-character segment
        (f"ab{PS}c{NV}3{PS}", {"c": "3"}),  # no name/value separator
        (f"a{NV}x{NV}y{PS}", {"a": f"x{NV}y"}),  # value keeps later separators
        (f"a{NV}1{PS}a{NV}2{PS}", {"a": "2"}),  # later duplicate wins
        (f"{PS}{PS}a{NV}1{PS}{PS}", {"a": "1"}),  # empty segments
        (f"{NV}{NV}x{PS}", {}),  # first separator at position 0 means an empty key
        (f"key{NV} {PS}", {"key": " "}),  # whitespace is a real value
    ],
)
def test_edge_cases(s: str, expected: dict[str, str]) -> None:
    assert parse_message_properties(s) == expected


def test_realistic_retry_properties() -> None:
    props = {
        "REAL_TOPIC": "%RETRY%group",
        "RETRY_TOPIC": "TopicTest",
        "UNIQ_KEY": "7F00000175CC18B4AAC259C3E2040000",
        "WAIT": "false",
        "DELAY": "3",
        "REAL_QID": "0",
    }
    encoded = "".join(f"{k}{NV}{v}{PS}" for k, v in props.items())
    assert parse_message_properties(encoded) == props
