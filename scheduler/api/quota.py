"""ResourceLists as the quota code handles them: exact quantities with their format, quotav1's
arithmetic (``k8s.io/apiserver/pkg/quota/v1 · Add, Mask, LessThanOrEqual``), the text the API
server writes for a quantity (``Quantity.String``) and the text Go's ``%v`` prints for one.

One home for the quota check both sides of a namespace's ResourceQuota make: the API server's
quota admission (``CheckRequest``: may this pod be created?) and Volcano's ``resourcequota``
plugin (may this PodGroup be enqueued?) run the same arithmetic, ``exceeds``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from .quantity import parse_quantity

DECIMAL_SI = "DecimalSI"
BINARY_SI = "BinarySI"
DECIMAL_EXPONENT = "DecimalExponent"

_BINARY_EXPONENTS = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_EXPONENTS = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_SUFFIXES = {e: s for s, e in _DECIMAL_EXPONENTS.items()}
_BINARY_SUFFIXES = {e // 10: s for s, e in _BINARY_EXPONENTS.items()}
# parseQuantityString: sign, digits, optional fraction, then the suffix
_GO_QUANTITY = re.compile(r"^([+-]?)(\d*)(?:\.(\d*))?(.*)$")
_MAX_INT64_FACTORS = 18
_NANO = -9


@dataclass(slots=True, frozen=True)
class Quantity:
    """A ``resource.Quantity``: its exact value and the format its text is written back in."""

    value: Fraction
    format: str = DECIMAL_SI

    def __str__(self) -> str:
        return canonical(self)


ResourceList = dict[str, Quantity]


def quantity_format(raw: Any) -> str:
    """The format ``ParseQuantity`` gives a quantity's text: its suffix's family."""
    text = _text(raw)
    suffix = _GO_QUANTITY.match(text)
    rest = suffix.group(4) if suffix else ""
    if rest in _BINARY_EXPONENTS:
        return BINARY_SI
    if rest[:1] in ("e", "E"):
        return DECIMAL_EXPONENT
    return DECIMAL_SI


def quantity(raw: Any) -> Quantity:
    """A quantity as the API machinery reads it (``raw`` already valid: a string or a YAML number)."""
    return Quantity(parse_quantity(raw), quantity_format(raw))


def resource_list(raw: Mapping[str, Any] | None) -> ResourceList:
    return {str(name): quantity(value) for name, value in (raw or {}).items()}


def text_list(rl: Mapping[str, Quantity]) -> dict[str, str]:
    """The ResourceList as the API server writes it back."""
    return {name: canonical(q) for name, q in sorted(rl.items())}


def _text(raw: Any) -> str:
    return raw.strip() if isinstance(raw, str) else str(raw)


# -- quotav1 ---------------------------------------------------------------------------------


def add_quantity(a: Quantity, b: Quantity) -> Quantity:
    """``Quantity.Add``: the sum keeps the receiver's format, unless the receiver is zero."""
    return Quantity(a.value + b.value, b.format if a.value == 0 else a.format)


