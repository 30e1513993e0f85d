"""Measure the CEL libraries for DRA selectors: ``python -m vcsched.api.dra_cel_bench``.

For each candidate the issue names (common-expression-language, cel-expr-python, cel-python) that
is installed: how it was installed (wheel tags), its agreement with Kubernetes on a table of
typical selectors, the compile time per distinct expression and the evaluation time per device
over 4,000 GPU devices (500 nodes x 8, attributes as NVIDIA's DRA driver publishes them).

Each candidate gets the same Kubernetes functions (quantity, semver, isGreaterThan, isLessThan,
compareTo) through its own custom-function mechanism; cel-expr-python is measured through
vcsched.api.dra_cel, the wrapper vcsched ships. Candidates that are not installed are skipped:
``pip install common-expression-language cel-python`` first to compare all three.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import statistics
import time
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from . import dra_cel
from .dra_cel import Device, Semver, SelectorCompileError, SelectorError

DRIVER = "gpu.nvidia.com"
PRODUCTS = [  # productName, architecture, cudaComputeCapability, memory
    ("NVIDIA A100-SXM4-80GB", "Ampere", "8.0.0", "80Gi"),
    ("NVIDIA H100 80GB HBM3", "Hopper", "9.0.0", "80Gi"),
    ("NVIDIA L4", "Ada Lovelace", "8.9.0", "24Gi"),
    ("NVIDIA A10", "Ampere", "8.6.0", "24Gi"),
]

# Selectors as DeviceClasses and claims write them; all candidates can express these.
BENCH_SELECTORS = [
    f'device.driver == "{DRIVER}" && device.attributes["{DRIVER}"].type == "gpu"',
    f'device.capacity["{DRIVER}"].memory.compareTo(quantity("40Gi")) >= 0',
    f'device.attributes["{DRIVER}"].productName in ["NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3"]',
    f'device.attributes["{DRIVER}"].cudaComputeCapability.isGreaterThan(semver("8.5.0"))',
    f'device.attributes["{DRIVER}"].productName.startsWith("NVIDIA H") && device.attributes["{DRIVER}"].index < 4',
    f'device.driver == "{DRIVER}" && device.attributes["{DRIVER}"].type == "gpu" && '
    f'device.capacity["{DRIVER}"].memory.isGreaterThan(quantity("20Gi")) && '
    f'device.attributes["{DRIVER}"].architecture == "Ampere"',
]


def gpu(node: int, index: int) -> dict[str, Any]:
    product, arch, cc, memory = PRODUCTS[(node // 4) % len(PRODUCTS)]
    return {
        "attributes": {
            "type": "gpu",
            "uuid": f"GPU-{node:04d}{index:02d}-5f2e-4b1a-9c3d-0242ac120002",
            "productName": product,
            "brand": "Nvidia",
            "architecture": arch,
            "cudaComputeCapability": Semver.parse(cc),
            "driverVersion": Semver.parse("550.54.15"),
            "cudaDriverVersion": Semver.parse("12.4.0"),
            "pcieBusID": f"0000:{index * 16 + 7:02x}:00.0",
            "index": index,
            "minor": index,
            "resource.kubernetes.io/pcieRoot": f"pci0000:{index // 4:02x}",
        },
        "capacity": {"memory": memory},
    }


def cluster(nodes: int = 500, per_node: int = 8) -> list[dict[str, Any]]:
    return [gpu(n, i) for n in range(nodes) for i in range(per_node)]


# ----------------------------------------------------------------------------------------------
# The selector table: expected results under Kubernetes' semantics (see tests/unit/test_dra_cel.py
# for the sources). "invalid": the API server refuses the expression; "error": evaluation fails.

T_DEVICE = {
    "driver": "dra.example.com",
    "attributes": {
        "bool": True,
        "int": 1,
        "string": "fish",
        "version": Semver.parse("1.0.0"),
        "services": "some_example_value",
        "other.example.com/name": True,
    },
    "capacity": {"quantity": "1Mi"},
}
D = 'device.attributes["dra.example.com"]'
C = 'device.capacity["dra.example.com"]'
TABLE: list[tuple[str, object]] = [
    ('device.driver == "dra.example.com"', True),
    ('device.driver == "gpu.example.com"', False),
    (f"{D}.bool", True),
    (f"{D}.int > 0", True),
    (f'{D}.string == "fish"', True),
    (f'{D}["string"] == "fish"', True),
    (f'{D}.string in ["fish", "bird"]', True),
    (f'{D}.services.split("example").size() >= 2', True),
    (f'{D}.services.matches("[^a]?ex")', True),
    (f'{D}.string.upperAscii() == "FISH"', True),
    (f'{D}.version.isGreaterThan(semver("0.0.1"))', True),
    (f'{D}.version.compareTo(semver("1.0.0")) == 0', True),
    (f'{C}.quantity.isGreaterThan(quantity("1Ki"))', True),
    (f'{C}.quantity.compareTo(quantity("1048576")) == 0', True),
    ('quantity("1") == quantity("1000m")', True),
    ('"dra.example.com" in device.attributes', True),
    ('"no-such-domain" in device.attributes', False),
    (f'"quantity" in {C} && {C}.quantity.isGreaterThan(quantity("1Ki"))', True),
    ('device.attributes["other.example.com"].name', True),
    (f"cel.bind(dra, {D}, dra.bool && dra.int == 1)", True),
    ('device.attributes.exists_one(x, x == "dra.example.com")', True),
    (f"{D}.noSuchAttr", "error"),
    (f"{D}.string > 0", "error"),
    (f'{D}.version.isGreaterThan(quantity("1"))', "error"),
    ('quantity("200K").isGreaterThan(quantity("1"))', "error"),
    (f"{D}.int", "error"),
    ("?!", "invalid"),
    ("1", "invalid"),
    ("device.driver", "invalid"),
    (f'{C}.quantity.isGreaterThan(1)', "invalid"),
]


# ----------------------------------------------------------------------------------------------
# Candidates. Each adapter: prepare(device dict) once per device, compile(expression) once per
# expression, run(program, prepared) -> True | False | "error"; compile raises on refusal.


class CelExprPython:
    name = "cel-expr-python"

    def __init__(self) -> None:
        self.compiler = dra_cel.SelectorCompiler()

    def prepare(self, d: dict[str, Any]) -> Any:
        return Device.from_qualified(d.get("driver", DRIVER), d["attributes"], d["capacity"])

    def compile(self, expression: str) -> Any:
        compiled = self.compiler._compile(expression)  # bypasses the cache: each call compiles
        if isinstance(compiled, SelectorCompileError):
            raise compiled
        return compiled

    def run(self, program: Any, device: Any) -> object:
        result = program.evaluate(device)  # not the per-device memo: every call evaluates
        return "error" if isinstance(result, SelectorError) else result


def _wrapped(kind: str, value: Fraction | Semver) -> dict[str, str]:
    if kind == "q":
        return {"kubernetes.Quantity": f"{value.numerator}/{value.denominator}"}  # type: ignore[union-attr]
    return {"kubernetes.Semver": str(value)}


def _k8s_functions(wrap: Callable[[str, Any], Any], unwrap: Callable[[Any], Any]) -> dict[str, Callable[..., Any]]:
    """quantity/semver and their comparisons, for the candidates without a type system of their own."""

    def cmp(a: Any, b: Any) -> int:
        x, y = unwrap(a), unwrap(b)
        if type(x) is not type(y):
            raise TypeError("no such overload")
        if isinstance(x, Semver):
            return x.compare(y)
        return (x > y) - (x < y)

    return {
        "quantity": lambda s: wrap("q", dra_cel._parse_quantity_text(str(s))),
        "semver": lambda s: wrap("v", Semver.parse(str(s))),
        "isGreaterThan": lambda a, b: cmp(a, b) == 1,
        "isLessThan": lambda a, b: cmp(a, b) == -1,
        "compareTo": cmp,
    }


class CommonExpressionLanguage:
    """The Rust `cel` crate through PyO3: no type checker, no opaque values, no cel.bind."""

    name = "common-expression-language"

    def __init__(self) -> None:
        import cel
        from cel.stdlib import add_stdlib_to_context

        self.cel = cel

        def unwrap(v: Any) -> Any:
            if isinstance(v, dict) and "kubernetes.Quantity" in v:
                return Fraction(v["kubernetes.Quantity"])
            if isinstance(v, dict) and "kubernetes.Semver" in v:
                return Semver.parse(v["kubernetes.Semver"])
            raise TypeError("no such overload")

        self.functions = _k8s_functions(_wrapped, unwrap)
        self.add_stdlib = add_stdlib_to_context

    def prepare(self, d: dict[str, Any]) -> Any:
        device = dra_cel.Device.from_qualified(d.get("driver", DRIVER), d["attributes"], d["capacity"])
        ctx = self.cel.Context()
        self.add_stdlib(ctx)
        for name, fn in self.functions.items():
            ctx.add_function(name, fn)
        ctx.add_variable(
            "device",
            {
                "driver": device.driver,
                "allowMultipleAllocations": device.allow_multiple_allocations,
                "attributes": device.cel_input["device.attributes"],
                "capacity": device.cel_input["device.capacity"],
            },
        )
        return ctx

    def compile(self, expression: str) -> Any:
        return self.cel.compile(expression)

    def run(self, program: Any, ctx: Any) -> object:
        try:
            result = program.execute(ctx)
        except Exception:
            return "error"
        return result if isinstance(result, bool) else "error"


class CelPython:
    """cloud-custodian's pure-Python interpreter (lark parser): no type checker, no cel.bind."""

    name = "cel-python"

    def __init__(self) -> None:
        import logging

        import celpy
        from celpy import celtypes

        logging.getLogger("celpy").setLevel(logging.ERROR)
        self.celpy, self.celtypes = celpy, celtypes
        self.env = celpy.Environment()

        class Opaque:
            __slots__ = ("value",)

            def __init__(self, value: Any) -> None:
                self.value = value

            def __eq__(self, other: object) -> bool:
                return isinstance(other, Opaque) and type(self.value) is type(other.value) and (
                    self.value == other.value if isinstance(self.value, Fraction) else self.value.compare(other.value) == 0
                )

            def __hash__(self) -> int:
                return 0

        self.Opaque = Opaque

        def unwrap(v: Any) -> Any:
            if isinstance(v, Opaque):
                return v.value
            raise TypeError("no such overload")

        fns = _k8s_functions(lambda kind, value: Opaque(value), unwrap)
        self.functions = {
            "quantity": lambda s: Opaque(dra_cel._parse_quantity_text(str(s))),
            "semver": lambda s: Opaque(Semver.parse(str(s))),
            "isGreaterThan": lambda a, b: celtypes.BoolType(fns["isGreaterThan"](a, b)),
            "isLessThan": lambda a, b: celtypes.BoolType(fns["isLessThan"](a, b)),
            "compareTo": lambda a, b: celtypes.IntType(fns["compareTo"](a, b)),
        }

    def _cel(self, value: Any) -> Any:
        t = self.celtypes
        if isinstance(value, Semver | Fraction):
            return self.Opaque(value)
        if isinstance(value, bool):
            return t.BoolType(value)
        if isinstance(value, int):
            return t.IntType(value)
        if isinstance(value, str):
            return t.StringType(value)
        return t.MapType({t.StringType(k): self._cel(v) for k, v in value.items()})

    def prepare(self, d: dict[str, Any]) -> Any:
        device = dra_cel.Device.from_qualified(d.get("driver", DRIVER), d["attributes"], d["capacity"])
        return {
            "device": self._cel(
                {
                    "driver": device.driver,
                    "allowMultipleAllocations": device.allow_multiple_allocations,
                    "attributes": device.attributes,
                    "capacity": device.capacity,
                }
            )
        }

    def compile(self, expression: str) -> Any:
        return self.env.program(self.env.compile(expression), functions=self.functions)

    def run(self, program: Any, activation: Any) -> object:
        try:
            result = program.evaluate(activation)
        except Exception:
            return "error"
        if isinstance(result, self.celtypes.BoolType):
            return bool(result)
        return "error"


