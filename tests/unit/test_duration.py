"""Go's time.ParseDuration (scheduler/api/duration.py): cases from Go's time/time_test.go."""

from __future__ import annotations

import pytest

from vcsched.api.duration import DurationError, parse_go_duration, parse_go_duration_ns

NS, US, MS, S, M, H = 1, 1_000, 1_000_000, 1_000_000_000, 60_000_000_000, 3_600_000_000_000


@pytest.mark.parametrize(("text", "ns"), [
    ("0", 0), ("5s", 5 * S), ("30s", 30 * S), ("1478s", 1478 * S), ("-5s", -5 * S), ("+5s", 5 * S),
    ("-0", 0), ("+0", 0), ("5.0s", 5 * S), ("5.6s", 5 * S + 600 * MS), ("5.s", 5 * S), (".5s", 500 * MS),
    ("1.0s", S), ("1.00s", S), ("1.004s", S + 4 * MS), ("1.0040s", S + 4 * MS), ("100.00100s", 100 * S + MS),
    ("10ns", 10 * NS), ("11us", 11 * US), ("12µs", 12 * US), ("12μs", 12 * US), ("13ms", 13 * MS),
    ("14s", 14 * S), ("15m", 15 * M), ("16h", 16 * H), ("3h30m", 3 * H + 30 * M), ("10.5s4m", 4 * M + 10 * S + 500 * MS),
    ("-2m3.4s", -(2 * M + 3 * S + 400 * MS)), ("1h2m3s4ms5us6ns", H + 2 * M + 3 * S + 4 * MS + 5 * US + 6 * NS),
    ("39h9m14.425s", 39 * H + 9 * M + 14 * S + 425 * MS), ("52763797000ns", 52763797000),
    ("0.3333333333333333333h", 20 * M), ("9007199254740993ns", (1 << 53) + 1),
    ("9223372036854775807ns", (1 << 63) - 1), ("0.100000000000000000000h", 6 * M),
])
def test_go_accepts(text, ns):
    assert parse_go_duration_ns(text) == ns


@pytest.mark.parametrize(("text", "message"), [
    ("", 'time: invalid duration ""'), ("3", 'time: missing unit in duration "3"'), ("-", 'time: invalid duration "-"'),
    ("s", 'time: invalid duration "s"'), (".", 'time: invalid duration "."'), ("-.", 'time: invalid duration "-."'),
    (".s", 'time: invalid duration ".s"'), ("+.s", 'time: invalid duration "+.s"'), ("1d", 'time: unknown unit "d" in duration "1d"'),
    ("\x85\x85", 'time: invalid duration "\x85\x85"'), ("9223372036854775810ns", 'time: invalid duration "9223372036854775810ns"'),
    ("9223372036854775808ns", 'time: invalid duration "9223372036854775808ns"'), (" 1s", 'time: invalid duration " 1s"'),
    ("1s ", 'time: unknown unit "s " in duration "1s "'),
])
def test_go_refuses(text, message):
    with pytest.raises(DurationError) as e:
        parse_go_duration_ns(text)
    assert str(e.value) == message


def test_seconds():
    assert parse_go_duration("1m30s") == 90.0 and parse_go_duration("500ms") == 0.5
