"""resource-strategy-fit end to end through ``vcsched simulate``
(plugins/resource-strategy-fit: resource_strategy_fit_test.go, proportional_test.go, sra_test.go).

Placements show each strategy, the pod-level strategy annotations, sra and the proportional reservation;
the Go cases that only compare a score number (TestScore, Test_mostRequestedScore,
Test_leastRequestedScore, Test_findResourceConfigWithPrefix, Test_calculateWeight's repairs) are unit
tests on the scoring functions at the end of this file, since a placement shows only which node scored
most, not by how much.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from vcsched.api.resource import Resource
from vcsched.framework.arguments import Arguments
from vcsched.plugins.resource_strategy_fit import (
    LEAST_ALLOCATED, MOST_ALLOCATED, STRATEGY_ANNOTATION, WEIGHT_ANNOTATION, ResourceStrategyFitPlugin,
    find_resource_config, strategy_score,
)

GPU = "nvidia.com/gpu"


def conf(arguments: str = "", predicates: bool = True, nodeorder: bool = False) -> str:
    args = ""
    if arguments:
        args = "    arguments:\n" + "".join(f"      {line}\n" for line in arguments.strip("\n").split("\n"))
    return ('actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: gang\n'
            + ("  - name: predicates\n" if predicates else "")
            + ("  - name: nodeorder\n" if nodeorder else "")
            + "  - name: resource-strategy-fit\n" + args)


def node(name: str, cpu: str = "5", memory: str = "10Gi", gpu: str | None = None, labels: str = "") -> str:
    extra = f', {GPU}: "{gpu}"' if gpu else ""
    return f"""
---
apiVersion: v1
kind: Node
metadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}{labels}}}}}
status: {{allocatable: {{cpu: "{cpu}", memory: {memory}, pods: "10"{extra}}}}}
"""


def pod(name: str, cpu: str = "1", memory: str = "1G", gpu: str | None = None, node_name: str | None = None,
        selector: str | None = None, annotations: dict[str, str] | None = None) -> str:
    ann = ", ".join(f"{k}: '{v}'" for k, v in (annotations or {}).items())
    gpu_req = f', {GPU}: "{gpu}"' if gpu else ""
    placed = f"nodeName: {node_name}, " if node_name else ""
    pinned = f"nodeSelector: {{{selector}}}, " if selector else ""
    return f"""
---
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default, annotations: {{{ann}}}}}
spec:
  {{schedulerName: volcano, {placed}{pinned}containers: [{{name: c, image: x, resources: {{requests: {{cpu: "{cpu}", memory: {memory}{gpu_req}}}}}}}]}}
{'status: {phase: Running}' if node_name else ''}
"""


def placed(out) -> dict[str, str | None]:
    return {k: p["node"] for k, p in out["pods"].items()}


TEST_ALLOCATE_ARGS = """
resourceStrategyFitWeight: 10
resources:
  nvidia.com/gpu: {type: MostAllocated, weight: 2}
  cpu: {type: LeastAllocated, weight: 1}
"""
GPU_NODES = node("n1", gpu="10", labels=", nodeResourceType: gpu") + node("n2", gpu="10", labels=", nodeResourceType: gpu")
CPU_NODES = node("n3", labels=", nodeResourceType: cpu") + node("n4", labels=", nodeResourceType: cpu")


def test_allocate_gpu_most_allocated(simulate):
    """TestAllocate "GPU MostAllocated": the GPU pod joins the node whose GPUs are already in use (n2),
    although nodeorder's least-requested score prefers the empty n1."""
    cluster = GPU_NODES + CPU_NODES + pod("p2", gpu="2", node_name="n2") + pod(
        "p1", gpu="2", selector="nodeResourceType: gpu")
    code, out = simulate(cluster, conf=conf(TEST_ALLOCATE_ARGS, nodeorder=True))
    assert code == 0, out
    assert placed(out)["default/p1"] == "n2"


def test_allocate_cpu_least_allocated(simulate):
    """TestAllocate "cpu LeastAllocated": the CPU pod goes to the empty CPU node n4, not to n3 where p4 runs
    (the nodes are listed n3 first)."""
    cluster = GPU_NODES + CPU_NODES + pod("p4", node_name="n3") + pod("p3", selector="nodeResourceType: cpu")
    code, out = simulate(cluster, conf=conf(TEST_ALLOCATE_ARGS, nodeorder=True))
    assert code == 0, out
    assert placed(out)["default/p3"] == "n4"


