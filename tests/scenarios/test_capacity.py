"""capacity end to end: every case of Volcano's plugins/capacity/capacity_test.go through ``vcsched simulate``.

Each test names the Go test and case it reproduces.  The Go cases run one session
(``uthelper.TestCommonStruct.Run``), so they run here with ``--cycles 1``: binds are in
the output, a reclaim shows as the evicted victims plus the reclaimer *pipelined*
(still pending, "can possibly be assigned to <node>, once resource is released").

The Go tiers set only some enable flags and leave the others nil, which Volcano reads
as off (``isEnabled(nil)`` is false; only a conf file gets the defaults of
``ApplyPluginConfDefaults``).  ``option()`` writes the same: every flag false but the
ones the Go case sets, so for instance gang votes on no victims and holds no job back.

What a manifest cannot say as the Go test's builders do is re-expressed, and the test
says how: a pod's bare ``Spec.Priority`` comes from a PriorityClass, names with ``_`` or
capitals are spelled as the API server accepts them, a pod Binding is given Bound, a test
double plugin is replaced by a real one.  ``simulate`` also makes a ``default`` queue (under
``root``), as Volcano's queue controller does; it holds no job and declares nothing, so it
changes no sum of a tree and no order.  DRA-only cases (TestCapacityPluginDRA and the
DRA unit tests) are left out, as the plugin leaves DRA quotas out.
Test_updateQueueAttrShare, the nil-safety regressions and the hierarchy's case7, which call
the plugin's functions or need a cluster that ``simulate`` refuses, are in
tests/unit/test_capacity.py.
"""

from __future__ import annotations

import re
import signal

import pytest
import yaml

from vcsched.conf import ENABLE_FLAGS

from .conftest import node, pod, podgroup, queue

NS = "ns1"


# -- the conf: Volcano's test tiers, flag for flag -----------------------------------------------


def option(name: str, *enabled: str, hierarchy: bool = False, arguments: str = "") -> str:
    """One plugin option with every enable flag off except ``enabled`` (Go's nil flags are off)."""
    lines = [f"  - name: {name}"]
    lines += [f"    {flag}: {'true' if flag in enabled else 'false'}"
              for flag in ENABLE_FLAGS if flag != "enableHierarchy"]
    if hierarchy:
        lines.append("    enableHierarchy: true")
    if arguments:
        lines.append(f"    arguments: {{{arguments}}}")
    return "\n".join(lines) + "\n"


def conf(actions: str, *options: str) -> str:
    return f'actions: "{actions}"\ntiers:\n- plugins:\n' + "".join(options)


PREDICATES = option("predicates", "enablePredicate")
GANG_STARVING = option("gang", "enableJobStarving")


# -- manifests as Volcano's test builders make them ---------------------------------------------


def rl(cpu: str | None = None, memory: str | None = None, **scalars: str) -> dict[str, str]:
    """``api.BuildResourceList``: an empty cpu or memory is left out; scalars by their short name in
    ``SCALARS`` (``a100`` for ``nvidia.com/a100``), else as given."""
    out: dict[str, str] = {}
    if cpu:
        out["cpu"] = cpu
    if memory:
        out["memory"] = memory
    for key, value in scalars.items():
        out[SCALARS.get(key, key)] = value
    return out


SCALARS = {"gpu": "nvidia.com/gpu", "a100": "nvidia.com/a100", "A100": "nvidia.com/A100", "rdma_hca": "rdma/hca",
           "hugepages": "hugepages-1Gi"}


def flow(resources: dict[str, str]) -> str:
    return "{" + ", ".join(f'{k}: "{v}"' for k, v in resources.items()) + "}"


def gnode(name: str, resources: dict[str, str], labels: dict[str, str] | None = None) -> str:
    """``util.BuildNode``: allocatable as given (its ``pods`` included)."""
    res = dict(resources)
    doc = node(name, cpu=res.pop("cpu", "0"), memory=res.pop("memory", "0"), pods=int(res.pop("pods", "0")),
               resources=res)
    for key, value in (labels or {}).items():
        doc = doc.replace("labels: {", f"labels: {{{key}: {value}, ", 1)
    return doc


def gpod(name: str, group: str, req: dict[str, str], node_name: str | None = None, *,
         preemptable: bool | None = None, selector: dict[str, str] | None = None,
         priority_class: str | None = None) -> str:
    """``util.BuildPod``: Running on ``node_name`` when given, else Pending; ``preemptable`` as its label."""
    req = dict(req)
    cpu, memory = req.pop("cpu", "0"), req.pop("memory", "0")
    meta = f'  labels: {{volcano.sh/preemptable: "{str(preemptable).lower()}"}}' if preemptable is not None else ""
    spec = []
    if selector:
        spec.append("  nodeSelector: " + flow(selector))
    if priority_class:
        spec.append(f"  priorityClassName: {priority_class}")
    doc = pod(name, cpu=cpu, memory=memory, group=group, ns=NS, node_name=node_name,
              phase="Running" if node_name else None, meta_extra=meta, spec_extra="\n".join(spec))
    if req:
        more = "".join(f', {k}: "{v}"' for k, v in req.items())
        doc = doc.replace(f"memory: {memory}}}", f"memory: {memory}{more}}}", 1)
    return doc


def gpg(name: str, queue_name: str, phase: str, min_member: int = 1, min_resources: dict[str, str] | None = None
        ) -> str:
    """``util.BuildPodGroup`` (``BuildPodGroupWithMinResources``) with its status phase."""
    extra = f"  minResources: {flow(min_resources)}\n" if min_resources is not None else ""
    return podgroup(name, min_member, queue=queue_name, ns=NS, extra=extra + f"status: {{phase: {phase}}}")


