from fractions import Fraction

import pytest

from vcsched.api.quantity import QuantityError, format_bytes, milli_value, parse_quantity, value
from vcsched.api.resource import Default, Resource, share


@pytest.mark.parametrize("raw, expected", [
    ("500m", Fraction(1, 2)), ("2", 2), ("1.5", Fraction(3, 2)), (".5", Fraction(1, 2)),
    ("1k", 1000), ("1M", 10**6), ("1G", 10**9), ("1T", 10**12),
    ("1Ki", 1024), ("1Mi", 2**20), ("1.5Gi", Fraction(3, 2) * 2**30), ("1Ti", 2**40),
    ("1e3", 1000), ("1E-3", Fraction(1, 1000)), ("+2", 2), ("-1", -1), (3, 3), (0.25, Fraction(1, 4)),
    ("100n", Fraction(1, 10**7)), ("5u", Fraction(5, 10**6)),
])
def test_parse_quantity(raw, expected):
    assert parse_quantity(raw) == expected


@pytest.mark.parametrize("raw", ["", "1x", "abc", "1.2.3", "Gi", "1 Gi", "1gi", True, None, [1], "1e1000"])
def test_garbled_quantities_are_refused(raw):
    with pytest.raises(QuantityError):
        parse_quantity(raw)


def test_conversions_round_up_like_the_api_machinery():
    assert milli_value(parse_quantity("0.1m")) == 1
    assert value(parse_quantity("1.5")) == 2
    assert format_bytes(3 * 2**30) == "3Gi"


def test_from_list_units():
    r = Resource.from_list({"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": "2", "pods": "110",
                            "hugepages-2Mi": "4Mi", "count/pods": "3", "requests.cpu": "1", "storage": "1"})
    assert r.milli_cpu == 500 and r.memory == 2**30
    assert r.scalars == {"nvidia.com/gpu": 2000, "pods": 110, "hugepages-2Mi": 4 * 2**20 * 1000}
    assert r.max_task_num == 110


def test_node_without_pods_allocatable_fits_nothing():
    req = Resource.from_list({"cpu": "2", "memory": "1Gi", "pods": 1})
    idle = Resource(2000.05, 2 * 2**30)
    assert not req.less_equal(idle, Default.ZERO)
    assert req.less_equal_with_names(idle) == ["pods"]


def test_less_equal_tolerance_and_infinity():
    a = Resource(1000.05, 0, {"x/y": 1000})
    assert a.less_equal(Resource(1000, 0, {"x/y": 1000}))
    assert not a.less_equal(Resource(999, 0, {"x/y": 1000}))
    assert a.less_equal(Resource(2000, 0, {}), Default.INFINITY)
    assert not Resource(1, 1).less_equal(Resource(2, 2, {"x/y": 1}), Default.INFINITY)


def test_strict_dimension_check_only_looks_at_requested_dimensions():
    allocated = Resource(5000, 2**30, {"pods": 3})
    deserved = Resource(3333.3, 8 * 2**30, {"pods": 1})
    req = Resource(1000, 2**30, {"pods": 1})
    assert allocated.less_equal_strict_in(deserved, req) == ["cpu"]


def test_is_empty_ignores_pods_and_share():
    assert Resource(0, 0, {"pods": 1}).is_empty()
    assert not Resource(0.2, 0).is_empty()
    assert share(0, 0) == 0 and share(1, 0) == 1 and share(1, 4) == 0.25


def test_to_list_writes_volcano_units():
    r = Resource(1500, 3 * 2**30, {"pods": 2, "nvidia.com/gpu": 1000})
    assert r.to_list() == {"cpu": "1500m", "memory": "3Gi", "pods": "2", "nvidia.com/gpu": "1"}
