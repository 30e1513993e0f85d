"""DRA CEL selectors (vcsched.api.dra_cel) against Kubernetes' own expectations.

Sources of the expected results:
- compile_test.go: TestCEL in k8s.io/dynamic-resource-allocation/cel (kubernetes/kubernetes
  staging/src/k8s.io/dynamic-resource-allocation/cel/compile_test.go), rows named as there;
- quantity.go: the examples in the doc comment of k8s.io/apiserver/pkg/cel/library/quantity.go;
- semver_test.go: TestSemver in k8s.io/dynamic-resource-allocation/cel/semver_test.go, and the
  doc comment of k8s.io/apiserver/pkg/cel/library/semverlib.go (normalization);
- semver.org §11: precedence of pre-release versions (github.com/blang/semver/v4 implements it);
- nvidia: the gpu.nvidia.com DeviceClass of NVIDIA's k8s-dra-driver-gpu.
"""

from fractions import Fraction

import pytest

from vcsched.api.dra_cel import (
    CEL_SELECTOR_EXPRESSION_MAX_LENGTH,
    Device,
    Selector,
    SelectorCompileError,
    SelectorCompiler,
    SelectorError,
    Semver,
    SemverError,
    compile_selector,
)

DRIVER = "dra.example.com"
D = f'device.attributes["{DRIVER}"]'
C = f'device.capacity["{DRIVER}"]'


def device(attributes=None, capacity=None, driver=DRIVER, allow_multiple_allocations=False):
    return Device.from_qualified(driver, attributes or {}, capacity or {}, allow_multiple_allocations)


@pytest.fixture(scope="module")
def compiler():
    return SelectorCompiler()


def evaluate(compiler, expression, dev):
    return compiler.compile(expression).evaluate(dev)