def test_default_strategy_spreads_and_most_allocated_packs(simulate):
    """The default resources (cpu and memory LeastAllocated, weight 1) spread pods; MostAllocated packs them."""
    cluster = node("a", cpu="8", memory="16Gi") + node("b", cpu="8", memory="16Gi") + pod("x1") + pod("x2")
    code, out = simulate(cluster, conf=conf())
    assert code == 0, out
    assert sorted(placed(out).values()) == ["a", "b"]
    packed = "resources:\n  cpu: {type: MostAllocated, weight: 1}\n  memory: {type: MostAllocated, weight: 1}"
    code, out = simulate(cluster, conf=conf(packed))
    assert code == 0, out
    assert len(set(placed(out).values())) == 1


def test_wildcard_strategy(simulate):
    """A trailing-'*' key applies to the resources it prefixes (nvidia.com/gpu here): MostAllocated packs
    GPU pods onto the node already using GPUs; without the key GPUs are not scored and the emptier node wins."""
    cluster = node("g1", gpu="8") + node("g2", gpu="8") + pod("run", cpu="2", gpu="4", node_name="g2") + pod(
        "new", gpu="1")
    code, out = simulate(cluster, conf=conf("resources:\n  nvidia.com/*: {type: MostAllocated, weight: 5}"))
    assert code == 0, out
    assert placed(out)["default/new"] == "g2"
    code, out = simulate(cluster, conf=conf())
    assert code == 0, out
    assert placed(out)["default/new"] == "g1"


def test_pod_level_strategy_annotations_and_shape(simulate):
    """TestScore "pod-level-scoring-*": a pod's own annotations override the plugin's strategy.  Two pods
    identical but for the annotations (so one pod shape) land apart: the score depends on the
    annotations, declared through TASK_SHAPE, so the node search must not share the first's scores (with
    "most"'s stale score for the untouched node a, "least" would follow it to b)."""
    cluster = (node("a", cpu="8", memory="16Gi") + node("b", cpu="8", memory="16Gi")
               + pod("busy", cpu="2", memory="2Gi", node_name="b")
               + pod("most", annotations={STRATEGY_ANNOTATION: MOST_ALLOCATED,
                                          WEIGHT_ANNOTATION: '{"cpu": 1, "memory": 1}'}) + pod("least"))
    code, out = simulate(cluster, conf=conf())
    assert code == 0, out
    assert placed(out)["default/least"] == "a"
    assert placed(out)["default/most"] == "b"


def test_sra_keeps_gpu_nodes_for_gpu_pods(simulate):
    """sra: a pod that needs no GPU prefers the node without GPUs, even though the GPU node is emptier
    (the strategy score alone, sra off, picks the GPU node)."""
    cluster = (node("gpu", cpu="8", memory="16Gi", gpu="4") + node("plain", cpu="8", memory="16Gi")
               + pod("busy", cpu="3", memory="3Gi", node_name="plain") + pod("cpu-only"))
    sra = "sra:\n  enable: true\n  resources: nvidia.com/gpu\n  weight: 10\n  resourceWeight: {nvidia.com/gpu: 1}"
    code, out = simulate(cluster, conf=conf(sra))
    assert code == 0, out
    assert placed(out)["default/cpu-only"] == "plain"
    code, out = simulate(cluster, conf=conf())
    assert code == 0, out
    assert placed(out)["default/cpu-only"] == "gpu"


PROPORTIONAL = """
proportional:
  enable: true
  resources: nvidia.com/gpu
  resourceProportion: {nvidia.com/gpu.cpu: 4, nvidia.com/gpu.memory: 4}
"""


