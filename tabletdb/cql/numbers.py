"""Integers to and from decimal text at any size.

Python refuses ``int(text)`` and ``str(n)`` past 4300 digits (a guard against slow conversions),
but a CQL varint or decimal has no size limit and its text must round-trip; these go through
``decimal.Decimal``, whose conversions have no such guard, when the plain ones refuse.
"""

from __future__ import annotations

import re
from decimal import Decimal

_DIGITS = re.compile(r"[+-]?[0-9]+")


def parse_int(text: str) -> int:
    """``int(text)`` for a string of decimal digits (with an optional sign) of any length."""
    try:
        return int(text)
    except ValueError:
        if len(text) <= 4300 or not _DIGITS.fullmatch(text.strip()):
            raise
        return int(Decimal(text.strip()))


def int_text(n: int) -> str:
    """``str(n)`` at any size."""
    try:
        return str(n)
    except ValueError:
        return str(Decimal(n))


def brief_int(n: int) -> str:
    """``n`` for an error message: its digits, or for a huge one its first digits and length."""
    if n.bit_length() < 200:
        return str(n)
    digits = int_text(n)
    return f"{digits[:20]}... ({len(digits.lstrip('-'))} digits)"