def gqueue(name: str, deserved: dict[str, str] | None = None, capability: dict[str, str] | None = None, *,
           parent: str | None = None, priority: int | None = None, guarantee: dict[str, str] | None = None,
           state: str | None = None) -> str:
    """``util.BuildQueueWithResourcesQuantity`` (weight 1, Open) and ``buildQueueWithParents``."""
    spec = []
    if deserved:
        spec.append("  deserved: " + flow(deserved))
    if capability:
        spec.append("  capability: " + flow(capability))
    if guarantee:
        spec.append(f"  guarantee: {{resource: {flow(guarantee)}}}")
    if parent:
        spec.append(f"  parent: {parent}")
    if priority is not None:
        spec.append(f"  priority: {priority}")
    if state:
        spec.append(f"status: {{state: {state}}}")
    return queue(name, extra="\n".join(spec))


def priority_class(name: str, value: int) -> str:
    return f"""
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: {name}
value: {value}
"""


# -- what one session did ---------------------------------------------------------------------------

PIPELINED = re.compile(r"can possibly be assigned to ([^,]+), once resource is released")


def placed(out: dict) -> dict[str, str]:
    """Every pod on a node at the end: those that ran before and those bound now."""
    return {k.removeprefix(NS + "/"): p["node"] for k, p in out["pods"].items() if p["node"]}


def pipelined(out: dict) -> dict[str, str]:
    """Pending pods pipelined onto a node (room made by evictions, not yet theirs)."""
    found = {}
    for k, p in out["pods"].items():
        m = PIPELINED.search(p["reason"] or "") if not p["node"] else None
        if m:
            found[k.removeprefix(NS + "/")] = m.group(1)
    return found


def evicted(out: dict) -> list[str]:
    return sorted(k.removeprefix(NS + "/") for k in out["evicted"])


def cases(table: dict, overcommitted_input: tuple[str, ...] = ()) -> list:
    """The Go case names, with pytest ids of their first word (``case3``); those ids in
    ``overcommitted_input`` start with a node holding more than it has, as Volcano's case wrote it."""
    return [pytest.param(name, id=name.split(":")[0],
                         marks=[pytest.mark.overcommitted_input] if name.split(":")[0] in overcommitted_input else [])
            for name in table]


def one_session(simulate, manifests: str, conf_text: str) -> dict:
    code, out = simulate(manifests, "--cycles", "1", conf=conf_text)
    assert code == 0, out
    return out


def running_at_start(manifests: str) -> dict[str, str]:
    return {d["metadata"]["name"]: d["spec"]["nodeName"] for d in yaml.safe_load_all(manifests)
            if d and d.get("kind") == "Pod" and d["spec"].get("nodeName")}


def check(out: dict, manifests: str, binds: dict[str, str] | None = None, evicts: tuple[str, ...] = (),
          pipes: dict[str, str] | None = None) -> None:
    """Go's ExpectBindMap/ExpectBindsNum, ExpectEvicted/ExpectEvictNum and ExpectPipeLined, and nothing
    else moved: the pods that ran still run where they ran, but the victims."""
    assert evicted(out) == sorted(evicts)
    assert pipelined(out) == (pipes or {})
    start = running_at_start(manifests)
    assert placed(out) == {k: v for k, v in start.items() if k not in evicts} | (binds or {})


# -- Test_capacityPlugin_OnSessionOpenWithoutHierarchy -------------------------------------------

FLAT_CONF = conf("allocate, reclaim",
                 option("capacity", "enabledAllocatable", "enablePreemptive", "enableReclaimable", "enableQueueOrder"),
                 PREDICATES, GANG_STARVING)

N1 = gnode("n1", rl("2", "4Gi", pods="10"), labels={"selector": "worker"})
N2 = gnode("n2", rl("2", "4Gi", pods="10"))
N3 = gnode("n3", rl("2", "4Gi", A100="10", pods="10"), labels={"selector": "worker"})
N4 = gnode("n4", rl("2", "4Gi", A100="10", pods="10"))
N5 = gnode("n5", rl("2", "4Gi", pods="10"))
N6 = gnode("n6", rl("2", "4Gi", pods="10"))
N7 = gnode("n7", rl("4", "8Gi", gpu="4", pods="10"))
N8 = gnode("n8", rl("4", "8Gi", gpu="1", pods="10"))
N9 = gnode("n9", rl("8", "100Gi", pods="10"))
N10 = gnode("n10", rl("8", "100Gi", pods="10"))

