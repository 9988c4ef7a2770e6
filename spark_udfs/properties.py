"""Parse stored message properties (spec §7) like MessageDecoder.string2messageProperties.

Each property is ``name U+0001 value U+0002``. Keeping the broker's exact skip rules
means SQL sees the same map a consumer would, malformed segments included.
"""

NAME_VALUE_SEPARATOR = "\u0001"
PROPERTY_SEPARATOR = "\u0002"


def parse_message_properties(s: str | None) -> dict[str, str] | None:
    """Return the property map, or None for None (SQL null, where Java gives an empty map).

    A segment is kept only if its first U+0001 has a non-empty key before it and a
    non-empty value after it; the value keeps any later U+0001. Java's "shorter than
    3 chars" rule follows from that. Later duplicate keys overwrite earlier ones.
    """
    if s is None:
        return None
    properties: dict[str, str] = {}
    for segment in s.split(PROPERTY_SEPARATOR):
        sep = segment.find(NAME_VALUE_SEPARATOR)
        if 0 < sep < len(segment) - 1:
            properties[segment[:sep]] = segment[sep + 1 :]
    return properties
