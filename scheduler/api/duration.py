"""Go's ``time.ParseDuration``, to the letter: what Volcano reads from annotations and plugin arguments
(``sla-waiting-time``, ``tdm.evict.period``).

``[-+]?([0-9]*(\\.[0-9]*)?[a-z]+)+`` with the units ``ns``, ``us`` (``µs``, ``μs``), ``ms``, ``s``,
``m`` and ``h``; ``0`` alone needs no unit; no spaces anywhere.  Whole nanoseconds, as Go counts them:
a fraction of a unit is truncated to the nanosecond.  The error texts are Go's.
"""

from __future__ import annotations

_NANOS = {"ns": 1, "us": 1_000, "\u00b5s": 1_000, "\u03bcs": 1_000, "ms": 1_000_000,
          "s": 1_000_000_000, "m": 60_000_000_000, "h": 3_600_000_000_000}
_MAX = (1 << 63) - 1


class DurationError(ValueError):
    pass


def _invalid(orig: str) -> DurationError:
    return DurationError(f'time: invalid duration "{orig}"')


def parse_go_duration_ns(text: str) -> int:
    """The duration in nanoseconds; DurationError with Go's message when Go refuses it."""
    orig, s = text, text
    neg = False
    if s and s[0] in "+-":
        neg, s = s[0] == "-", s[1:]
    if s == "0":
        return 0
    if not s:
        raise _invalid(orig)
    total = 0
    while s:
        if not (s[0] == "." or "0" <= s[0] <= "9"):
            raise _invalid(orig)
        i = 0
        while i < len(s) and "0" <= s[i] <= "9":
            i += 1
        pre, digits, s = i > 0, s[:i], s[i:]
        whole = int(digits) if digits else 0
        if whole > _MAX:
            raise _invalid(orig)  # leadingInt overflows
        frac, scale, post = 0, 1.0, False
        if s and s[0] == ".":
            s = s[1:]
            i = 0
            overflow = False
            while i < len(s) and "0" <= s[i] <= "9":
                if not overflow:
                    if frac > _MAX // 10:
                        overflow = True
                    else:
                        frac, scale = frac * 10 + int(s[i]), scale * 10
                i += 1
            post, s = i > 0, s[i:]
        if not pre and not post:
            raise _invalid(orig)  # no digits: ".s", "-.s"
        i = 0
        while i < len(s) and not (s[i] == "." or "0" <= s[i] <= "9"):
            i += 1
        if i == 0:
            raise DurationError(f'time: missing unit in duration "{orig}"')
        unit_name, s = s[:i], s[i:]
        unit = _NANOS.get(unit_name)
        if unit is None:
            raise DurationError(f'time: unknown unit "{unit_name}" in duration "{orig}"')
        if whole > _MAX // unit:
            raise _invalid(orig)
        value = whole * unit
        if frac > 0:
            value += int(float(frac) * (float(unit) / scale))  # float64, as Go: exact to the ns for hours
            if value > _MAX:
                raise _invalid(orig)
        total += value
        if total > _MAX:
            raise _invalid(orig)
    return -total if neg else total


def parse_go_duration(text: str) -> float:
    """The duration in seconds (see ``parse_go_duration_ns``)."""
    return parse_go_duration_ns(text) / 1e9
