"""Logging goes to ``sys.stderr`` as it is when a line is written (scheduler/cli.py)."""

import io
import sys

import structlog

from vcsched.cli import configure_logging


def test_a_replaced_and_closed_stderr_does_not_break_later_logging(monkeypatch):
    first, second = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stderr", first)
    configure_logging(verbose=False, level="info")
    try:
        structlog.get_logger("t").info("one")
        first.close()  # a test's capture, closed once its test is over
        monkeypatch.setattr(sys, "stderr", second)
        structlog.get_logger("t").info("two")
    finally:
        structlog.reset_defaults()
    assert '"event": "two"' in second.getvalue()
