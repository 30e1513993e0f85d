"""CEL selectors of Dynamic Resource Allocation (resource.k8s.io/v1), evaluated over one device.

Follows k8s.io/dynamic-resource-allocation/cel/compile.go (Kubernetes 1.34, ``StoredExpressions``
environment): a ``device`` with ``driver``, ``attributes[domain][name]``, ``capacity[domain][name]``
(quantities) and ``allowMultipleAllocations``; Kubernetes' base CEL environment (ext strings v2,
sets, lists, two-variable comprehensions, optional types, ``cel.bind``) and its ``quantity`` and
``semver`` libraries (k8s.io/apiserver/pkg/cel/library/quantity.go, semverlib.go).

The engine is cel-expr-python, Google's CEL C++ implementation (docs/dra-cel.md says why). Its
type checker sees Quantity and Semver as the named types ``kubernetes.Quantity`` and
``kubernetes.Semver``, so an expression is refused at compile time exactly where the API server
refuses it (``quantity("1").isGreaterThan(1)``, an expression that is not a bool). The wrapper
cannot carry an opaque Python value at run time, so the checked expression is handed to a second
environment of the same functions in which those two types travel as one-entry maps
``{"kubernetes.Quantity": "<exact value>"}``: the canonical value makes ``==`` compare values, as
``resource.Quantity.Equal`` and ``semver.Version.EQ`` do, and the Python implementations below do
the rest (Quantity parsing is vcsched's own ``api/quantity.py``).

Use::

    selector = compile_selector('device.driver == "gpu.example.com" && '
                                'device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0')
    result = selector.matches(device)     # True, False, or a SelectorError (the device fails)

As in Kubernetes, a selector whose evaluation fails does not match and the error is to be reported
(kube-scheduler's allocator aborts the claim's allocation with ``CEL runtime error: ...``).
"""

from __future__ import annotations

import functools
import math
import re
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction

from cel_expr_python import cel

from .quantity import QuantityError, parse_quantity

# k8s.io/api/resource/v1: the API server refuses longer expressions; kube-scheduler's runtime limit
CEL_SELECTOR_EXPRESSION_MAX_LENGTH = 10 * 1024
CEL_SELECTOR_EXPRESSION_MAX_COST = 1_000_000  # not enforced: see docs/dra-cel.md

_QUANTITY = "kubernetes.Quantity"
_SEMVER = "kubernetes.Semver"
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


class SelectorCompileError(ValueError):
    """An expression the API server refuses: it does not compile, or it is not a bool."""

    def __init__(self, expression: str, detail: str) -> None:
        super().__init__(detail)
        self.expression = expression
        self.detail = detail


class SelectorError(Exception):
    """A selector whose evaluation failed for one device: the device does not match."""

    def __init__(self, expression: str, detail: str) -> None:
        super().__init__(f"CEL runtime error: {detail}")
        self.expression = expression
        self.detail = detail


# ----------------------------------------------------------------------------------------------
# Semantic versions, as github.com/blang/semver/v4 parses and orders them


class SemverError(ValueError):
    """A string that is not a semantic version."""


_NUMBERS = frozenset("0123456789")
_ALPHANUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-0123456789")
_UINT64_MAX = 2**64 - 1


def _parse_uint(text: str, what: str) -> int:
    if not set(text) <= _NUMBERS:
        raise SemverError(f"Invalid character(s) found in {what} number {text!r}")
    if len(text) > 1 and text[0] == "0":
        raise SemverError(f"{what.capitalize()} number must not contain leading zeroes {text!r}")
    if not text or int(text) > _UINT64_MAX:
        raise SemverError(f"invalid {what} number {text!r}")
    return int(text)