@pytest.mark.parametrize("case, node_name, req, gpu, fits", [
    # Test_checkNodeResourceIsProportional: n1 (30 cpu, 30G, 6 GPUs) reserves 24 cpu and 24G for its GPUs
    ("cpu_task_less_than_reserved_resource", "n1", ("4", "4G"), None, True),
    ("cpu_task_greater_than_reserved_resource", "n1", ("10", "10G"), None, False),
    ("gpu_task_no_proportional_check", "n1", ("10", "10G"), "1", True),
    # n2 (26 cpu, 26G, 2 GPUs) reserves 8 cpu and 8G
    ("cpu_task_less_than_reserved_resource (n2)", "n2", ("10", "10G"), None, True),
])
def test_proportional(simulate, case, node_name, req, gpu, fits):
    """Test_checkNodeResourceIsProportional, each case a pod pinned to its node."""
    cluster = (node("n1", cpu="30", memory="30G", gpu="6") + node("n2", cpu="26", memory="26G", gpu="2")
               + pod("t", cpu=req[0], memory=req[1], gpu=gpu, selector=f"kubernetes.io/hostname: {node_name}"))
    code, out = simulate(cluster, conf=conf(PROPORTIONAL))
    assert code == 0, out
    got = out["pods"]["default/t"]
    if fits:
        assert got["node"] == node_name, (case, got)
    else:
        assert got["node"] is None, (case, got)
        assert "proportional of resource nvidia.com/gpu check failed" in str(got.get("reason")), got
    # without the reservation every case fits
    code, out = simulate(cluster, conf=conf())
    assert code == 0 and out["pods"]["default/t"]["node"] == node_name


@pytest.mark.parametrize("arguments, field", [
    ('resourceStrategyFitWeight: "10"', "resourceStrategyFitWeight"),
    ("resources: [cpu]", "resources"),
    ("resources:\n  cpu: {type: MostAllocated, weight: heavy}", "resources.cpu.weight"),
    ("resources:\n  cpu: {type: 3}", "resources.cpu.type"),
    ("sra: {enable: maybe}", "sra.enable"),
    ("sra: {enable: true, weight: 1.5}", "sra.weight"),
    ("sra: {enable: true, resources: nvidia.com/gpu, resourceWeight: {nvidia.com/gpu: x}}",
     "sra.resourceWeight.nvidia.com/gpu"),
    ("proportional: {enable: true, resources: [nvidia.com/gpu]}", "proportional.resources"),
    ("proportional: {enable: true, resourceProportion: {nvidia.com/gpu.cpu: four}}",
     "proportional.resourceProportion.nvidia.com/gpu.cpu"),
])
def test_bad_arguments_refused(simulate, arguments, field):
    code, err = simulate(node("a") + pod("p"), conf=conf(arguments))
    assert code == 2, err
    assert field in err, err


# -- the scoring functions, where only a number shows the Go case -------------------------------------

def _task(cpu: float, mem: float, annotations: dict[str, str] | None = None):
    return SimpleNamespace(resreq=Resource(cpu, mem), pod={"metadata": {"annotations": annotations or {}}})


def _node(used_cpu: float, used_mem: float, alloc_cpu: float, alloc_mem: float):
    return SimpleNamespace(used=Resource(used_cpu, used_mem), allocatable=Resource(alloc_cpu, alloc_mem))


def _both(kind_cpu: str, w_cpu: int, kind_mem: str, w_mem: int):
    return {"cpu": (kind_cpu, w_cpu), "memory": (kind_mem, w_mem)}


L, M = LEAST_ALLOCATED, MOST_ALLOCATED
POD_L = {STRATEGY_ANNOTATION: L, WEIGHT_ANNOTATION: '{"cpu": 2, "memory": 1}'}


