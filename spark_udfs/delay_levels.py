"""Parse a broker ``messageDelayLevel`` string the way ScheduleMessageService.parseDelayLevel does.

The broker refuses to start on a bad token, so this parser raises instead of
guessing; levels are 1-based because level ``i + 1`` is token ``i`` (spec §2.3).
"""

DEFAULT_DELAY_LEVELS = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"

UNIT_MS: dict[str, int] = {"s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}

JAVA_LONG_MIN = -(2**63)
JAVA_LONG_MAX = 2**63 - 1


class DelayLevelError(ValueError):
    """A delay level string the broker would reject; names the token and its 1-based position."""

    def __init__(self, source: str | None, token: str | None, position: int | None, reason: str):
        self.source = source
        self.token = token
        self.position = position
        self.reason = reason
        if token is None:
            message = reason
        else:
            message = (
                f'invalid delay token {token!r} at position {position} in "{source}": {reason}'
            )
        super().__init__(message)


def _parse_java_long(text: str) -> int | None:
    """Long.parseLong: optional sign, then at least one decimal digit, within signed 64 bits.

    Java accepts any BMP Unicode decimal digit (Character.digit), but not Python's extras
    such as surrounding whitespace or underscores, so int() alone is too lenient.
    """
    digits = text[1:] if text[:1] in ("-", "+") else text
    if not digits or not all(ch.isdecimal() and ord(ch) <= 0xFFFF for ch in digits):
        return None
    value = int(text)
    return value if JAVA_LONG_MIN <= value <= JAVA_LONG_MAX else None


def _wrap_java_long(value: int) -> int:
    """Java's ``long * long`` silently wraps; the broker stores whatever that yields."""
    return (value + 2**63) % 2**64 - 2**63


def parse_delay_levels(s: str | None) -> list[tuple[int, str, int]]:
    """Return ``(level, token, delay_ms)`` per token, raising DelayLevelError where Java fails.

    Java's String.split(" ") keeps a leading empty token but drops trailing ones, so
    " 1s" is an error while "1s 5s " is fine. A blank string yields no levels at all,
    which leaves the broker without a delay table, so it is rejected too.
    """
    if not s:
        raise DelayLevelError(s, None, None, "empty delay level string")
    tokens = s.split(" ")
    while tokens and tokens[-1] == "":
        tokens.pop()
    if not tokens:
        raise DelayLevelError(s, None, None, f"delay level string {s!r} contains no tokens")

    levels: list[tuple[int, str, int]] = []
    for level, token in enumerate(tokens, start=1):
        # Same order of checks as Java: substring, Long.parseLong, then the unit lookup.
        if not token:
            raise DelayLevelError(s, token, level, "token is empty")
        number = _parse_java_long(token[:-1])
        if number is None:
            raise DelayLevelError(
                s, token, level, f"number {token[:-1]!r} is not a valid Java long"
            )
        unit = token[-1]
        if unit not in UNIT_MS:
            raise DelayLevelError(s, token, level, "unit must be one of s, m, h, d")
        levels.append((level, token, _wrap_java_long(number * UNIT_MS[unit])))
    return levels