# (source, expression, device, expected): expected is a bool, or ("error", substring of the message)
V1 = Semver.parse("1.0.0")
ALL_ATTRS = {"bool": True, "int": 1, "string": "fish", "version": V1}
TABLE = [
    ("compile_test.go true", "true", device(), True),
    ("compile_test.go false", "false", device(), False),
    (
        "compile_test.go runtime-error-lookup-identifier",
        'device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0"))',
        device(),
        ("error", "no such key"),
    ),
    ("compile_test.go domain-check-negative", '"no-such-domain" in device.attributes', device(), False),
    (
        "compile_test.go domain-check-positive",
        f'"{DRIVER}" in device.attributes',
        device({f"{DRIVER}/something": True}),
        True,
    ),
    ("compile_test.go empty-driver-name", 'device.driver == ""', device(driver=""), True),
    ("compile_test.go real-driver-name", f'device.driver == "{DRIVER}"', device(), True),
    ("compile_test.go driver-name-qualifier", f"{D}.name", device({"name": True}), True),
    ("compile_test.go driver-name-qualifier-map-lookup", f'{D}["name"]', device({"name": True}), True),
    ("compile_test.go bind", f"cel.bind(dra, {D}, dra.name)", device({"name": True}), True),
    (
        "compile_test.go qualified-attribute-name",
        'device.attributes["other.example.com"].name',
        device({"other.example.com/name": True}),
        True,
    ),
    ("compile_test.go bool", f"{D}.name", device({"name": True}), True),
    ("compile_test.go int", f"{D}.name > 0", device({"name": 1}), True),
    ("compile_test.go string", f'{D}.name == "fish"', device({"name": "fish"}), True),
    ("compile_test.go version", f'{D}.name.isGreaterThan(semver("0.0.1"))', device({"name": V1}), True),
    (
        "compile_test.go version_v",
        f'{D}.name.isGreaterThan(semver("v0.0.1", true)) && isSemver("v1.0.0", true)',
        device({"name": V1}),
        True,
    ),
    ("compile_test.go quantity", f'{C}.name.isGreaterThan(quantity("1Ki"))', device(capacity={"name": "1Mi"}), True),
    (
        "compile_test.go check-positive",
        f'"name" in {C} && {C}.name.isGreaterThan(quantity("1Ki"))',
        device(capacity={"name": "1Mi"}),
        True,
    ),
    (
        "compile_test.go check-negative",
        # Kubernetes answers an unknown domain with an empty map; vcsched's device lists its own
        # domains only, so the row carries the driver's domain (the expression is unchanged)
        f'!("name" in {C}) || {C}.name.isGreaterThan(quantity("1Ki"))',
        device(capacity={"other": "1"}),
        True,
    ),
    (
        "compile_test.go all",
        f"""
{C}.quantity.isGreaterThan(quantity("1Ki")) &&
{D}.bool &&
{D}.int > 0 &&
{D}.string == "fish" &&
{D}.version.isGreaterThan(semver("0.0.1")) &&
{C}["quantity"].isGreaterThan(quantity("1Ki")) &&
{D}["bool"] &&
{D}["int"] > 0 &&
{D}["string"] == "fish" &&
{D}["version"].isGreaterThan(semver("0.0.1"))
""",
        device(ALL_ATTRS, {"quantity": "1Mi"}),
        True,
    ),
    ("compile_test.go many", f"{D}.a && {D}.b && {D}.c", device({"a": True, "b": True, "c": True}), True),
    (
        "compile_test.go check_attribute_domains",
        f'device.attributes.exists_one(x, x == "{DRIVER}")',
        device({"services": "some_example_value"}),
        True,
    ),
    (
        "compile_test.go check_attribute_ids",
        f'{D}.exists_one(x, x == "services")',
        device({"services": "some_example_value"}),
        True,
    ),
    (
        "compile_test.go split_attribute",
        f'{D}.services.split("example").size() >= 2',
        device({"services": "some_example_value"}),
        True,
    ),
    ("compile_test.go regexp_attribute", f'{D}.services.matches("[^a]?sym")', device({"services": "asymetric"}), True),
    (
        "compile_test.go check_capacity_domains",
        f'device.capacity.exists_one(x, x == "{DRIVER}")',
        device(capacity={"memory": "1Mi"}),
        True,
    ),
    (
        "compile_test.go check_capacity_ids",
        f'{C}.exists_one(x, x == "memory")',
        device(capacity={"memory": "1Mi"}),
        True,
    ),
    (
        "compile_test.go allow_multiple_allocations",
        "device.allowMultipleAllocations == true",
        device(allow_multiple_allocations=True),
        True,
    ),
    ("compile_test.go allow_multiple_allocations_default", "device.allowMultipleAllocations == false", device(), True),
    (
        "compile_test.go macro-exists-on-int",  # a scalar is not iterable
        f"{D}.name.exists(x, x > 0)",
        device({"name": 1}),
        ("error", ""),
    ),
    # quantity.go
    ("quantity.go", 'quantity("200M").compareTo(quantity("0.2G")) == 0', device(), True),
    ("quantity.go", 'quantity("50M").compareTo(quantity("50Mi")) == -1', device(), True),
    ("quantity.go", 'quantity("50Mi").compareTo(quantity("50M")) == 1', device(), True),
    ("quantity.go", 'quantity("150Mi").isGreaterThan(quantity("100Mi"))', device(), True),
    ("quantity.go", 'quantity("50Mi").isGreaterThan(quantity("100Mi"))', device(), False),
    ("quantity.go", 'quantity("50M").isLessThan(quantity("100M"))', device(), True),
    ("quantity.go", 'quantity("100M").isLessThan(quantity("50M"))', device(), False),
    ("quantity.go", 'quantity("200K") == quantity("200k")', device(), ("error", "quantities must match")),
    ("quantity.go", 'isQuantity("1.3G") && isQuantity("1.3Gi") && isQuantity("10000k")', device(), True),
    ("quantity.go", 'isQuantity("1,3G") || isQuantity("200K") || isQuantity("Three") || isQuantity("Mi")', device(), False),
    ("quantity.go", 'quantity("50000000G").isInteger() && quantity("50k").isInteger()', device(), True),
    ("quantity.go", 'quantity("9999999999999999999999999999999999999G").isInteger()', device(), False),
    (
        "quantity.go",
        'quantity("9999999999999999999999999999999999999G").asInteger() > 0',
        device(),
        ("error", "cannot convert value to integer"),
    ),
    ("quantity.go", 'quantity("50k").asInteger() == 50000', device(), True),
    ("quantity.go", 'quantity("50k").sub(20000).asApproximateFloat() == 30000.0', device(), True),
    ("quantity.go", 'quantity("50k").add(20) == quantity("50020")', device(), True),
    ("quantity.go", 'quantity("50k").sub(20000) == quantity("30k")', device(), True),
    ("quantity.go", 'quantity("50k").add(20).sub(quantity("100k")).sub(-50000) == quantity("20")', device(), True),
    ("quantity.go sign", 'sign(quantity("-5")) == -1 && sign(quantity("0")) == 0', device(), True),
    ("quantity.go Equal (value equality)", 'quantity("1") == quantity("1000m")', device(), True),
    # semver_test.go, semverlib.go, semver.org
    ("semver_test.go parseInvalidVersion", 'semver("v1.0") == semver("1.0.0")', device(), ("error", "No Major.Minor.Patch")),
    ("semver_test.go isSemver", 'isSemver("1.2.3-beta.1+build.1")', device(), True),
    ("semver_test.go isSemver_false", 'isSemver("v1.0")', device(), False),
    ("semver_test.go equality_reflexivity", 'semver("1.2.3") == semver("1.2.3")', device(), True),
    ("semver_test.go inequality", 'semver("1.2.3") == semver("1.0.0")', device(), False),
    ("semver_test.go semver_less", 'semver("1.0.0").isLessThan(semver("1.2.3"))', device(), True),
    ("semver_test.go semver_less_false", 'semver("1.0.0").isLessThan(semver("1.0.0"))', device(), False),
    ("semver_test.go semver_greater", 'semver("1.2.3").isGreaterThan(semver("1.0.0"))', device(), True),
    ("semver_test.go semver_greater_false", 'semver("1.0.0").isGreaterThan(semver("1.0.0"))', device(), False),
    ("semver_test.go compare_*", 'semver("1.0.0").compareTo(semver("1.2.3")) == -1', device(), True),
    ("semver_test.go major/minor/patch", 'semver("1.2.3").major() == 1 && semver("1.2.3").minor() == 2 && semver("1.2.3").patch() == 3', device(), True),
    ("semverlib.go normalize", 'semver("1.0", true) == semver("1.0.0") && semver("01.01.01", true) == semver("1.1.1")', device(), True),
    ("semverlib.go normalize", 'isSemver("v1.0", true) && !isSemver("v1.0")', device(), True),
    (
        "semver.org §11",
        'semver("1.0.0-alpha").isLessThan(semver("1.0.0-alpha.1")) && semver("1.0.0-alpha.1").isLessThan(semver("1.0.0-alpha.beta"))'
        ' && semver("1.0.0-beta.2").isLessThan(semver("1.0.0-beta.11")) && semver("1.0.0-rc.1").isLessThan(semver("1.0.0"))',
        device(),
        True,
    ),
    ("blang Version.EQ ignores build metadata", 'semver("1.0.0+a") == semver("1.0.0+b")', device(), True),
    (
        "semver vs quantity: no overload",
        f'{D}.version.isGreaterThan(quantity("1"))',
        device(ALL_ATTRS),
        ("error", "no such overload"),
    ),
    # typical DeviceClass and request selectors
    (
        "nvidia DeviceClass gpu.nvidia.com",
        "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'",
        device({"type": "gpu"}, driver="gpu.nvidia.com"),
        True,
    ),
    (
        "nvidia DeviceClass on another driver's device (short-circuit, no error)",
        "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'",
        device({"model": "x"}),
        False,
    ),
    (
        "request: memory at least 40Gi",
        f'{C}.memory.compareTo(quantity("40Gi")) >= 0',
        device(capacity={"memory": "80Gi"}),
        True,
    ),
    ("request: model in a list", f'{D}.model in ["a100", "h100"]', device({"model": "l4"}), False),
    ("request: string extension", f'{D}.model.upperAscii().startsWith("A1")', device({"model": "a100"}), True),
    ("request: int and double compare at run time", f"{D}.index < 1.5", device({"index": 1}), True),
    ("missing attribute: error", f"{D}.model == 'a100'", device({"index": 1}), ("error", "no such key: model")),
    ("missing attribute guarded with has()", f"has({D}.model) && {D}.model == 'a100'", device({"index": 1}), False),
    ("missing attribute, optional chaining", f"{D}.?model.orValue('none') == 'none'", device({"index": 1}), True),
    ("type mismatch: error", f"{D}.model > 0", device({"model": "a100"}), ("error", "no such overload")),
    (
        "compile_test.go driver-name-qualifier, result not a bool",
        f"{D}.name",
        device({"name": 1}),
        ("error", "CEL result of type int could not be converted to bool"),
    ),
]