@pytest.mark.parametrize("name, task, nd, weight, resources, want", [
    ("test1", _task(100, 100), _node(200, 200, 500, 500), 10, _both(L, 1, L, 1), 400),
    ("test2", _task(100, 100), _node(200, 200, 400, 400), 10, _both(L, 1, L, 1), 250),
    ("test3", _task(100, 100), _node(200, 200, 500, 500), 10, _both(M, 1, M, 1), 600),
    ("test4", _task(100, 100), _node(200, 200, 400, 400), 10, _both(M, 1, M, 1), 750),
    ("test5", _task(100, 100), _node(200, 200, 500, 500), 10, _both(L, 2, M, 1), 466.66666667),
    ("test6", _task(100, 100), _node(200, 200, 500, 500), 10, _both(L, 1, M, 2), 533.33333333),
    ("test7", _task(0, 100), _node(200, 200, 500, 500), 10, _both(L, 1, M, 2), 600),
    ("test8", _task(100, 100), _node(200, 200, 0, 400), 10, _both(L, 1, M, 2), 500),
    ("test9", _task(100, 100), _node(200, 200, 500, 500), 10, {"memory": (M, 2)}, 600),
    ("pod-level-scoring-least-allocated", _task(100, 100, POD_L), _node(200, 200, 500, 500), 10,
     _both(L, 1, L, 1), 400),
    ("pod-level-scoring-most-allocated",
     _task(100, 100, {STRATEGY_ANNOTATION: M, WEIGHT_ANNOTATION: '{"cpu": 1, "memory": 2}'}),
     _node(200, 200, 500, 500), 10, _both(L, 1, L, 1), 600),
    ("pod-level-scoring-invalid-json",
     _task(100, 100, {STRATEGY_ANNOTATION: L, WEIGHT_ANNOTATION: "invalid-json"}),
     _node(200, 200, 500, 500), 10, _both(L, 1, L, 1), 0),
    ("pod-level-scoring-missing-resource-weight",
     _task(100, 100, {STRATEGY_ANNOTATION: L, WEIGHT_ANNOTATION: '{"cpu": 2}'}),
     _node(200, 200, 500, 500), 10, _both(L, 1, L, 1), 400),
    ("pod-level weight annotation missing", _task(100, 100, {STRATEGY_ANNOTATION: L}),
     _node(200, 200, 500, 500), 10, _both(L, 1, L, 1), 0),
    ("zero-resources-requested", _task(0, 0), _node(200, 200, 500, 500), 10, _both(L, 1, L, 1), 0),
    ("node-fully-allocated", _task(100, 100), _node(500, 500, 500, 500), 10, _both(L, 1, L, 1), 0),
    ("mixed-scoring-strategies", _task(100, 100), _node(200, 200, 500, 500), 10, _both(L, 3, M, 1), 450),
    ("high-weight-scenario", _task(100, 100), _node(200, 200, 500, 500), 20, _both(L, 5, L, 5), 800),
])
def test_score(name, task, nd, weight, resources, want):
    """TestScore (with Test_mostRequestedScore / Test_leastRequestedScore folded in): the number itself."""
    assert strategy_score(task, nd, weight, resources) == pytest.approx(want, abs=1e-6), name


def test_find_resource_config_with_prefix():
    """Test_findResourceConfigWithPrefix: exact key first, else the longest matching prefix, else none."""
    res = {"nvidia.com/gpu": (M, 3), "nvidia.com/*": (L, 2), "nvidia.*": (L, 1)}
    assert find_resource_config("nvidia.com/gpu", res) == (M, 3)
    assert find_resource_config("nvidia.com/mig", res) == (L, 2)
    assert find_resource_config("nvidia.x", res) == (L, 1)
    assert find_resource_config("amd.com/gpu", res) is None
    assert find_resource_config("cpu", {}) is None


def test_calculate_weight_repairs():
    """Test_calculateWeight: defaults, a weight <= 0 becomes 1, an unknown type LeastAllocated, bad
    wildcards dropped, a negative plugin weight 10; sra and proportional defaults."""
    p = ResourceStrategyFitPlugin(Arguments({}))
    assert p.weight == 10 and p.resources == {"cpu": (L, 1), "memory": (L, 1)}
    assert p.sra_weight == 0 and p.proportional is None
    p = ResourceStrategyFitPlugin(Arguments({
        "resourceStrategyFitWeight": -3,
        "resources": {"cpu": {"type": "Other", "weight": 0}, "*": {"type": M, "weight": 1},
                      "a*b": {"type": M}, "x/*/*": {"type": M}, "gpu/*": {"type": M, "weight": 4}},
        "sra": {"enable": True, "resources": "nvidia.com/gpu, a", "resourceWeight": {"a": -2}},
        "proportional": {"enable": True, "resources": "nvidia.com/gpu",
                         "resourceProportion": {"nvidia.com/gpu.cpu": -1, "nvidia.com/gpu.memory": 8}},
    }))
    assert p.weight == 10
    assert p.resources == {"cpu": (L, 1), "gpu/*": (M, 4)}
    assert p.sra_weight == 0 and p.sra_resources == {"nvidia.com/gpu": 1, "a": 1} and p.sra_weight_sum == 2
    assert p.proportional == {"nvidia.com/gpu": (1.0, 8.0)}
    assert ResourceStrategyFitPlugin(Arguments({"resourceStrategyFitWeight": 0})).weight == 0