def add(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> ResourceList:
    """``quota.Add``: the union of the keys, summed where both have one."""
    out = dict(a)
    for name, q in b.items():
        out[name] = add_quantity(out[name], q) if name in out else q
    return out


def mask(rl: Mapping[str, Quantity], names: Iterable[str]) -> ResourceList:
    """``quota.Mask``: only the entries named."""
    keep = set(names)
    return {name: q for name, q in rl.items() if name in keep}


def less_than_or_equal(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> list[str]:
    """``quota.LessThanOrEqual``: the names, among those both hold, where ``a`` exceeds ``b`` (sorted;
    empty when ``a ≤ b``)."""
    return sorted(name for name, limit in b.items() if name in a and a[name].value > limit.value)


def exceeds(requests: Mapping[str, Quantity], used: Mapping[str, Quantity],
            hard: Mapping[str, Quantity]) -> tuple[ResourceList, list[str]]:
    """The quota check of kube's quota admission and of Volcano's resourcequota plugin: the request
    masked to what the quota limits, and the names where ``used + request`` would pass ``hard``
    (empty: it fits)."""
    requested = mask(requests, hard)
    new_usage = mask(add(used, requested), requested)
    return requested, less_than_or_equal(new_usage, hard)


# -- text: what the API server writes, what Go prints -------------------------------------------


def canonical(q: Quantity) -> str:
    """``Quantity.String()``: the canonical text the API server writes back (``2000m`` → ``2``,
    ``1024Mi`` → ``1Gi``; a binary quantity under 1024 or not whole is written in DecimalSI)."""
    v = q.value
    if v == 0:
        return "0"
    fmt = q.format
    if fmt == BINARY_SI and (abs(v) < 1024 or v.denominator != 1):
        fmt = DECIMAL_SI
    if fmt == BINARY_SI:
        n, exp = int(v), 0
        while exp < 6 and n % 1024 == 0:
            n //= 1024
            exp += 1
        return f"{n}{_BINARY_SUFFIXES.get(exp, '') if exp else ''}"
    # DecimalSI / DecimalExponent: nano precision (rounded up), trailing zeros out, exponent a multiple of 3
    mantissa, exp = _nano_mantissa(v)
    while mantissa % 10 == 0:
        mantissa //= 10
        exp += 1
    if exp % 3 == 1:
        mantissa, exp = mantissa * 10, exp - 1
    elif exp % 3 == 2:
        mantissa, exp = mantissa * 100, exp - 2
    if fmt == DECIMAL_EXPONENT:
        return f"{mantissa}" if exp == 0 else f"{mantissa}e{exp}"
    suffix = _DECIMAL_SUFFIXES.get(exp)
    return f"{mantissa}{suffix}" if suffix is not None else f"{mantissa}e{exp}"


def _nano_mantissa(v: Fraction) -> tuple[int, int]:
    for k in range(10):
        scaled = v * 10**k
        if scaled.denominator == 1:
            return int(scaled), -k
    return math.ceil(v * 10**9), _NANO


def go_repr(raw: Any) -> str:
    """What Go's ``%v`` prints for the ``resource.Quantity`` that ``ParseQuantity`` makes of ``raw``:
    ``{{value scale} {<nil>} cached-text Format}``, as in Volcano's ``resource quota insufficient``
    event (``2`` → ``{{2 0} {<nil>} 2 DecimalSI}``, ``2000m`` → ``{{2000 -3} {<nil>}  DecimalSI}``).

    A quantity Go keeps as an ``inf.Dec`` (more than 18 digits, a fraction of a binary unit) prints
    a pointer there; it is shown as ``{{0 0} {<its text>}  Format}``."""
    text = _text(raw)
    if text == "0":
        return "{{0 0} {<nil>} 0 DecimalSI}"
    fmt = quantity_format(text)
    m = _GO_QUANTITY.match(text)
    sign, num, denom, suffix = m.group(1), m.group(2).lstrip("0") or "0", m.group(3) or "", m.group(4)
    if fmt == BINARY_SI:
        exponent, scale = _BINARY_EXPONENTS[suffix], 0
        if denom:
            return _slow(text, fmt)
        mantissa = 1 << exponent
        precision = 15 - len(num) - int(exponent * 3 / 10) - 1
    else:
        exponent = _DECIMAL_EXPONENTS[suffix] if fmt == DECIMAL_SI else int(suffix[1:])
        scale, mantissa = exponent, 1
        precision = _MAX_INT64_FACTORS - (len(num) + len(denom))
    if precision < 0:
        return _slow(text, fmt)
    scale -= len(denom)
    if scale < _NANO:
        return _slow(text, fmt)
    shifted = num + denom
    value = int(shifted) * mantissa
    if value >= 2**63:
        return _slow(text, fmt)
    if sign == "-":
        value = -value
    if fmt == BINARY_SI:
        cached = exponent % 10 == 0 and int(shifted) & 0x07 != 0
    else:
        cached = scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"
    return f"{{{{{value} {scale}}} {{<nil>}} {text if cached else ''} {fmt}}}"


def _slow(text: str, fmt: str) -> str:
    return f"{{{{0 0}} {{{canonical(quantity(text))}}}  {fmt}}}"


def go_map(rl: Mapping[str, Any]) -> str:
    """Go's ``%v`` of a ``v1.ResourceList`` whose values are the texts in ``rl``: ``map[k:v ...]``,
    keys sorted."""
    return "map[" + " ".join(f"{name}:{go_repr(rl[name])}" for name in sorted(rl)) + "]"


def pretty(rl: Mapping[str, Quantity]) -> str:
    """kube's quota admission ``prettyPrint``: ``name=value`` sorted, comma-joined."""
    return ",".join(f"{name}={canonical(rl[name])}" for name in sorted(rl))
