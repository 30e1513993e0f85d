"""A pod's quota usage (PodGroup minResources), init containers and sidecars included (issue 16)."""

from fractions import Fraction

from vcsched.controllers.quota import format_usage, pod_usage


def c(**limits: str) -> dict:
    return {"name": "x", "resources": {"requests": dict(limits), "limits": dict(limits)}}


def test_extended_resources_in_init_containers_take_the_larger_of_init_and_sum():
    spec = {"initContainers": [c(**{"volcano.sh/gpu-memory": "8000", "cpu": "2"})],
            "containers": [c(**{"volcano.sh/gpu-memory": "3000", "cpu": "500m"}),
                           c(**{"volcano.sh/gpu-memory": "3000", "cpu": "500m"})]}
    usage = pod_usage(spec)
    assert usage["requests.volcano.sh/gpu-memory"] == usage["volcano.sh/gpu-memory"] == Fraction(8000)
    assert usage["requests.cpu"] == Fraction(2)
    assert format_usage(usage)["cpu"] == "2"


def test_sidecars_add_to_the_containers_and_to_each_later_init_container():
    sidecar = {**c(cpu="1", **{"example.com/nic": "1"}), "restartPolicy": "Always"}
    spec = {"initContainers": [sidecar, c(cpu="3")], "containers": [c(cpu="1")]}
    usage = pod_usage(spec)
    # containers + sidecar = 2; the init container after the sidecar runs beside it: 3 + 1 = 4
    assert usage["requests.cpu"] == Fraction(4)
    assert usage["requests.example.com/nic"] == Fraction(1)


def test_overhead_counts_in_requests_only():
    spec = {"containers": [c(cpu="1")], "overhead": {"cpu": "250m"}}
    usage = pod_usage(spec)
    assert usage["requests.cpu"] == Fraction(5, 4) and usage["limits.cpu"] == Fraction(1)
