"""Kubernetes resource quantities (k8s.io/apimachinery/pkg/api/resource).

Grammar::

    quantity        ::= <signedNumber><suffix>
    signedNumber    ::= [+-] digits [ . digits ] | [+-] . digits
    suffix          ::= binarySI | decimalSI | decimalExponent
    binarySI        ::= Ki | Mi | Gi | Ti | Pi | Ei
    decimalSI       ::= n | u | m | "" | k | M | G | T | P | E
    decimalExponent ::= e<signedInt> | E<signedInt>

Values are kept exact (``Fraction``); conversion to the scheduler's floats
follows the API machinery: ``milli_value`` and ``value`` round up, as
``Quantity.MilliValue()`` and ``Quantity.Value()`` do.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_QUANTITY = re.compile(
    r"^(?P<number>[+-]?(?:\d+(?:\.\d*)?|\.\d+))"
    r"(?:(?P<binary>Ki|Mi|Gi|Ti|Pi|Ei)|(?P<exp>[eE][+-]?\d+)|(?P<decimal>[numkMGTPE]?))$"
)


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def parse_quantity(raw: object) -> Fraction:
    """Parse a quantity as the API server would; ints and floats are accepted as YAML gives them."""
    if isinstance(raw, bool):
        raise QuantityError(f"quantities must match the regular expression, got {raw!r}")
    if isinstance(raw, int):
        if abs(raw) > _LARGEST:
            raise QuantityError(f"quantity out of range: {raw!r}")
        return Fraction(raw)
    if isinstance(raw, float):
        if not math.isfinite(raw):
            raise QuantityError(f"quantities must be finite, got {raw!r}")
        if abs(raw) > _LARGEST:
            raise QuantityError(f"quantity out of range: {raw!r}")
        return Fraction(str(raw))
    if not isinstance(raw, str):
        raise QuantityError(f"quantities must be a string or a number, got {type(raw).__name__}")
    q = _parse_text(raw)
    if abs(q) > _LARGEST:
        raise QuantityError(f"quantity out of range: {raw!r}")
    return q


# the largest magnitude accepted, as for a written exponent (|e| ≤ 100): beyond any real capacity, and
# within what the scheduler's float arithmetic holds
_LARGEST = 10**100


@lru_cache(maxsize=4096)
def _parse_text(raw: str) -> Fraction:
    """Quantity strings repeat across pods and nodes: parse each once."""
    text = raw.strip()
    match = _QUANTITY.match(text)
    if match is None:
        raise QuantityError(f"quantities must match the regular expression, got {raw!r}")
    number = Fraction(match["number"])
    if match["binary"]:
        return number * _BINARY[match["binary"]]
    if match["exp"]:
        exponent = int(match["exp"][1:])
        if abs(exponent) > 100:
            raise QuantityError(f"quantity exponent out of range in {raw!r}")
        return number * Fraction(10) ** exponent
    return number * _DECIMAL[match["decimal"] or ""]


def milli_value(q: Fraction) -> int:
    """``Quantity.MilliValue()``: thousandths, rounded up."""
    return math.ceil(q * 1000)


def value(q: Fraction) -> int:
    """``Quantity.Value()``: whole units, rounded up."""
    return math.ceil(q)


def format_milli(milli: float) -> str:
    """A DecimalSI quantity from thousandths: ``2000`` → ``"2"``, ``500`` → ``"500m"``."""
    m = int(round(milli))
    if m % 1000 == 0:
        return str(m // 1000)
    return f"{m}m"


def format_bytes(n: float) -> str:
    """A BinarySI quantity: the largest binary suffix that divides exactly, as the API prints it."""
    b = int(round(n))
    if b == 0:
        return "0"
    for suffix, factor in (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if b % factor == 0:
            return f"{b // factor}{suffix}"
    return str(b)