@dataclass(frozen=True, slots=True)
class Semver:
    """A version attribute (``versionValue``) or the result of ``semver()``."""

    major: int
    minor: int
    patch: int
    pre: tuple[int | str, ...] = ()
    build: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str) -> Semver:
        """``semver.Parse``: strict MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]."""
        if not text:
            raise SemverError("Version string empty")
        parts = text.split(".", 2)
        if len(parts) != 3:
            raise SemverError("No Major.Minor.Patch elements found")
        major = _parse_uint(parts[0], "major")
        minor = _parse_uint(parts[1], "minor")
        patch_text, build, pre = parts[2], (), ()
        if "+" in patch_text:
            patch_text, _, build_text = patch_text.partition("+")
            build = tuple(build_text.split("."))
        if "-" in patch_text:
            patch_text, _, pre_text = patch_text.partition("-")
            pre = tuple(_prerelease(p) for p in pre_text.split("."))
        patch = _parse_uint(patch_text, "patch")
        for b in build:
            if not b:
                raise SemverError("Build meta data is empty")
            if not set(b) <= _ALPHANUM:
                raise SemverError(f"Invalid character(s) found in build meta data {b!r}")
        return cls(major, minor, patch, pre, build)

    @classmethod
    def parse_normalized(cls, text: str) -> Semver:
        """``semver(s, true)``: drops a leading "v" and leading zeros, fills a missing minor/patch."""
        text = text.removeprefix("v")
        parts = text.split(".", 2)
        for i, p in enumerate(parts):
            if len(p) > 1:
                p = p.lstrip("0")
                if not p or p[0] not in _NUMBERS:
                    p = "0" + p
                parts[i] = p
        if len(parts) < 3:
            if "+" in parts[-1] or "-" in parts[-1]:
                raise SemverError("short version cannot contain PreRelease/Build meta data")
            parts += ["0"] * (3 - len(parts))
        return cls.parse(".".join(parts))

    def compare(self, other: Semver) -> int:
        """``Version.Compare``: build metadata has no precedence; a pre-release sorts first."""
        a, b = (self.major, self.minor, self.patch), (other.major, other.minor, other.patch)
        if a != b:
            return 1 if a > b else -1
        if not self.pre or not other.pre:
            return (not self.pre) - (not other.pre)
        for x, y in zip(self.pre, other.pre):
            if x == y:
                continue
            if isinstance(x, int) != isinstance(y, int):
                return -1 if isinstance(x, int) else 1
            return 1 if x > y else -1  # type: ignore[operator]
        return (len(self.pre) > len(other.pre)) - (len(self.pre) < len(other.pre))

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.pre:
            text += "-" + ".".join(str(p) for p in self.pre)
        if self.build:
            text += "+" + ".".join(self.build)
        return text


def _prerelease(text: str) -> int | str:
    if not text:
        raise SemverError("Prerelease is empty")
    if set(text) <= _NUMBERS:
        if len(text) > 1 and text[0] == "0":
            raise SemverError(f"Numeric PreRelease version must not contain leading zeroes {text!r}")
        return int(text)
    if not set(text) <= _ALPHANUM:
        raise SemverError(f"Invalid character(s) found in prerelease {text!r}")
    return text


# ----------------------------------------------------------------------------------------------
# The run-time form of Quantity and Semver values: one-entry maps with a canonical value, so that
# CEL's map equality is the value equality Kubernetes defines.


def _wrap_quantity(q: Fraction) -> dict[str, str]:
    return {_QUANTITY: f"{q.numerator}/{q.denominator}"}


def _wrap_semver(v: Semver) -> dict[str, str]:
    # without build metadata: versions differing only there are equal (Version.EQ)
    return {_SEMVER: str(Semver(v.major, v.minor, v.patch, v.pre))}


@functools.lru_cache(maxsize=8192)
def _unwrap_text(kind: str, text: str) -> Fraction | Semver:
    return Fraction(text) if kind == _QUANTITY else Semver.parse(text)


def _unwrap(value: object) -> Fraction | Semver:
    if isinstance(value, dict) and len(value) == 1:
        ((kind, text),) = value.items()
        if kind in (_QUANTITY, _SEMVER) and isinstance(text, str):
            return _unwrap_text(kind, text)
    raise TypeError("no such overload")


def _quantity_arg(value: object) -> Fraction:
    q = _unwrap(value)
    if not isinstance(q, Fraction):
        raise TypeError("no such overload")
    return q


def _semver_arg(value: object) -> Semver:
    v = _unwrap(value)
    if not isinstance(v, Semver):
        raise TypeError("no such overload")
    return v


def _parse_quantity_text(text: str) -> Fraction:
    """``resource.ParseQuantity``: vcsched's parser, without its tolerance of surrounding blanks."""
    if text != text.strip():
        raise QuantityError(f"quantities must match the regular expression, got {text!r}")
    return parse_quantity(text)


def _compare(a: object, b: object) -> int:
    x, y = _unwrap(a), _unwrap(b)
    if isinstance(x, Fraction) and isinstance(y, Fraction):
        return (x > y) - (x < y)
    if isinstance(x, Semver) and isinstance(y, Semver):
        return x.compare(y)
    raise TypeError("no such overload")


def _is_quantity(text: str) -> bool:
    try:
        _parse_quantity_text(text)
    except QuantityError:
        return False
    return True


def _is_semver(text: str, normalize: bool = False) -> bool:
    try:
        Semver.parse_normalized(text) if normalize else Semver.parse(text)
    except SemverError:
        return False
    return True