@pytest.mark.parametrize(("source", "expression", "dev", "expected"), TABLE, ids=[f"{i}:{row[0]}" for i, row in enumerate(TABLE)])
def test_selector_table(compiler, source, expression, dev, expected):
    result = evaluate(compiler, expression, dev)
    if isinstance(expected, tuple):
        assert isinstance(result, SelectorError), f"{source}: expected an error, got {result!r}"
        assert expected[1] in str(result), str(result)
        assert str(result).startswith("CEL runtime error: ")
    else:
        assert result is expected, f"{source}: {result!r}"


# What the API server refuses: compile_test.go syntax-error and type-error, and the type checker
# on Kubernetes' function signatures.
INVALID = [
    ("?!", "compilation failed: ERROR: <input>:1:1: Syntax error"),
    ("1", "must evaluate to bool or the unknown type, not int"),
    ("device.driver", "must evaluate to bool or the unknown type, not string"),
    (f"{C}.memory", "must evaluate to bool or the unknown type, not kubernetes.Quantity"),
    ('semver("1.0.0")', "must evaluate to bool or the unknown type, not kubernetes.Semver"),
    ("[true]", "must evaluate to bool or the unknown type, not list(bool)"),
    (f"{C}.memory.isGreaterThan(1)", "found no matching overload for 'isGreaterThan' applied to '(kubernetes.Quantity, int)'"),
    ('quantity("1") == semver("1.0.0")', "found no matching overload for '_==_'"),
    ("isSemver([1, 2, 3])", "found no matching overload for 'isSemver'"),  # semver_test.go isSemver_noOverload
    ("device.noSuchField", "undeclared reference to 'device.noSuchField'"),
    ("noSuchVariable", "undeclared reference to 'noSuchVariable'"),
    ("device.driver == 'a' &&", "Syntax error"),
]


