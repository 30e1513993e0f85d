"""Plugin and action arguments with Volcano's typing (framework/arguments.go).

YAML 1.1 scalars arrive typed (``1`` int, ``1.0`` float, ``"1"`` str, ``yes`` bool).
Volcano's getters log and keep the default on a mismatch; vcsched refuses the
configuration instead, naming the key (see conf.py).
"""

from __future__ import annotations

from typing import Any

from ..api.task_info import parse_go_bool


class ArgumentError(ValueError):
    pass


class Arguments:
    __slots__ = ("values", "where")

    def __init__(self, values: dict[str, Any], where: str = "arguments") -> None:
        self.values = values
        self.where = where

    def _fail(self, key: str, what: str) -> ArgumentError:
        v = self.values[key]
        return ArgumentError(f"{self.where}.{key}: expected {what}, got {type(v).__name__} {v!r}")

    def __contains__(self, key: str) -> bool:
        return key in self.values

    def keys(self):
        return self.values.keys()

    def get_int(self, key: str, default: int) -> int:
        """``GetInt``: the value must already be an int."""
        if key not in self.values or self.values[key] is None:
            return default
        v = self.values[key]
        if isinstance(v, bool) or not isinstance(v, int):
            raise self._fail(key, "an integer")
        return v

    def get_float(self, key: str, default: float) -> float:
        """``GetFloat64``: a float or an int."""
        if key not in self.values or self.values[key] is None:
            return default
        v = self.values[key]
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise self._fail(key, "a number")
        return float(v)

    def get_bool(self, key: str, default: bool) -> bool:
        """``GetBool``: a bool, or a string Go's ``strconv.ParseBool`` accepts."""
        if key not in self.values or self.values[key] is None:
            return default
        v = self.values[key]
        if isinstance(v, bool):
            return v
        if isinstance(v, str) and parse_go_bool(v) is not None:
            return bool(parse_go_bool(v))
        raise self._fail(key, "a bool")

    def get_str(self, key: str, default: str) -> str:
        if key not in self.values or self.values[key] is None:
            return default
        v = self.values[key]
        if not isinstance(v, str):
            raise self._fail(key, "a string")
        return v