FLAT_CASES = {
    "case0: Pod allocatable when queue has not exceed capability": (
        N1 + N2 + gqueue("q1", None, rl("2", "2Gi"))
        + gpg("pg1", "q1", "Running") + gpg("pg2", "q1", "Inqueue")
        + gpod("p1", "pg1", rl("1", "1Gi"), "n1")
        + gpod("p2", "pg2", rl("1", "1Gi"), selector={"selector": "worker"}),
        {"p2": "n1"}, (), {}),
    "case1: Pod not allocatable when queue exceed queue capability": (
        N1 + N2 + gqueue("q2", None, rl("1.5", "1.5Gi"))
        + gpg("pg3", "q2", "Running") + gpg("pg4", "q2", "Inqueue")
        + gpod("p3", "pg3", rl("1", "1Gi"), "n1") + gpod("p4", "pg4", rl("1", "1Gi")),
        {}, (), {}),
    "case2: Can reclaim from other queues when allocated < deserved": (
        N1 + N2 + gqueue("q3", rl("2", "4Gi")) + gqueue("q4", rl("2", "4Gi"))
        + gpg("pg5", "q3", "Running") + gpg("pg6", "q4", "Inqueue")
        + gpod("p5", "pg5", rl("2", "4Gi"), "n1", preemptable=False) + gpod("p6", "pg5", rl("2", "4Gi"), "n2")
        + gpod("p7", "pg6", rl("2", "4Gi")),
        {}, ("p6",), {"p7": "n2"}),
    "case3: CPU & Memory are overused, scalar resource is not overused, but candidate pod has not request CPU & "
    "Memory, reclaim should happen": (
        N3 + N4 + gqueue("q5", rl("2", "4Gi", A100="10")) + gqueue("q6", rl("2", "4Gi", A100="10"))
        + gpg("pg7", "q5", "Running") + gpg("pg8", "q6", "Running") + gpg("pg9", "q6", "Inqueue")
        + gpod("p8", "pg7", rl("0", "0Gi", A100="10"), "n3", preemptable=False)
        + gpod("p9", "pg7", rl("0", "0Gi", A100="10"), "n4")
        + gpod("p10", "pg8", rl("2", "4Gi"), "n3") + gpod("p11", "pg8", rl("2", "4Gi"), "n4")
        + gpod("p12", "pg9", rl("0", "0Gi", A100="10")),
        {}, ("p9",), {"p12": "n4"}),
    "case4: Pods are assigned according to the order of Queue Priority in which PGs are placed": (
        N5 + N6 + gqueue("q7", None, rl("2", "4Gi"), priority=5) + gqueue("q8", None, rl("2", "4Gi"), priority=1)
        + gqueue("q9", None, rl("2", "4Gi"), priority=10)
        + gpg("pg10", "q7", "Running") + gpg("pg11", "q8", "Inqueue") + gpg("pg12", "q9", "Inqueue")
        + gpod("p13", "pg10", rl("2", "4Gi"), "n5") + gpod("p14", "pg11", rl("2", "4Gi"))
        + gpod("p15", "pg12", rl("2", "4Gi")),
        {"p15": "n6"}, (), {}),
    "case5: Can reclaim from other queues when allocated + req <= deserved on one dimension": (
        N1 + gqueue("q10", rl("2", "2Gi"), rl("4", "4Gi")) + gqueue("q11", rl("0", "0Gi"), rl("2", "2Gi"))
        + gpg("pg16", "q10", "Running") + gpg("pg17", "q10", "Inqueue") + gpg("pg18", "q11", "Running")
        + gpod("p16", "pg16", rl("1", "3Gi"), "n1") + gpod("p17", "pg17", rl("1", "1Gi"))
        + gpod("p18", "pg18", rl("1", "1Gi"), "n1"),
        {}, ("p18",), {"p17": "n1"}),
    "case6: Can not reclaim from other queues when allocated + req > deserved": (
        N1 + gqueue("q12", rl("1", "2Gi"), rl("4", "4Gi")) + gqueue("q13", rl("0", "0Gi"), rl("2", "2Gi"))
        + gpg("pg19", "q12", "Running") + gpg("pg20", "q12", "Inqueue") + gpg("pg21", "q13", "Running")
        + gpod("p19", "pg19", rl("1", "1Gi"), "n1") + gpod("p20", "pg20", rl("1", "2Gi"))
        + gpod("p21", "pg21", rl("1", "1Gi"), "n1"),
        {}, (), {}),
    "case7: allocated does not contain scalar dimension (GPU), deserved does; should not reclaim": (
        N7 + gqueue("queue14", rl("2", "4Gi", gpu="2")) + gqueue("queue15")
        + gqueue("queue16", rl("2", "4Gi", gpu="2"))
        + gpg("pg22", "queue14", "Running") + gpg("pg23", "queue15", "Running")
        + gpg("pg24", "queue16", "Running") + gpg("pg25", "queue16", "Inqueue")
        + gpod("p22", "pg22", rl("2", "4Gi"), "n7") + gpod("p23", "pg23", rl("0", "0Gi", gpu="1"), "n7")
        + gpod("p24", "pg24", rl("2", "1Gi", gpu="1"), "n7") + gpod("p25", "pg25", rl("2", "3Gi", gpu="1")),
        {}, (), {}),
    "case8: reclaimer dimensions are considered properly while evicting reclaimees": (
        N8 + gqueue("queue17", rl("2", "2Gi")) + gqueue("queue18", rl("2", "4Gi", gpu="1"))
        + gpg("pg26", "queue17", "Running") + gpg("pg27", "queue17", "Running") + gpg("pg28", "queue17", "Running")
        + gpg("pg29", "queue18", "Running") + gpg("pg30", "queue18", "Inqueue")
        + gpod("p26", "pg26", rl("0", "4Gi"), "n8") + gpod("p27", "pg27", rl("1", "0Gi"), "n8")
        + gpod("p28", "pg28", rl("0", "0Gi", gpu="1"), "n8") + gpod("p29", "pg29", rl("2", "4Gi"), "n8")
        + gpod("p30", "pg30", rl("1", "0Gi", gpu="1")),
        {}, ("p28",), {"p30": "n8"}),
    "case9: reclaimee has intersecting scalar dimensions with deserved shouldn't be reclaimed on cpu/memory": (
        N8 + gqueue("queue19", rl("", "", gpu="1")) + gqueue("queue20", rl("2", "2Gi"))
        + gpg("pg31", "queue19", "Running") + gpg("pg32", "queue20", "Inqueue")
        + gpod("p31", "pg31", rl("4", "4Gi", gpu="1"), "n8") + gpod("p32", "pg32", rl("1", "1Gi")),
        {}, (), {}),
    "case10: PreemptiveFn respects capability - no reclaim when futureUsed would exceed capability": (
        N9 + N10 + gqueue("queue21", rl("8", "100Gi"), rl("8", "100Gi")) + gqueue("queue22", None, rl("2", "5Gi"))
        + gpg("pg33", "queue21", "Running") + gpg("pg34", "queue21", "Inqueue") + gpg("pg35", "queue22", "Running")
        + gpod("p33", "pg33", rl("7", "90Gi"), "n9") + gpod("p34", "pg34", rl("2", "5Gi"))
        + gpod("p35", "pg35", rl("2", "5Gi"), "n10"),
        {}, (), {}),
}


