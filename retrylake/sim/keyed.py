"""Keyed draws: a uniform that depends on its key only, not on what was drawn before it.

The generators draw what the world does to one delivery (does it fail, how long does it take,
how late does its redelivery come) from a value keyed by (seed, purpose, consumer group,
message, attempt index), so that two runs with the same seed and other retry settings see the
same outcome at the same attempt of the same message, however differently their histories
went. A key is a 64-bit int: `key_of` hashes names and numbers into one, `derive` adds a part
to a key, and `uniform` mixes a key into [0, 1) with splitmix64's finaliser (a bijection of
64-bit ints that spreads every input bit over the output), in pure Python and fast enough to
call for every delivery.

Callers keep one key per lifecycle (group and message), add an attempt's part once per
delivery (``key + attempt * SLOT``), and then one constant per purpose (`purpose`), so that a
draw costs one `uniform` call.
"""

from __future__ import annotations

import hashlib

MASK = (1 << 64) - 1
SLOT = 0x9E3779B97F4A7C15  # the golden-ratio step: parts of a key spread over 64 bits
_SCALE = 1.0 / (1 << 53)


def mix64(x: int) -> int:
    """splitmix64's finaliser of ``x`` (taken modulo 2**64)."""
    x &= MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def uniform(key: int) -> float:
    """A float in [0, 1), 53 random bits, that depends only on ``key`` (modulo 2**64)."""
    x = key & MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return ((x ^ (x >> 31)) >> 11) * _SCALE


def below(key: int, n: int) -> int:
    """An int in [0, n), keyed like `uniform` (its steps repeated: one call, not two)."""
    x = key & MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return int(((x ^ (x >> 31)) >> 11) * _SCALE * n)


def purpose(name: str) -> int:
    """The constant a draw for ``name`` adds to its key: the same in every run and version."""
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "big")


def key_of(*parts: str | int) -> int:
    """One 64-bit key from names and numbers (a seed, a group's name, a purpose)."""
    text = "\x00".join(str(part) for part in parts)
    return mix64(int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big"))


def derive(key: int, number: int) -> int:
    """The key of item ``number`` under ``key`` (a message under a group's key)."""
    return mix64(key + number * SLOT)