@pytest.mark.parametrize(("expression", "message"), INVALID)
def test_invalid_expressions_are_refused_with_the_cel_message(compiler, expression, message):
    with pytest.raises(SelectorCompileError) as refused:
        compiler.compile(expression)
    assert message in str(refused.value)
    assert refused.value.expression == expression


def test_too_long_expression_is_refused(compiler):
    expression = "true || " * (CEL_SELECTOR_EXPRESSION_MAX_LENGTH // 8) + "true"
    with pytest.raises(SelectorCompileError, match="Too long: may not be more than 10240 bytes"):
        compiler.compile(expression)


def test_dyn_result_is_accepted_at_compile_time(compiler):
    """An attribute is of unknown type: Kubernetes accepts it and decides at run time."""
    selector = compiler.compile(f"{D}.name")
    assert selector.evaluate(device({"name": True})) is True


def test_each_distinct_expression_is_compiled_once():
    compiler = SelectorCompiler(cache_size=2)
    first = compiler.compile("true")
    assert compiler.compile("true") is first
    assert compiler.compilations == 1
    for _ in range(2):
        with pytest.raises(SelectorCompileError):
            compiler.compile("1")
    assert compiler.compilations == 2  # refusals are remembered too
    compiler.compile("false")  # the cache holds two: "true", the least recently used, goes
    compiler.compile("true")
    assert compiler.compilations == 4


def test_compile_selector_shares_one_cache():
    expression = 'device.driver == "shared.example.com"'
    assert compile_selector(expression) is compile_selector(expression)
    assert isinstance(compile_selector(expression), Selector)


def test_matches_is_evaluated_once_per_device(compiler):
    selector = compiler.compile(f'{C}.memory.isGreaterThan(quantity("1Gi"))')
    dev = device(capacity={"memory": "2Gi"})
    assert selector.matches(dev) is True
    assert dev.selector_results == {selector.expression: True}
    dev.selector_results[selector.expression] = False  # a memo hit does not evaluate again
    assert selector.matches(dev) is False
    failing = compiler.compile(f"{D}.nope")
    error = failing.matches(dev)
    assert isinstance(error, SelectorError) and failing.matches(dev) is error


def test_device_from_qualified_names():
    dev = Device.from_qualified(
        "gpu.example.com",
        {"model": "a100", "example.com/rack": "r1", "cc": Semver.parse("8.0.0")},
        {"memory": "80Gi", "example.com/power": 700},
    )
    assert dev.attributes == {
        "gpu.example.com": {"model": "a100", "cc": Semver(8, 0, 0)},
        "example.com": {"rack": "r1"},
    }
    assert dev.capacity == {"gpu.example.com": {"memory": Fraction(80 * 2**30)}, "example.com": {"power": Fraction(700)}}
    with pytest.raises(ValueError, match="unsupported value"):
        Device("d", {"d": {"big": 2**63}})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "Version string empty"),
        ("1.0", "No Major.Minor.Patch elements found"),
        ("01.0.0", "leading zeroes"),
        ("1.0.0-01", "leading zeroes"),
        ("1.0.0-", "Prerelease is empty"),
        ("1.0.0+", "Build meta data is empty"),
        ("1.0.x", "Invalid character"),
        ("v1.0.0", "Invalid character"),
    ],
)
def test_semver_parse_refuses_as_blang_does(text, message):
    with pytest.raises(SemverError, match=message):
        Semver.parse(text)


def test_semver_round_trip_and_order():
    assert str(Semver.parse("1.2.3-rc.1+build.5")) == "1.2.3-rc.1+build.5"
    order = ["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0"]
    parsed = [Semver.parse(v) for v in order]
    for a, b in zip(parsed, parsed[1:]):
        assert a.compare(b) == -1 and b.compare(a) == 1
    assert Semver.parse_normalized("v01.2") == Semver(1, 2, 0)
    with pytest.raises(SemverError, match="short version"):
        Semver.parse_normalized("1.2-rc")