@pytest.mark.parametrize("case", cases(FLAT_CASES))
def test_without_hierarchy(simulate, case):
    """Test_capacityPlugin_OnSessionOpenWithoutHierarchy: allocate and reclaim against flat queues."""
    manifests, binds, evicts, pipes = FLAT_CASES[case]
    check(one_session(simulate, manifests, FLAT_CONF), manifests, binds, evicts, pipes)


# -- TestEnqueueAndAllocatable -----------------------------------------------------------------------

ENQUEUE_CONF = conf("enqueue, allocate",
                    option("capacity", "enabledAllocatable", "enablePreemptive", "enabledOverused", "enableJobEnqueued"))

RES_1C3G, RES_3C1G = rl("1", "3G"), rl("3", "1G")
RES_1C0G, RES_0C1G, RES_1C1G = rl("1", "0G"), rl("0", "1G"), rl("1", "1G")
ENQUEUE_CLUSTER = (
    gnode("n1", rl("3", "3G", pods="10")) + gnode("n2", rl("3", "3G", pods="10"))
    + gqueue("q1", rl("2", "2G"), rl("2", "2G")) + gqueue("q2", rl("2", "2G"), rl("3", "3G"))
    + gpg("pg1", "q1", "Running", min_resources=RES_1C3G) + gpg("pg2", "q2", "Running", min_resources=RES_3C1G)
    + gpod("pod1", "pg1", RES_1C3G, "n1") + gpod("pod2", "pg2", RES_3C1G, "n2")
)

ENQUEUE_CASES = {
    "case0: memory exceed derserved, job only request cpu can be enqueued and allocated": (
        ENQUEUE_CLUSTER + gpg("pg3", "q1", "Pending", min_resources=RES_1C0G) + gpod("pod3", "pg3", RES_1C0G),
        {"pod3": "n1"}, {"pg3": "Inqueue"}),
    "case1: cpu exceed derserved, job only request memory can be enqueued and allocated": (
        ENQUEUE_CLUSTER + gpg("pg4", "q2", "Pending", min_resources=RES_0C1G) + gpod("pod4", "pg4", RES_0C1G),
        {"pod4": "n2"}, {"pg4": "Inqueue"}),
    "case2: exceed capacity, can not enqueue": (
        ENQUEUE_CLUSTER + gpg("pg5", "q1", "Pending", min_resources=RES_1C1G) + gpod("pod5", "pg5", RES_1C1G),
        {}, {"pg5": "Pending"}),
    "case4: queue with non-open state, can not enqueue": (
        gnode("n1", rl("3", "3G", pods="10")) + gnode("n2", rl("3", "3G", pods="10"))
        + gqueue("q3", None, rl("3", "3G"), state="Closed")
        + gpg("pg6", "q3", "Pending", min_resources=RES_1C1G) + gpod("pod6", "pg6", RES_1C1G),
        {}, {"pg6": "Pending"}),
}


@pytest.mark.parametrize("case", cases(ENQUEUE_CASES))
def test_enqueue_and_allocatable(simulate, case):
    """TestEnqueueAndAllocatable: enqueue and allocate check only the dimensions the job asks for.

    Beyond the Go case's binds, the PodGroup phases written at the session's close are checked: a job
    bound in this session is still Inqueue (its pods are Binding, not yet Running), one refused stays Pending."""
    manifests, binds, phases = ENQUEUE_CASES[case]
    out = one_session(simulate, manifests, ENQUEUE_CONF)
    check(out, manifests, binds)
    assert {k.removeprefix(NS + "/"): g["phase"] for k, g in out["podgroups"].items() if k[4:] in phases} == phases


# -- Test_capacityPlugin_OnSessionOpenWithHierarchy ---------------------------------------------------

TREE_CONF = conf("enqueue, reclaim, allocate",
                 option("capacity", "enabledAllocatable", "enablePreemptive", "enableReclaimable", "enableQueueOrder",
                        "enableJobEnqueued", hierarchy=True),
                 PREDICATES, GANG_STARVING)

T_N1 = gnode("n1", rl("8", "8Gi", pods="11"))
ROOT = gqueue("root")
A100_ROOT = gqueue("root", rl("16", "16Gi", a100="4", rdma="1000"))
Q1_TREE = (gqueue("q1", None, rl("4", "4Gi"), parent="root") + gqueue("q2", None, rl("4", "4Gi"), parent="root")
           + gqueue("q11", None, rl("1", "1Gi"), parent="q1") + gqueue("q12", None, rl("3", "3Gi"), parent="q1"))
Q3 = gqueue("q3", rl("4", "4Gi", pods="10"), rl("4", "4Gi", pods="10"), parent="root")
Q4 = gqueue("q4", rl("2", "2Gi", pods="1"), rl("4", "4Gi", pods="4"), parent="root")
Q31 = gqueue("q31", rl("2", "2Gi", pods="2"), rl("4", "4Gi", pods="4"), parent="q3")
Q32 = gqueue("q32", rl("2", "2Gi", pods="2"), rl("4", "4Gi", pods="4"), parent="q3")
Q33 = gqueue("q33", rl("0", "0Gi", pods="2"), rl("4", "4Gi", pods="4"), parent="q3")
P6 = gpod("p6", "pg5", rl("2", "2Gi"), "n1", preemptable=False)
GPU_NODE = gnode("n-gpu", rl("8", "8Gi", gpu="8", pods="10"))
T_N2 = gnode("n2", rl("8", "8Gi", gpu="8", pods="10", hugepages="0"))
T_N3 = gnode("n3", rl("16", "16Gi", a100="5", rdma_hca="1001", pods="11"))