def _as_integer(value: object) -> int:
    q = _quantity_arg(value)
    if q.denominator != 1 or not _INT64_MIN <= q.numerator <= _INT64_MAX:
        raise ValueError("cannot convert value to integer")
    return q.numerator


def _is_integer(value: object) -> bool:
    q = _quantity_arg(value)
    return q.denominator == 1 and _INT64_MIN <= q.numerator <= _INT64_MAX


def _as_float(value: object) -> float:
    q = _quantity_arg(value)
    try:
        return float(q)
    except OverflowError:
        return math.copysign(math.inf, q)


def _add(a: object, b: object) -> dict[str, str]:
    return _wrap_quantity(_quantity_arg(a) + (b if isinstance(b, int) else _quantity_arg(b)))


def _sub(a: object, b: object) -> dict[str, str]:
    return _wrap_quantity(_quantity_arg(a) - (b if isinstance(b, int) else _quantity_arg(b)))


# ----------------------------------------------------------------------------------------------
# The environment


# Types as Kubernetes declares them; Q and V are the two named types, which the run-time
# environment carries as map(string, string).
_Q, _V = "Q", "V"
_TYPES: dict[str, cel.Type] = {
    "string": cel.Type.STRING,
    "bool": cel.Type.BOOL,
    "int": cel.Type.INT,
    "double": cel.Type.DOUBLE,
}

# name, overload id (as Kubernetes names it), member?, parameters, result, implementation
_FUNCTIONS: list[tuple[str, str, bool, tuple[str, ...], str, Callable[..., object]]] = [
    ("quantity", "string_to_quantity", False, ("string",), _Q, lambda s: _wrap_quantity(_parse_quantity_text(s))),
    ("isQuantity", "is_quantity_string", False, ("string",), "bool", _is_quantity),
    ("sign", "quantity_sign", False, (_Q,), "int", lambda q: (lambda v: (v > 0) - (v < 0))(_quantity_arg(q))),
    ("isGreaterThan", "quantity_is_greater_than", True, (_Q, _Q), "bool", lambda a, b: _compare(a, b) == 1),
    ("isGreaterThan", "semver_is_greater_than", True, (_V, _V), "bool", lambda a, b: _compare(a, b) == 1),
    ("isLessThan", "quantity_is_less_than", True, (_Q, _Q), "bool", lambda a, b: _compare(a, b) == -1),
    ("isLessThan", "semver_is_less_than", True, (_V, _V), "bool", lambda a, b: _compare(a, b) == -1),
    ("compareTo", "quantity_compare_to", True, (_Q, _Q), "int", _compare),
    ("compareTo", "semver_compare_to", True, (_V, _V), "int", _compare),
    ("asApproximateFloat", "quantity_get_float", True, (_Q,), "double", _as_float),
    ("asInteger", "quantity_get_int", True, (_Q,), "int", _as_integer),
    ("isInteger", "quantity_is_integer", True, (_Q,), "bool", _is_integer),
    ("add", "quantity_add", True, (_Q, _Q), _Q, _add),
    ("add", "quantity_add_int", True, (_Q, "int"), _Q, _add),
    ("sub", "quantity_sub", True, (_Q, _Q), _Q, _sub),
    ("sub", "quantity_sub_int", True, (_Q, "int"), _Q, _sub),
    ("semver", "string_to_semver", False, ("string",), _V, lambda s: _wrap_semver(Semver.parse(s))),
    (
        "semver",
        "string_bool_to_semver",
        False,
        ("string", "bool"),
        _V,
        lambda s, n: _wrap_semver(Semver.parse_normalized(s) if n else Semver.parse(s)),
    ),
    ("isSemver", "is_semver_string", False, ("string",), "bool", _is_semver),
    ("isSemver", "is_semver_string_bool", False, ("string", "bool"), "bool", _is_semver),
    ("major", "semver_major", True, (_V,), "int", lambda v: _semver_arg(v).major),
    ("minor", "semver_minor", True, (_V,), "int", lambda v: _semver_arg(v).minor),
    ("patch", "semver_patch", True, (_V,), "int", lambda v: _semver_arg(v).patch),
]

# Kubernetes' base environment (k8s.io/apiserver/pkg/cel/environment/base.go, 1.34) as far as the
# CEL C++ extensions provide it; DRA adds cel.bind (ext.Bindings).
_CONFIG_YAML = """
extensions:
  - name: strings
    version: 2
  - name: sets
  - name: lists
  - name: two-var-comprehensions
  - name: optional
  - name: bindings
"""


