"""How much a secret resists guessing, estimated from the value alone (issue 20, break 6).

Length is not strength: `"abcde" * 11` is 55 characters and `"a" * 38` is 38, and both are
guessed at once. The estimate is the smaller of
- Shannon's: length × the entropy of its character frequencies (38 × "a" → 0 bits), and
- the repeating unit's: a value that is a short block repeated is only as strong as that
  block (`"abcde" * 11` → 5 characters × log2(5) ≈ 12 bits).
A random 50-character Django key (`get_random_secret_key()`) estimates about 250 bits.
"""
from __future__ import annotations

import math
from collections import Counter

MIN_BITS = 128
# a floor that random secrets clear: 32 hex characters (`secrets.token_hex(16)`, `openssl rand -hex 16`)
# use fewer than 8 of the 16 digits once in 28 million; fewer than 10 once in 10,000 (the old floor)
MIN_DISTINCT = 8


def shannon_bits(value: str) -> float:
    if not value:
        return 0.0
    n = len(value)
    per_char = -sum(c / n * math.log2(c / n) for c in Counter(value).values())
    return n * per_char


def repeating_unit(value: str) -> str:
    """The shortest block that `value` is a repetition of (a prefix of it, possibly cut)."""
    for size in range(1, len(value) // 2 + 1):
        if all(value[i] == value[i % size] for i in range(size, len(value))):
            return value[:size]
    return value


def estimated_bits(value: str) -> float:
    return min(shannon_bits(value), shannon_bits(repeating_unit(value)))


def secret_weakness(value: str, *, min_length: int, min_bits: float = MIN_BITS) -> str | None:
    """Why `value` is too weak a secret, or None."""
    if len(value) < min_length:
        return f"{len(value)} characters (at least {min_length})"
    distinct = len(set(value))
    if distinct < MIN_DISTINCT:
        return f"{distinct} distinct characters (at least {MIN_DISTINCT})"
    bits = estimated_bits(value)
    if bits < min_bits:
        return f"about {bits:.0f} bits of entropy (at least {min_bits:.0f}: repeated or too few characters)"
    return None