TREE_CASES = {
    "case0: Pod allocatable when queue is leaf queue": (
        T_N1 + ROOT + Q1_TREE + gpg("pg1", "q11", "Inqueue") + gpod("p1", "pg1", rl("1", "1Gi")),
        {"p1": "n1"}, (), {}),
    "case1: Pod not allocatable when queue is not leaf queue": (
        T_N1 + ROOT + Q1_TREE + gpg("pg2", "q1", "Pending") + gpod("p2", "pg2", rl("1", "1Gi")),
        {}, (), {}),
    "case2: Pod allocatable when queue has not exceed capability": (
        T_N1 + ROOT + Q3 + Q4 + Q31 + Q32 + gpg("pg3", "q31", "Inqueue", min_member=2)
        + gpod("p3", "pg3", rl("2", "2Gi")) + gpod("p4", "pg3", rl("2", "2Gi")),
        {"p3": "n1", "p4": "n1"}, (), {}),
    "case3: Can reclaim from other queues when allocated < deserved": (
        T_N1 + ROOT + Q3 + Q31 + Q32 + Q4
        + gpg("pg4", "q4", "Running") + gpg("pg5", "q31", "Running") + gpg("pg6", "q32", "Inqueue")
        + gpod("p5", "pg4", rl("4", "4Gi"), "n1") + P6 + gpod("p7", "pg5", rl("2", "2Gi"), "n1")
        + gpod("p8", "pg6", rl("2", "2Gi")),
        {}, ("p7",), {"p8": "n1"}),
    "case4: Pod is not allocatable when ancestor queue's real capability not enough": (
        T_N1 + ROOT + Q3 + Q31 + Q32 + Q33
        + gpg("pg5", "q31", "Running") + gpg("pg7", "q32", "Running") + gpg("pg8", "q33", "Inqueue")
        + P6 + gpod("p9", "pg7", rl("2", "2Gi"), "n1") + gpod("p10", "pg8", rl("3", "3Gi")),
        {}, (), {}),
    "case5: If the capability cpu or memory is not specified, the value should be inherited from parent queue": (
        T_N1 + ROOT + gqueue("q5", None, rl("", "4Gi"), parent="root") + gqueue("q51", None, rl("", "2Gi"), parent="q5")
        + gpg("pg9", "q51", "Running") + gpod("p11", "pg9", rl("1", "")),
        {"p11": "n1"}, (), {}),
    "case8: When the queue's deserved value has a scalar resource set, the check can pass": (
        GPU_NODE + ROOT + gqueue("q8", rl("4", "4Gi", gpu="8"), parent="root")
        + gqueue("q81", rl("2", "2Gi", gpu="4"), parent="q8") + gqueue("q82", rl("2", "2Gi", gpu="4"), parent="q8")
        + gpg("pg12", "q81", "Inqueue") + gpod("p12", "pg12", rl("2", "2Gi", gpu="1")),
        {"p12": "n-gpu"}, (), {}),
    "case9: When some scalar resources are 0 in deserved, the check can still pass": (
        T_N2 + ROOT + gqueue("q9", rl("2", "2Gi", gpu="8", hugepages="0"), parent="root")
        + gqueue("q91", rl("2", "2Gi", gpu="4", hugepages="0"), parent="q9")
        + gpg("pg13", "q91", "Inqueue") + gpod("p13", "pg13", rl("2", "2Gi", gpu="1")),
        {"p13": "n2"}, (), {}),
    "case11: If the capability scalar resources is not specified, the value should be inherited from parent queue": (
        T_N2 + ROOT + gqueue("case11-queue1", parent="root")
        + gqueue("case11-queue11", None, rl("4", "4Gi", gpu="4"), parent="case11-queue1")
        + gqueue("case11-queue12", None, rl("4", "4Gi", gpu="4"), parent="case11-queue1")
        + gpg("pg14", "case11-queue11", "Inqueue") + gpg("pg15", "case11-queue12", "Inqueue")
        + gpod("p14", "pg14", rl("1", "1Gi", gpu="4")) + gpod("p15", "pg15", rl("1", "1Gi", gpu="4")),
        {"p14": "n2", "p15": "n2"}, (), {}),
    "case12: Can reclaim from other queues when allocated <= deserved on a single scalar dimension": (
        T_N3 + A100_ROOT + gqueue("case12-queue1", rl("", "", a100="2"), parent="root")
        + gqueue("case12-queue11", rl("", "", a100="2"), parent="case12-queue1")
        + gqueue("case12-queue12", parent="case12-queue1")
        + gpg("pg16", "case12-queue11", "Inqueue") + gpg("pg17", "case12-queue12", "Running")
        + gpg("pg18", "case12-queue12", "Running")
        + gpod("p16", "pg16", rl("1", "1Gi", a100="2", rdma_hca="1"))
        + gpod("p17", "pg17", rl("1", "1Gi", a100="2", rdma_hca="1"), "n3")
        + gpod("p18", "pg18", rl("1", "1Gi", a100="2", rdma_hca="1"), "n3", preemptable=False),
        {}, ("p17",), {"p16": "n3"}),
}


@pytest.mark.parametrize("case", cases(TREE_CASES))
def test_with_hierarchy(simulate, case):
    """Test_capacityPlugin_OnSessionOpenWithHierarchy: enqueue, reclaim and allocate in a queue tree."""
    manifests, binds, evicts, pipes = TREE_CASES[case]
    check(one_session(simulate, manifests, TREE_CONF), manifests, binds, evicts, pipes)


def test_with_hierarchy_case6_enqueue_checks_every_ancestor(simulate):
    """Test_capacityPlugin_OnSessionOpenWithHierarchy case6: podgroup can't be enqueued when any ancestor
    queue's capability is not enough.  q61 and q62 inherit q6's capability; the first job fills it.

    The Go queues tie on creation time and go by name (q61 first); here q61 is created first."""
    manifests = (T_N1 + ROOT + gqueue("q6", None, rl("2", "4Gi"), parent="root")
                 + gqueue("q61", parent="q6") + gqueue("q62", parent="q6")
                 + gpg("pg10", "q61", "Pending", min_resources=rl("2", "4Gi"))
                 + gpg("pg11", "q62", "Pending", min_resources=rl("2", "4Gi")))
    out = one_session(simulate, manifests, TREE_CONF)
    assert out["podgroups"]["ns1/pg10"]["phase"] == "Inqueue"
    assert out["podgroups"]["ns1/pg11"]["phase"] == "Pending"