def _environment(named: Mapping[str, cel.Type], with_impls: bool) -> cel.Env:
    def t(name: str) -> cel.Type:
        return named[name] if name in named else _TYPES[name]

    decls: dict[str, list[cel.Overload]] = {}
    seen: set[tuple[str, bool, tuple[str, ...]]] = set()
    for name, overload_id, member, params, result, impl in _FUNCTIONS:
        signature = (name, member, tuple(t(p).name() for p in params))
        if signature in seen:  # one run-time overload serves both named types (it dispatches)
            continue
        seen.add(signature)
        decls.setdefault(name, []).append(
            cel.Overload(
                overload_id,
                t(result),
                [t(p) for p in params],
                is_member=member,
                **({"impl": _cel_function(impl)} if with_impls else {}),
            )
        )
    string = cel.Type.STRING
    return cel.NewEnv(
        config=cel.NewEnvConfigFromYaml(_CONFIG_YAML),
        variables={
            "device.driver": string,
            "device.allowMultipleAllocations": cel.Type.BOOL,
            "device.attributes": cel.Type.Map(string, cel.Type.Map(string, cel.Type.DYN)),
            "device.capacity": cel.Type.Map(string, cel.Type.Map(string, t(_Q))),
        },
        functions=[cel.FunctionDecl(name, overloads) for name, overloads in decls.items()],
    )


def _cel_function(impl: Callable[..., object]) -> Callable[..., object]:
    """Python exceptions become CEL errors; a TypeError is CEL's "no such overload"."""

    def call(*args: object) -> object:
        try:
            return impl(*args)
        except TypeError:
            raise ValueError("no such overload") from None

    return call


_STATUS = re.compile(r"^[A-Z_]+: ")
_STATUS_TAIL = re.compile(r" \[[A-Z_]+\]$")
_NO_SUCH_KEY = re.compile(r'Key not found in map : "(.*)"')


def _clean(message: str) -> str:
    """cel-cpp's absl status text, in the words of cel-go where they differ."""
    message = _STATUS_TAIL.sub("", _STATUS.sub("", message.strip()))
    message = _NO_SUCH_KEY.sub(r"no such key: \1", message)
    if message.startswith("No matching overloads found"):
        message = "no such overload: " + message.partition(":")[2].strip()
    return message


def _type_name(t: cel.Type) -> str:
    """cel-go's spelling of a type: ``int``, ``list(string)``, ``kubernetes.Quantity``."""
    name = t.name()
    name = re.sub(r"\b(BOOL|INT|UINT|DOUBLE|STRING|BYTES|DYN|NULL|TIMESTAMP|DURATION|TYPE)\b", lambda m: m[1].lower(), name)
    name = re.sub(r"\b(LIST|MAP)<", lambda m: m[1].lower() + "(", name)
    return name.replace(">", ")").replace("null", "null_type").replace("timestamp", "google.protobuf.Timestamp")


@dataclass(slots=True)
class Selector:
    """One compiled selector expression; evaluate it on as many devices as needed."""

    expression: str
    _program: cel.Expression = field(repr=False)

    def matches(self, device: Device) -> bool | SelectorError:
        """The result for this device, evaluated once per device (devices are immutable).

        Besides sparing the allocator repeated evaluations, the memo bounds a leak of
        cel-expr-python 0.1.x: each call of a Python-implemented function (quantity(), semver(),
        compareTo()...) leaks its argument tuple (docs/dra-cel.md).
        """
        memo = device.selector_results
        result = memo.get(self.expression)
        if result is None:
            result = memo[self.expression] = self.evaluate(device)
        return result

    def evaluate(self, device: Device) -> bool | SelectorError:
        """Evaluate now, without the per-device memo."""
        result = self._program.eval(data=device.cel_input)
        kind = result.type()
        if kind == cel.Type.BOOL:
            return bool(result.value())
        if kind == cel.Type.ERROR:
            detail = _clean(str(result.value()))
            if "no such key:" in detail:  # cel.EnhanceRuntimeError
                detail += (
                    ". consider using CEL optional chaining (.? followed by orValue()) or guarding the check"
                    " with has() for optional fields"
                )
            return SelectorError(self.expression, detail)
        return SelectorError(
            self.expression, f"CEL result of type {_type_name(kind)} could not be converted to bool"
        )