CANDIDATES = [CommonExpressionLanguage, CelExprPython, CelPython]


# ----------------------------------------------------------------------------------------------


def wheel_tags(dist: str) -> str:
    try:
        d = importlib.metadata.distribution(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"
    tags = [line.split(":", 1)[1].strip() for line in (d.read_text("WHEEL") or "").splitlines() if line.startswith("Tag:")]
    return f"{d.version} wheel {tags[0] if tags else '?'}"


def check_table(adapter: Any) -> tuple[int, list[str]]:
    device = adapter.prepare(T_DEVICE)
    wrong = []
    for expression, expected in TABLE:
        try:
            program = adapter.compile(expression)
        except Exception:
            got: object = "invalid"
        else:
            got = adapter.run(program, device)
        if got != expected:
            wrong.append(f"{expression!r}: expected {expected}, got {got}")
    return len(TABLE) - len(wrong), wrong


def time_compile(adapter: Any, rounds: int) -> list[float]:
    """Microseconds per compilation of one distinct expression, per round (no cache)."""
    expressions = BENCH_SELECTORS + [e for e, expected in TABLE if expected != "invalid"]
    per_round = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for expression in expressions:
            try:
                adapter.compile(expression)
            except Exception:
                pass
        per_round.append((time.perf_counter() - t0) / len(expressions) * 1e6)
    return per_round


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def time_eval(adapter: Any, devices: list[Any], rounds: int) -> tuple[list[float], list[int], float]:
    """Microseconds per (selector, device) evaluation, per round; matches per selector; and the
    growth of the resident set per evaluation after the first round (a leak shows here)."""
    programs = [adapter.compile(e) for e in BENCH_SELECTORS]
    per_round, matched = [], []
    rss_after_first = 0
    for i in range(rounds):
        matched = []
        t0 = time.perf_counter()
        for program in programs:
            matched.append(sum(adapter.run(program, d) is True for d in devices))
        per_round.append((time.perf_counter() - t0) / (len(programs) * len(devices)) * 1e6)
        if i == 0:
            rss_after_first = rss_bytes()
    growth = (rss_bytes() - rss_after_first) / max(1, (rounds - 1) * len(programs) * len(devices))
    return per_round, matched, growth


def time_memo(devices: list[Device], rounds: int) -> list[float]:
    """vcsched's Selector.matches once each (selector, device) result is memoized."""
    selectors = [dra_cel.compile_selector(e) for e in BENCH_SELECTORS]
    for s in selectors:
        for d in devices:
            s.matches(d)
    per_round = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for s in selectors:
            for d in devices:
                s.matches(d)
        per_round.append((time.perf_counter() - t0) / (len(selectors) * len(devices)) * 1e6)
    return per_round


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}–{max(values):.2f})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vcsched.api.dra_cel_bench", description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--per-node", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds per figure (median, min–max)")
    args = parser.parse_args(argv)

    specs = cluster(args.nodes, args.per_node)
    print(f"{len(specs)} devices, {len(BENCH_SELECTORS)} bench selectors, {len(TABLE)} table rows, {args.rounds} rounds")
    print(
        "| library | installed | table agrees | compile µs/expr | prepare µs/device"
        " | eval µs/(selector×device) | RSS growth B/eval |"
    )
    print("|---|---|---|---|---|---|---|")
    notes, matches = [], {}
    for candidate in CANDIDATES:
        try:
            adapter = candidate()
        except ImportError:
            print(f"| {candidate.name} | not installed | | | | | |")
            continue
        agree, wrong = check_table(adapter)
        compile_us = time_compile(adapter, args.rounds)
        t0 = time.perf_counter()
        devices = [adapter.prepare(s) for s in specs]
        prepare_us = (time.perf_counter() - t0) / len(specs) * 1e6
        eval_us, matched, growth = time_eval(adapter, devices, args.rounds)
        matches[candidate.name] = matched
        print(
            f"| {candidate.name} | {wheel_tags(candidate.name)} | {agree}/{len(TABLE)} | {spread(compile_us)}"
            f" | {prepare_us:.1f} | {spread(eval_us)} | {growth:.0f} |"
        )
        notes += [f"{candidate.name}: {w}" for w in wrong]
        if isinstance(adapter, CelExprPython):
            memo_us = time_memo(devices, args.rounds)
            notes_memo = f"vcsched Selector.matches, memoized per device: {spread(memo_us)} µs/(selector×device)"
            notes.insert(0, notes_memo)
    print()
    for name, matched in matches.items():
        print(f"devices matched per bench selector, {name}: {matched}")
    print("notes (and disagreements with Kubernetes on the table):")
    for note in notes:
        print(f"  {note}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