def test_with_hierarchy_case10_root_capability_above_the_cluster(simulate):
    """Test_capacityPlugin_OnSessionOpenWithHierarchy case10: root queue's capability > cluster total
    resource, but should not panic (the session runs: exit 0, the tree in the output)."""
    manifests = T_N1 + gqueue("root", None, rl("16", "16Gi")) + gqueue("q10", None, rl("10", "4Gi"), parent="root")
    out = one_session(simulate, manifests, TREE_CONF)
    assert out["queues"]["q10"]["parent"] == "root"
    assert out["queues"]["root"]["capability"] == {"cpu": "16", "memory": "16Gi"}


# -- Test_capacityPlugin_AncestorReclaimScenarios --------------------------------------------------------


def ancestor_conf(level: int, include_priority: bool) -> str:
    options = [option("capacity", "enabledAllocatable", "enablePreemptive", "enableReclaimable", "enableQueueOrder",
                      "enableJobEnqueued", hierarchy=True, arguments=f"ancestorReclaimLevel: {level}"),
               PREDICATES, GANG_STARVING]
    if include_priority:
        options.append(option("priority", "enableJobOrder", "enableTaskOrder"))
    return conf("enqueue, reclaim, allocate", *options)


A_N1 = gnode("n1", rl("16", "16Gi", a100="4", rdma_hca="1001", pods="11"))
GPU_TASK = rl("1", "1Gi", a100="1", rdma_hca="1")
# Spec.Priority 1 and 2 as the Go pods set them: through PriorityClasses (the API server's admission
# refuses a bare spec.priority); the PodGroups name no class, so every job has priority 0 as in Go
PRIORITIES = priority_class("prio1", 1) + priority_class("prio2", 2)
PROJECT_TREE = (
    A100_ROOT
    + gqueue("project1-root", rl("", "", a100="1"), rl("", "", a100="2"), parent="root")
    + gqueue("project1-non-preemptable", rl("", "", a100="1"), rl("", "", a100="1"), parent="project1-root")
    + gqueue("project1-preemptable", parent="project1-root")
    + gqueue("project2-root", rl("", "", a100="3"), rl("", "", a100="4"), parent="root")
    + gqueue("project2-non-preemptable", rl("", "", a100="3"), rl("", "", a100="3"), parent="project2-root")
    + gqueue("project2-preemptable", parent="project2-root")
)


def level_semantics_tree() -> str:
    return (ROOT
            + gqueue("grand-a", rl("2", "2Gi"), rl("4", "4Gi"), parent="root")
            + gqueue("parent-a", rl("2", "2Gi"), rl("2", "2Gi"), parent="grand-a")
            + gqueue("queue-a", rl("2", "2Gi"), rl("2", "2Gi"), parent="parent-a")
            + gqueue("grand-b", rl("3", "3Gi"), rl("4", "4Gi"), parent="root")
            + gqueue("parent-b", rl("1", "1Gi"), rl("2", "2Gi"), parent="grand-b")
            + gqueue("queue-b", rl("1", "1Gi"), rl("2", "2Gi"), parent="parent-b"))


def victim_and_reclaimer(victim_queue: str, reclaimer_queue: str, victim_req: dict[str, str] | None = None,
                         reclaimer_req: dict[str, str] | None = None) -> str:
    return (gpg("pg-victim", victim_queue, "Running") + gpg("pg-reclaimer", reclaimer_queue, "Inqueue")
            + gpod("p-victim", "pg-victim", victim_req or rl("2", "2Gi"), "n1")
            + gpod("p-reclaimer", "pg-reclaimer", reclaimer_req or rl("2", "2Gi")))


def case4_cluster(a100: str) -> str:
    return (gnode("n1", rl("8", "8Gi", a100=a100, rdma_hca="1001", pods="11")) + A100_ROOT
            + gqueue("case4-parent1", rl("", "", a100="1"), parent="root")
            + gqueue("case4-child1", rl("", "", a100="1"), parent="case4-parent1")
            + gqueue("case4-child1-sibling", parent="case4-parent1")
            + gqueue("case4-parent2", rl("", "", a100="1"), parent="root")
            + gqueue("case4-child2", rl("", "", a100="1"), parent="case4-parent2")
            + gpg("pg1", "case4-child1", "Running") + gpg("pg2", "case4-child2", "Pending")
            + gpg("pg3", "case4-child1-sibling", "Running")
            + gpod("p1", "pg1", GPU_TASK, "n1") + gpod("p2", "pg2", GPU_TASK)
            + gpod("p3", "pg3", GPU_TASK, "n1", preemptable=False))


SMALL_N1 = gnode("n1", rl("2", "2Gi", pods="10"))