class SelectorCompiler:
    """The DRA CEL environment and a bounded cache: each distinct expression is compiled once."""

    def __init__(self, cache_size: int = 4096) -> None:
        named = cel.Type.AbstractType
        self._check_env = _environment({_Q: named(_QUANTITY), _V: named(_SEMVER)}, with_impls=False)
        opaque = cel.Type.Map(cel.Type.STRING, cel.Type.STRING)
        self._run_env = _environment({_Q: opaque, _V: opaque}, with_impls=True)
        self._cache: OrderedDict[str, Selector | SelectorCompileError] = OrderedDict()
        self._cache_size = cache_size
        self.compilations = 0

    def compile(self, expression: str) -> Selector:
        """The selector, or SelectorCompileError with the message the API server would give."""
        cached = self._cache.get(expression)
        if cached is None:
            cached = self._compile(expression)
            self._cache[expression] = cached
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(expression)
        if isinstance(cached, SelectorCompileError):
            raise cached
        return cached

    def _compile(self, expression: str) -> Selector | SelectorCompileError:
        self.compilations += 1
        if len(expression.encode()) > CEL_SELECTOR_EXPRESSION_MAX_LENGTH:
            return SelectorCompileError(
                expression, f"Too long: may not be more than {CEL_SELECTOR_EXPRESSION_MAX_LENGTH} bytes"
            )
        try:
            checked = self._check_env.compile(expression)
        except RuntimeError as err:
            return SelectorCompileError(expression, "compilation failed: " + _clean(str(err)))
        output = checked.return_type()
        if output != cel.Type.BOOL and output != cel.Type.DYN:
            return SelectorCompileError(
                expression, f"must evaluate to bool or the unknown type, not {_type_name(output)}"
            )
        return Selector(expression, self._run_env.deserialize(checked.serialize()))


@functools.cache
def _default_compiler() -> SelectorCompiler:
    return SelectorCompiler()


def compile_selector(expression: str) -> Selector:
    """Compile a DeviceClass or request selector once (process-wide cache)."""
    return _default_compiler().compile(expression)


# ----------------------------------------------------------------------------------------------
# The device a selector sees

AttributeValue = bool | int | str | Semver


@dataclass(frozen=True, slots=True)
class Device:
    """What a selector sees of one ResourceSlice device.

    ``attributes`` and ``capacity`` are by domain, then name; ``from_qualified`` takes the API's
    qualified names (``memory`` is in the driver's domain, ``example.com/memory`` in its own).
    """

    driver: str
    attributes: Mapping[str, Mapping[str, AttributeValue]] = field(default_factory=dict)
    capacity: Mapping[str, Mapping[str, Fraction]] = field(default_factory=dict)
    allow_multiple_allocations: bool = False
    cel_input: dict[str, object] = field(init=False, repr=False, compare=False)
    selector_results: dict[str, bool | SelectorError] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        attributes: dict[str, dict[str, object]] = {}
        for domain, values in self.attributes.items():
            inner = attributes.setdefault(domain, {})
            for name, value in values.items():
                if isinstance(value, Semver):
                    inner[name] = _wrap_semver(value)
                elif isinstance(value, bool | str):
                    inner[name] = value
                elif isinstance(value, int) and _INT64_MIN <= value <= _INT64_MAX:
                    inner[name] = value
                else:
                    raise ValueError(f"attribute {domain}/{name}: unsupported value {value!r}")
        capacity = {
            domain: {name: _wrap_quantity(Fraction(q)) for name, q in values.items()}
            for domain, values in self.capacity.items()
        }
        object.__setattr__(self, "selector_results", {})
        object.__setattr__(
            self,
            "cel_input",
            {
                "device.driver": self.driver,
                "device.allowMultipleAllocations": self.allow_multiple_allocations,
                "device.attributes": attributes,
                "device.capacity": capacity,
            },
        )

    @classmethod
    def from_qualified(
        cls,
        driver: str,
        attributes: Mapping[str, AttributeValue] | None = None,
        capacity: Mapping[str, Fraction | int | str] | None = None,
        allow_multiple_allocations: bool = False,
    ) -> Device:
        """From the API's maps keyed by qualified name; capacity values may be quantity strings."""
        attrs: dict[str, dict[str, AttributeValue]] = {}
        for qualified, value in (attributes or {}).items():
            domain, name = _split_qualified(qualified, driver)
            attrs.setdefault(domain, {})[name] = value
        caps: dict[str, dict[str, Fraction]] = {}
        for qualified, q in (capacity or {}).items():
            domain, name = _split_qualified(qualified, driver)
            caps.setdefault(domain, {})[name] = q if isinstance(q, Fraction) else parse_quantity(q)
        return cls(driver, attrs, caps, allow_multiple_allocations)


def _split_qualified(name: str, driver: str) -> tuple[str, str]:
    """``parseQualifiedName``: a name without a domain is in the driver's domain."""
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (driver, name)