ANCESTOR_CASES = {
    "case1: Can reclaim based on parent deserved when ancestorReclaimLevel is 1": (
        1, True,
        A_N1 + A100_ROOT + gqueue("case1-queue1", rl("", "", a100="1"), parent="root")
        + gqueue("case1-queue11", parent="case1-queue1") + gqueue("case1-queue2", parent="root")
        + gpg("pg1", "case1-queue2", "Running") + gpg("pg2", "case1-queue11", "Inqueue")
        + gpod("p1", "pg1", rl("1", "1Gi", a100="4", rdma_hca="1"), "n1") + gpod("p2", "pg2", GPU_TASK),
        ("p1",), {"p2": "n1"}),
    "case2: Cross-parent reclaim pipelines project1 pending job when project2 child and parent are both over "
    "deserved": (
        1, True,
        A_N1 + PRIORITIES + PROJECT_TREE
        + "".join(gpg(f"pg{i}", "project2-preemptable", "Running") for i in range(1, 5))
        + gpg("pg5", "project1-preemptable", "Pending")
        + "".join(gpod(f"p{i}", f"pg{i}", GPU_TASK, "n1", priority_class="prio2") for i in range(1, 4))
        + gpod("p4", "pg4", GPU_TASK, "n1", priority_class="prio1") + gpod("p5", "pg5", GPU_TASK),
        ("p4",), {"p5": "n1"}),
    "case3: Cross-parent reclaim can evict sibling-queue victim first": (
        1, True,
        A_N1 + PRIORITIES + PROJECT_TREE
        + "".join(gpg(f"pg{i}", "project2-preemptable", "Running") for i in range(1, 4))
        + gpg("pg4-reclaimed", "project2-preemptable", "Inqueue")
        + gpg("pg5-pipelined", "project1-preemptable", "Running")
        + gpg("pg6", "project2-non-preemptable", "Pending")
        + "".join(gpod(f"p{i}", f"pg{i}", GPU_TASK, "n1", priority_class="prio2") for i in range(1, 4))
        + gpod("p4", "pg4-reclaimed", GPU_TASK) + gpod("p5", "pg5-pipelined", GPU_TASK, "n1")
        + gpod("p6", "pg6", GPU_TASK),
        ("p3",), {"p6": "n1"}),
    "case4: Cross-parent reclaim is blocked when victim child is not over deserved": (
        1, True, case4_cluster(a100="1"), (), {}),
    "case5: level 0 allows reclaim based on leaf-level deserved checks": (
        0, False, SMALL_N1 + level_semantics_tree() + victim_and_reclaimer("queue-b", "queue-a"),
        ("p-victim",), {"p-reclaimer": "n1"}),
    "case6: level 1 allows reclaim when parent-level check passes": (
        1, False, SMALL_N1 + level_semantics_tree() + victim_and_reclaimer("queue-b", "queue-a"),
        ("p-victim",), {"p-reclaimer": "n1"}),
    "case7: level 2 blocks reclaim when grandparent-level check fails": (
        2, False, SMALL_N1 + level_semantics_tree() + victim_and_reclaimer("queue-b", "queue-a"),
        (), {}),
    "case8: level 1 blocks sibling reclaim when leaf deserved is unset and no ancestor gate applies": (
        1, False,
        SMALL_N1 + ROOT + gqueue("parent", rl("4", "4Gi"), rl("4", "4Gi"), parent="root")
        + gqueue("queue-a", parent="parent") + gqueue("queue-b", parent="parent")
        + victim_and_reclaimer("queue-b", "queue-a"),
        (), {}),
    "case9: level 2 blocks reclaim when leaf deserved is unset and queues share grandparent": (
        2, False,
        SMALL_N1 + ROOT + gqueue("grand", rl("2", "2Gi"), rl("2", "2Gi"), parent="root")
        + gqueue("parent-a", parent="grand") + gqueue("queue-a", parent="parent-a")
        + gqueue("parent-b", parent="grand") + gqueue("queue-b", parent="parent-b")
        + victim_and_reclaimer("queue-b", "queue-a"),
        (), {}),
    "case10: level 2 blocks reclaim in unbalanced shared-grandparent tree when leaf deserved is unset": (
        2, False,
        SMALL_N1 + ROOT + gqueue("grand", rl("1", "1Gi"), rl("2", "2Gi"), parent="root")
        + gqueue("parent-deep", rl("1", "1Gi"), rl("2", "2Gi"), parent="grand")
        + gqueue("queue-deep", parent="parent-deep") + gqueue("queue-shallow", parent="grand")
        + victim_and_reclaimer("queue-deep", "queue-shallow"),
        (), {}),
    "case11: unbalanced level2 blocks reclaim when depth-2 ancestor is not over deserved": (
        2, False,
        gnode("n1", rl("4", "4Gi", pods="10", a100="2")) + ROOT
        + gqueue("shallow-parent", rl("", "", a100="1"), parent="root")
        + gqueue("queue-shallow", rl("", "", a100="1"), parent="shallow-parent")
        + gqueue("deep-grand", rl("", "", a100="2"), parent="root")
        + gqueue("deep-parent", rl("", "", a100="1"), parent="deep-grand")
        + gqueue("queue-deep", rl("", "", a100="1"), parent="deep-parent")
        + victim_and_reclaimer("queue-deep", "queue-shallow", rl("1", "1Gi", a100="2"), rl("1", "1Gi", a100="1")),
        (), {}),
}


# case4: two running pods of one nvidia.com/a100 each on a node with one
@pytest.mark.parametrize("case", cases(ANCESTOR_CASES, overcommitted_input=("case4",)))
def test_ancestor_reclaim(simulate, case):
    """Test_capacityPlugin_AncestorReclaimScenarios: reclaim across a tree with ``ancestorReclaimLevel``.

    Queue names with ``_`` (``project1_root``, ``case1_queue1``...) are spelled with ``-``: a Queue's name
    must be an RFC 1123 subdomain, and ``simulate`` refuses others as the API server does."""
    level, include_priority, manifests, evicts, pipes = ANCESTOR_CASES[case]
    check(one_session(simulate, manifests, ancestor_conf(level, include_priority)), manifests, {}, evicts, pipes)


def test_an_ancestor_level_above_the_tree_stops_at_its_root(simulate):
    """``ancestorReclaimLevel`` far above the tree's depth checks what a level of its depth checks (case1:
    the victim's queue is a child of the root, the reclaim goes ahead), and at once: the levels above the
    victim's root were once counted one by one, a conf's 10^12 a hang (found by fuzzing the plugins'
    arguments)."""
    _, include_priority, manifests, evicts, pipes = next(v for k, v in ANCESTOR_CASES.items() if k.startswith("case1"))

    def too_long(signum, frame):
        raise TimeoutError("the session still counts ancestor levels after 60 s")

    previous = signal.signal(signal.SIGALRM, too_long)
    signal.alarm(60)
    try:
        out = one_session(simulate, manifests, ancestor_conf(10**12, include_priority))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    check(out, manifests, {}, evicts, pipes)


# -- TestNoDoubleCountingForInqueueJobWithBindingTasks ------------------------------------------------------


def test_no_double_counting_for_an_inqueue_job_with_bound_tasks(simulate):
    """TestNoDoubleCountingForInqueueJobWithBindingTasks: the resources of a job's tasks that are on a node
    while its PodGroup is still Inqueue count once (in allocated), not again in inqueue.

    Go runs two sessions on one cache: the first allocates jobA's three pods (they stay Binding, pgA stays
    Inqueue), then jobB is added and the second runs enqueue and allocate.  A manifest cannot hold a pod
    Binding; a pod with a node and phase Pending is Bound, which is also an allocated status and also
    leaves pgA Inqueue.  So the state the second session starts from is given directly (names in lower
    case, as the API server wants them: pg-a, pa1...), and one session runs: 3 CPU allocated + inqueue max(3 - 3, 0) + jobB's 1 CPU fits q1's 4 (counting pgA's minResources
    again would make it 7)."""
    manifests = (gnode("n1", rl("4", "8Gi", pods="10")) + gqueue("q1", None, rl("4", "8Gi"))
                 + gpg("pg-a", "q1", "Inqueue", min_member=3, min_resources=rl("3", "3Gi"))
                 + "".join(gpod(f"pa{i}", "pg-a", rl("1", "1Gi"), "n1").replace("phase: Running", "phase: Pending")
                           for i in (1, 2, 3))
                 + gpg("pg-b", "q1", "Pending", min_resources=rl("1", "1Gi")) + gpod("pb1", "pg-b", rl("1", "1Gi")))
    out = one_session(simulate, manifests,
                      conf("enqueue, allocate", option("capacity", "enabledAllocatable", "enabledOverused",
                                                       "enableJobEnqueued")))
    check(out, manifests, {"pb1": "n1"})
    assert out["podgroups"]["ns1/pg-b"]["phase"] == "Inqueue"


# -- TestJobEnqueuedOnOtherPluginsReject ----------------------------------------------------------------------


def test_a_job_another_plugin_refuses_takes_no_queue_capacity(simulate):
    """TestJobEnqueuedOnOtherPluginsReject: capacity counts a job as inqueue only once every plugin admitted
    it; pgA, refused by a plugin of the same tier, leaves q1's one CPU to pgB.

    Go's co-tier plugin is a test double (``uthelper.RejecterPlugin``) refusing pgA by name.  Here it is
    overcommit (factor 1), after capacity in the tier: a pod of another queue uses 1 of the node's 4G, and
    pgA asks for 3.5G of memory (capacity lets it in, q1's capability is 4G; overcommit refuses it, the
    cluster has 3G idle) where Go's asks for 1G; pgB asks for what Go's does.  Names are in lower case."""
    manifests = (gnode("n1", rl("4", "4G", pods="10"))
                 + gqueue("q1", rl("1", "4G"), rl("1", "4G")) + gqueue("q2")
                 + gpg("pg-used", "q2", "Running") + gpod("used", "pg-used", rl("0", "1G"), "n1")
                 + gpg("pg-a", "q1", "Pending", min_resources=rl("1", "3.5G"))
                 + gpg("pg-b", "q1", "Pending", min_resources=rl("1", "1G"))
                 + gpod("pod-a", "pg-a", rl("1", "1G")) + gpod("pod-b", "pg-b", rl("1", "1G")))
    out = one_session(simulate, manifests,
                      conf("enqueue", option("capacity", "enableJobEnqueued"),
                           option("overcommit", "enableJobEnqueued", arguments="overcommit-factor: 1.0")))
    assert out["podgroups"]["ns1/pg-a"]["phase"] == "Pending"
    assert out["podgroups"]["ns1/pg-b"]["phase"] == "Inqueue"


def test_ancestor_reclaim_case4_with_room_for_the_reclaimer(simulate):
    """Test_capacityPlugin_AncestorReclaimScenarios case4 on a node with 2 GPUs instead of 1.

    Go's node has one ``nvidia.com/a100`` for p1 and p3, which both hold one: it is over-committed, and
    evicting p1 alone could not make room for p2 whatever capacity said.  With two, evicting p1 would: it
    is capacity that refuses, because p1's queue case4-child1 holds no more than it deserves (though its
    parent, with p3, holds more than its own)."""
    manifests = case4_cluster(a100="2")
    check(one_session(simulate, manifests, ancestor_conf(1, True)), manifests)


# -- beyond Volcano's cases ------------------------------------------------------------------------------------


def test_a_broken_tree_leaves_the_queue_order_to_others(simulate):
    """With ``enableHierarchy`` and a tree capacity refuses (here a job in a queue that has a child),
    capacity.go returns before ``AddQueueOrderFn`` and ``AddVictimQueueOrderFn``: it orders no queue, the
    session's fallback does (creation time: qa, made first, before qb of higher priority).  capacity's
    allocatable is off so that allocate runs at all."""
    manifests = (gnode("n1", rl("1", "1Gi", pods="10")) + ROOT + gqueue("parent", parent="root")
                 + gqueue("qa", parent="parent", priority=1) + gqueue("qb", parent="root", priority=10)
                 + gpg("pg-broken", "parent", "Inqueue") + gpod("p-broken", "pg-broken", rl("100", "1Gi"))
                 + gpg("pg-a", "qa", "Inqueue") + gpod("pa", "pg-a", rl("1", "1Gi"))
                 + gpg("pg-b", "qb", "Inqueue") + gpod("pb", "pg-b", rl("1", "1Gi")))
    out = one_session(simulate, manifests,
                      conf("allocate", option("capacity", "enableQueueOrder", hierarchy=True), PREDICATES))
    check(out, manifests, {"pa": "n1"})
