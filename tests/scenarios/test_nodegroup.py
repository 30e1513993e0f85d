"""nodegroup end to end: every case of Volcano's plugins/nodegroup/nodegroup_test.go through ``vcsched simulate``.

The Go tests open one session and ask ``ssn.PredicateFn(task, node)`` and ``ssn.NodeOrderFn(task, node)``
for every node; ``simulate`` shows only where pods go and why the rest wait.  So each Go case is asked
in one of two ways, and the test says which:

- *filled*: the Go pod is repeated (same requests, same PodGroup) until the nodes are full, in one
  session (``--cycles 1``).  A node takes pods only if its verdict is Success, and the node search takes
  the best-scored node first, so the order in which the nodes fill is the order of their scores, and the
  one pod left over says why every other node refuses it (the nodes the pods filled refuse it for
  ``Insufficient cpu``).  The exact scores and codes are pinned in tests/unit/test_nodegroup.py.
- *pinned*: the Go pod is pinned to one node at a time by a ``kubernetes.io/hostname`` nodeSelector,
  with ``predicates`` in the tier before ``nodegroup`` (it answers for the other nodes): the pod binds
  when that node's verdict is Success, else its reason is that node's nodegroup reason.  This keeps the
  cluster of the Go case whole (the resource-limit cases count what runs on the other nodes).

The Go tiers enable only ``enablePredicate`` and ``enableNodeOrder`` (and ``enableHierarchy`` where a
case sets it); ``option()`` writes every other flag false, as Go's nil flags are.  Go's ``BuildNode``
nodes have no ``pods`` allocatable (PredicateFn does no resource fit); here they get 110 so that
allocate's resource check lets a pod on.  ``simulate`` makes the ``root`` and ``default`` queues when
the input has none (neither has an affinity), and every queue without ``spec.parent`` is under ``root``,
as Volcano's webhook makes it: with ``enableHierarchy`` off that changes nothing.
"""

from __future__ import annotations

import pytest

from vcsched.conf import ENABLE_FLAGS

from .conftest import node, pod, podgroup, queue

NS = "c1"
GROUP = "volcano.sh/nodegroup-name"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"

NOT_SPECIFIED = "node group affinity not specified"
NO_LABEL = "node group label not found"
UNSATISFIED = "node does not satisfy the node group affinity"
LIMIT_INVALID = "node group resource limit annotation invalid"
LIMIT_EXCEEDED = "node group resource limit exceeded"
SELECTOR = "node(s) didn't match Pod's node affinity/selector"


# -- the conf: Go's tier, flag for flag --------------------------------------------------------------


def option(name: str, *enabled: str, hierarchy: bool = False, arguments: str = "") -> str:
    lines = [f"  - name: {name}"]
    lines += [f"    {flag}: {'true' if flag in enabled else 'false'}"
              for flag in ENABLE_FLAGS if flag != "enableHierarchy"]
    if hierarchy:
        lines.append("    enableHierarchy: true")
    if arguments:
        lines.append(f"    arguments: {{{arguments}}}")
    return "\n".join(lines) + "\n"


def conf(*options: str, actions: str = "enqueue, allocate") -> str:
    return f'actions: "{actions}"\ntiers:\n- plugins:\n' + "".join(options)


def nodegroup(hierarchy: bool = False, arguments: str = "") -> str:
    return option("nodegroup", "enablePredicate", "enableNodeOrder", hierarchy=hierarchy, arguments=arguments)


PREDICATES = option("predicates", "enablePredicate")


# -- manifests as the Go builders make them ------------------------------------------------------------


def gnode(name: str, cpu: str, memory: str, group: str | None, pods: int = 110) -> str:
    """``util.BuildNode`` with the ``volcano.sh/nodegroup-name`` label when ``group`` is given."""
    doc = node(name, cpu=cpu, memory=memory, pods=pods)
    if group is not None:
        doc = doc.replace("labels: {", f"labels: {{{GROUP}: {group}, ", 1)
    return doc


def affinity(required: list[str] | None = None, preferred: list[str] | None = None,
             anti_required: list[str] | None = None, anti_preferred: list[str] | None = None) -> str:
    """``spec.affinity`` as ``schedulingv1.Affinity`` (a nil list is left out)."""
    def terms(req, pref):
        parts = [f"{key}: [{', '.join(names)}]" for key, names in ((REQUIRED, req), (PREFERRED, pref))
                 if names is not None]
        return "{" + ", ".join(parts) + "}"
    parts = []
    if required is not None or preferred is not None:
        parts.append(f"nodeGroupAffinity: {terms(required, preferred)}")
    if anti_required is not None or anti_preferred is not None:
        parts.append(f"nodeGroupAntiAffinity: {terms(anti_required, anti_preferred)}")
    return "{" + ", ".join(parts) + "}"


def gqueue(name: str, aff: str | None = None, parent: str | None = None, annotations: str = "") -> str:
    """``util.MakeQueue(name).Affinity(aff).Parent(parent).Annotations(...)``."""
    spec = []
    if aff is not None:
        spec.append(f"  affinity: {aff}")
    if parent is not None:
        spec.append(f"  parent: {parent}")
    doc = queue(name, extra="\n".join(spec))
    if annotations:
        doc = doc.replace(f"  name: {name}\n", f"  name: {name}\n  annotations: {annotations}\n", 1)
    return doc


def gpod(name: str, group: str, cpu: str = "2", memory: str = "4Gi", node_name: str | None = None,
         pin: str | None = None, ns: str = NS) -> str:
    """``util.BuildPod(ns, name, node, phase, BuildResourceList(cpu, memory), group)``: Running on
    ``node_name`` when given; ``pin``: a nodeSelector on that node's hostname."""
    spec = f"  nodeSelector: {{kubernetes.io/hostname: {pin}}}" if pin else ""
    return pod(name, cpu=cpu, memory=memory, group=group, ns=ns, node_name=node_name,
               phase="Running" if node_name else None, spec_extra=spec)


def gpg(name: str, queue_name: str, phase: str | None = None, ns: str = NS) -> str:
    """``util.BuildPodGroup(name, ns, queue, 0, nil, phase)``: minMember 0."""
    return podgroup(name, 0, queue=queue_name, ns=ns, extra=f"status: {{phase: {phase}}}" if phase else "")


def run(simulate, manifests: str, conf_text: str) -> dict:
    code, out = simulate(manifests, "--cycles", "1", conf=conf_text)
    assert code == 0, out
    return out


def fill(out: dict, prefix: str) -> tuple[list[str | None], str | None]:
    """The nodes the filler pods went to, in pod order, and the reason of the first pod left waiting."""
    pods = sorted((k for k in out["pods"] if k.startswith(f"{NS}/{prefix}-")), key=lambda k: int(k.rsplit("-", 1)[1]))
    nodes = [out["pods"][k]["node"] for k in pods]
    waiting = [out["pods"][k]["reason"] for k in pods if out["pods"][k]["node"] is None]
    return [n for n in nodes if n is not None], (waiting[0] if waiting else None)


# -- TestNodeGroup -------------------------------------------------------------------------------------

# n1 holds one 2-CPU pod, n2..n5 two each
NODES = (gnode("n1", "2", "4Gi", "group1") + gnode("n2", "4", "16Gi", "group2") + gnode("n3", "4", "16Gi", "group3")
         + gnode("n4", "4", "16Gi", "group4") + gnode("n5", "4", "16Gi", None))

ROOT_Q = gqueue("root", affinity(["group1", "group3"], ["group3"], ["group2", "group4"], ["group4"]))
NO_AFFINITY_ROOT_Q = gqueue("root-no-affinity")
QUEUE1 = gqueue("q1", affinity(["group1", "group3"], ["group3"], ["group2", "group4"], ["group4"]), parent="root")
QUEUE2 = gqueue("q2", affinity(["group1"], ["group3"], ["group2"], ["group4"]), parent="root")
QUEUE3 = gqueue("q3", affinity(preferred=["group1", "group3"]))
NO_AFFINITY_Q = gqueue("q-no-affinity", parent="root")
QUEUE1_CHILD = gqueue("q1-child", parent="q1")
NO_AFFINITY_Q_CHILD = gqueue("q-no-affinity-child", parent="q-no-affinity")

FILLERS = 6  # more than the five nodes can hold (9 slots, of which at most 5 are ever allowed)


def filler_pods(prefix: str, group: str) -> str:
    return "".join(gpod(f"{prefix}-{i}", group) for i in range(FILLERS))


# Go case name → (queues, the PodGroup's queue, arguments, enableHierarchy, fill order, reason left)
# Scores of the Go case, best first, give the fill order (a node taking as many pods as it holds);
# its statuses give the reason: the Success nodes are full by then.
NODE_GROUP_CASES = {
    "case: soft constraints is subset of hard constraints": (
        # scores n3 150, n1 100, n4 -1; n2 and n5 UnschedulableAndUnresolvable
        QUEUE1, "q1", "", False, ["n3", "n3", "n1", "n4", "n4"],
        f"0/5 nodes are unavailable: 1 {UNSATISFIED}, 1 {NO_LABEL}, 3 Insufficient cpu."),
    "case: soft constraints is not subset of hard constraints": (
        # scores n1 100, n3 50, n4 -1
        QUEUE2, "q2", "", False, ["n1", "n3", "n3", "n4", "n4"],
        f"0/5 nodes are unavailable: 1 {UNSATISFIED}, 1 {NO_LABEL}, 3 Insufficient cpu."),
    "case: affinity is not set for the queue, pods still cannot be scheduled to nodes with the nodegroup label "
    "when strict=false": (
        # only n5 (no label) is Success
        NO_AFFINITY_ROOT_Q, "root-no-affinity", "strict: false", False, ["n5", "n5"],
        f"0/5 nodes are unavailable: 1 Insufficient cpu, 4 {NOT_SPECIFIED}."),
    "case: affinity inherits from parent queue": (
        ROOT_Q + QUEUE1 + QUEUE1_CHILD, "q1-child", "", True, ["n3", "n3", "n1", "n4", "n4"],
        f"0/5 nodes are unavailable: 1 {UNSATISFIED}, 1 {NO_LABEL}, 3 Insufficient cpu."),
    "case: affinity inherits from ancestor queue if parent queue has no affinity": (
        ROOT_Q + NO_AFFINITY_Q + NO_AFFINITY_Q_CHILD, "q-no-affinity-child", "", True, ["n3", "n3", "n1", "n4", "n4"],
        f"0/5 nodes are unavailable: 1 {UNSATISFIED}, 1 {NO_LABEL}, 3 Insufficient cpu."),
    "case: queue without affinity": (
        NO_AFFINITY_Q, "q-no-affinity", "", False, [],
        f"0/5 nodes are unavailable: 1 {NO_LABEL}, 4 {NOT_SPECIFIED}."),
    "case: preferred nodegroup priority ordering": (
        # scores n1 50, n3 25
        QUEUE3, "q3", "enablePreferredOrder: true", False, ["n1", "n3", "n3"],
        f"0/5 nodes are unavailable: 1 {NO_LABEL}, 2 Insufficient cpu, 2 {UNSATISFIED}."),
}


@pytest.mark.parametrize("name", list(NODE_GROUP_CASES), ids=lambda n: n.split(": ", 1)[1][:60])
def test_node_group(simulate, name):
    """TestNodeGroup, each case filled (see the module docstring)."""
    queues, queue_name, arguments, hierarchy, order, reason = NODE_GROUP_CASES[name]
    manifests = NODES + queues + gpg("pg", queue_name) + filler_pods("p", "pg")
    out = run(simulate, manifests, conf(nodegroup(hierarchy, arguments)))
    assert fill(out, "p") == (order, reason)


def test_preferred_order_follows_the_list_not_the_node_order(simulate):
    """TestNodeGroup "preferred nodegroup priority ordering" read the other way: with the list reversed
    the other group fills first.  (Without ``enablePreferredOrder`` both preferred groups score 50; a
    tie goes to the first node in search order in vcsched, at random in Volcano: only both orders
    together show that the list decides.)"""
    q3 = gqueue("q3", affinity(preferred=["group3", "group1"]))
    out = run(simulate, NODES + q3 + gpg("pg", "q3") + filler_pods("p", "pg"),
              conf(nodegroup(arguments="enablePreferredOrder: true")))
    assert fill(out, "p")[0] == ["n3", "n3", "n1"]
    # and without the argument the two groups tie: the first node in search order takes the first pod
    out = run(simulate, NODES + q3 + gpg("pg", "q3") + filler_pods("p", "pg"), conf(nodegroup()))
    assert fill(out, "p")[0] == ["n1", "n3", "n3"]


@pytest.mark.parametrize("aff, order, reason", [
    # the third example of Volcano's user guide (how_to_use_nodegroup_plugin.md): anti-affinity wins,
    # the queue runs on group2 only
    (affinity(["group1", "group2"], ["group1"], ["group1"], ["group2"]), ["n2", "n2"],
     f"0/5 nodes are unavailable: 1 Insufficient cpu, 1 {NO_LABEL}, 3 {UNSATISFIED}."),
    # required (100) before preferred (50), whatever the node order
    (affinity(["group3"], ["group1"]), ["n3", "n3", "n1"],
     f"0/5 nodes are unavailable: 1 {NO_LABEL}, 2 Insufficient cpu, 2 {UNSATISFIED}."),
    # anti-preferred scores −1 even when required: n4 (100) fills before n3
    (affinity(["group3", "group4"], anti_preferred=["group3"]), ["n4", "n4", "n3", "n3"],
     f"0/5 nodes are unavailable: 1 {NO_LABEL}, 2 Insufficient cpu, 2 {UNSATISFIED}."),
], ids=["anti-affinity wins", "required before preferred", "anti-preferred last"])
def test_user_guide_rules(simulate, aff, order, reason):
    """The rules the user guide states, beyond the Go cases, filled in the same way."""
    out = run(simulate, NODES + gqueue("q", aff) + gpg("pg", "q") + filler_pods("p", "pg"), conf(nodegroup()))
    assert fill(out, "p") == (order, reason)


def test_hierarchy_off_nothing_is_inherited(simulate):
    """The Go case "affinity inherits from parent queue" without ``enableHierarchy``: q1-child has no
    affinity of its own, so every labelled node refuses it and the unlabelled one lacks the label."""
    manifests = NODES + ROOT_Q + QUEUE1 + QUEUE1_CHILD + gpg("pg", "q1-child") + filler_pods("p", "pg")
    out = run(simulate, manifests, conf(nodegroup()))
    assert fill(out, "p") == ([], f"0/5 nodes are unavailable: 1 {NO_LABEL}, 4 {NOT_SPECIFIED}.")


def test_the_nearest_ancestor_wins(simulate):
    """Inheritance takes the nearest ancestor's affinity, not root's: q1 (group1 only) under root (group3
    only), q1-child under q1.  Also an empty ``affinity: {}`` is an affinity of its own: it stops the
    inheritance and, naming no group, refuses every labelled node."""
    root = gqueue("root", affinity(["group3"]))
    q1 = gqueue("q1", affinity(["group1"]), parent="root")
    child = gqueue("q1-child", parent="q1")
    empty = gqueue("q1-empty", "{}", parent="q1")
    manifests = (NODES + root + q1 + child + empty + gpg("pg", "q1-child") + filler_pods("p", "pg")
                 + gpg("pge", "q1-empty") + gpod("e-0", "pge"))
    out = run(simulate, manifests, conf(nodegroup(hierarchy=True)))
    assert fill(out, "p") == (["n1"], f"0/5 nodes are unavailable: 1 Insufficient cpu, 1 {NO_LABEL}, "
                                      f"3 {UNSATISFIED}.")
    # (n1 is full by then: the child's pod took it)
    assert out["pods"][f"{NS}/e-0"]["reason"] == (f"0/5 nodes are unavailable: 1 Insufficient cpu, 1 {NO_LABEL}, "
                                                  f"3 {NOT_SPECIFIED}.")


# -- TestNodeGroupResourceLimits -------------------------------------------------------------------------

LIMIT_NODES = gnode("n1", "16", "64Gi", "group1", pods=32) + gnode("n2", "16", "64Gi", "group2", pods=32)
LIMIT_AFFINITY = affinity(["group1", "group2"], ["group1"])


def limit_queue(name: str, limits: str | None) -> str:
    """The case's queue; ``limits``: the ``volcano.sh/nodegroup-resource-limits`` annotation's JSON."""
    ann = f"{{volcano.sh/nodegroup-resource-limits: '{limits}'}}" if limits is not None else ""
    return gqueue(name, LIMIT_AFFINITY, annotations=ann)


# Go case name → (queue, annotation, pod "used" on n1 as well, expected verdict per node: None is Success)
LIMIT_CASES = {
    "no annotation keeps existing behavior": ("q-no-limit", None, False, {"n1": None, "n2": None}),
    "under nodegroup limit permits preferred nodegroup": (
        "q-under-limit", '{"group1":{"cpu":"3","memory":"8Gi"}}', False, {"n1": None, "n2": None}),
    "omitted resource dimension is unlimited": (
        "q-cpu-only-limit", '{"group1":{"cpu":"3"}}', False, {"n1": None, "n2": None}),
    "specified resource dimension is enforced": (
        "q-cpu-only-over-limit", '{"group1":{"cpu":"1"}}', False, {"n1": LIMIT_EXCEEDED, "n2": None}),
    "over nodegroup limit rejects preferred nodegroup and permits fallback": (
        "q-over-limit", '{"group1":{"cpu":"3","memory":"8Gi"}}', True, {"n1": LIMIT_EXCEEDED, "n2": None}),
    "invalid annotation rejects queue tasks": (
        "q-invalid-limit", '{"group1":{"cpu":', False, {"n1": LIMIT_INVALID, "n2": LIMIT_INVALID}),
}


def limit_case(name: str, pin: str | None) -> str:
    queue_name, limits, used, _ = LIMIT_CASES[name]
    manifests = LIMIT_NODES + limit_queue(queue_name, limits)
    if used:
        manifests += gpg("pg-used", queue_name, "Running", ns="limit") + gpod("used", "pg-used", node_name="n1",
                                                                               ns="limit")
    return manifests + gpg("pg-pending", queue_name, ns="limit") + gpod("pending", "pg-pending", pin=pin, ns="limit")


@pytest.mark.parametrize("name", list(LIMIT_CASES))
@pytest.mark.parametrize("pinned", ["n1", "n2"])
def test_node_group_resource_limits(simulate, name, pinned):
    """TestNodeGroupResourceLimits, each node's verdict for the pending pod, pinned (see the module
    docstring).  The queue's annotation is written as the Go case writes it; ``simulate`` takes a
    malformed one as the API server does (it is any string), and the plugin refuses the queue's tasks."""
    expected = LIMIT_CASES[name][3][pinned]
    out = run(simulate, limit_case(name, pinned), conf(PREDICATES, nodegroup()))
    pending = out["pods"]["limit/pending"]
    if expected is None:
        assert pending["node"] == pinned, pending["reason"]
    else:
        assert pending["node"] is None
        assert pending["reason"] == f"0/2 nodes are unavailable: {', '.join(sorted([f'1 {SELECTOR}', f'1 {expected}']))}."


@pytest.mark.parametrize("name", list(LIMIT_CASES))
def test_node_group_resource_limits_unpinned(simulate, name):
    """The same cases with the pod free to go anywhere: group1 (preferred, 150) when its verdict allows,
    else group2 (100), else nowhere."""
    verdicts = LIMIT_CASES[name][3]
    out = run(simulate, limit_case(name, None), conf(nodegroup()))
    fits = [n for n in ("n1", "n2") if verdicts[n] is None]
    assert out["pods"]["limit/pending"]["node"] == (fits[0] if fits else None)


def test_node_group_resource_limit_allocation_event(simulate):
    """TestNodeGroupResourceLimitAllocationEvent: the first pod fits group1's limit (3 CPU, 8Gi) and is
    allocated; the allocation counts, so the second, alike, exceeds it within the same session."""
    manifests = (gnode("n1", "16", "64Gi", "group1", pods=32)
                 + gqueue("q-event-limit", affinity(["group1"]),
                          annotations="""{volcano.sh/nodegroup-resource-limits: '{"group1":{"cpu":"3","memory":"8Gi"}}'}""")
                 + gpg("pg-1", "q-event-limit", ns="limit") + gpg("pg-2", "q-event-limit", ns="limit")
                 + gpod("pending-1", "pg-1", ns="limit") + gpod("pending-2", "pg-2", ns="limit"))
    out = run(simulate, manifests, conf(nodegroup()))
    assert out["pods"]["limit/pending-1"]["node"] == "n1"
    assert out["pods"]["limit/pending-2"]["node"] is None
    assert out["pods"]["limit/pending-2"]["reason"] == f"0/1 nodes are unavailable: 1 {LIMIT_EXCEEDED}."


# -- vcsched's own: the node search shares work only where the verdicts agree ------------------------------


def test_identical_pods_of_two_queues_go_to_their_own_groups(simulate):
    """Two pods alike in every field, in queues bound to different groups: the node search must not
    reuse one pod's verdicts for the other (its work is shared between tasks of one shape)."""
    manifests = (NODES + gqueue("qa", affinity(["group1"])) + gqueue("qb", affinity(["group3"]))
                 + gpg("pa", "qa") + gpg("pb", "qb") + gpod("a-0", "pa") + gpod("b-0", "pb"))
    out = run(simulate, manifests, conf(nodegroup()))
    assert out["pods"][f"{NS}/a-0"]["node"] == "n1"
    assert out["pods"][f"{NS}/b-0"]["node"] == "n3"


def test_a_group_limit_counts_over_every_node_of_the_group(simulate):
    """A limit holds for the group, not per node: after one 2-CPU pod on n1a, group1 (limit 3 CPU) refuses
    the next pod on n1b as well, though nothing runs there; the queue overflows to group2."""
    manifests = (gnode("n1a", "16", "64Gi", "group1") + gnode("n1b", "16", "64Gi", "group1")
                 + gnode("n2", "16", "64Gi", "group2")
                 + gqueue("q", LIMIT_AFFINITY, annotations="""{volcano.sh/nodegroup-resource-limits: '{"group1":{"cpu":"3"}}'}""")
                 + gpg("pg", "q") + filler_pods("p", "pg"))
    out = run(simulate, manifests, conf(nodegroup()))
    assert fill(out, "p") == (["n1a", "n2", "n2", "n2", "n2", "n2"], None)


PRIORITY_CLASSES = "".join(f"""
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {{name: {name}}}
value: {value}
""" for name, value in (("low", 1), ("mid", 100), ("high", 200)))

PREEMPT_CONF = conf(option("priority", "enableJobOrder", "enableTaskOrder", "enablePreemptable"),
                    option("gang", "enableJobStarving"), nodegroup(), actions="enqueue, allocate, preempt")


def prio_job(name: str, queue_name: str, priority: str, node_name: str | None = None) -> str:
    """A one-pod job of 4 CPU (a whole node) at ``priority``, Running on ``node_name`` when given."""
    phase = "\nstatus: {phase: Running}" if node_name else ""
    doc = gpod(name, name, cpu="4", memory="4Gi", node_name=node_name)
    doc = doc.replace("  schedulerName: volcano\n", f"  schedulerName: volcano\n  priorityClassName: {priority}\n", 1)
    return podgroup(name, 1, queue=queue_name, ns=NS, extra=f"  priorityClassName: {priority}{phase}") + doc


def test_preempt_takes_no_victim_where_the_queue_may_not_run(simulate):
    """preempt asks the same predicate: a node of a group the queue may not use is
    UnschedulableAndUnresolvable, so its pods are no victims, however low their priority.  Here the
    queue's only other pod on an allowed node outranks the preemptor: nothing is evicted."""
    manifests = (gnode("n1", "4", "16Gi", "group1") + gnode("n2", "4", "16Gi", "group2") + PRIORITY_CLASSES
                 + gqueue("q", affinity(["group1"])) + prio_job("keep", "q", "high", "n1")
                 + prio_job("spare", "q", "low", "n2") + prio_job("h", "q", "mid"))
    out = run(simulate, manifests, PREEMPT_CONF)
    assert out["evicted"] == []
    assert out["pods"][f"{NS}/h"]["node"] is None


def test_preemptors_alike_in_two_queues_find_their_own_nodes(simulate):
    """Two preemptors alike in every field, in queues bound to different groups: each evicts in its own
    group (preempt's node search shares work between tasks of one shape only where the plugins agree)."""
    manifests = (gnode("n1", "4", "16Gi", "group1") + gnode("n2", "4", "16Gi", "group2") + PRIORITY_CLASSES
                 + gqueue("qa", affinity(["group1"])) + gqueue("qb", affinity(["group2"]))
                 + prio_job("va", "qa", "low", "n1") + prio_job("vb", "qb", "low", "n2")
                 + prio_job("ha", "qa", "high") + prio_job("hb", "qb", "high"))
    out = run(simulate, manifests, PREEMPT_CONF)
    assert sorted(out["evicted"]) == [f"{NS}/va", f"{NS}/vb"]


# -- bad input: the Queue CRD's schema for spec.affinity ---------------------------------------------------

_NGA = "spec.affinity.nodeGroupAffinity"
_NGAA = "spec.affinity.nodeGroupAntiAffinity"


@pytest.mark.parametrize("aff, expected", [
    ("5", "spec.affinity: must be a mapping, got integer 5"),
    ("[group1]", "spec.affinity: must be a mapping, got list"),
    ("{nodeGroupAffinity: [group1]}", f"{_NGA}: must be a mapping, got list"),
    ("{nodeGroupAntiAffinity: group1}", f"{_NGAA}: must be a mapping, got string 'group1'"),
    (f"{{nodeGroupAffinity: {{{REQUIRED}: group1}}}}", f"{_NGA}.{REQUIRED}: must be a list, got string 'group1'"),
    (f"{{nodeGroupAffinity: {{{PREFERRED}: {{group1: 1}}}}}}", f"{_NGA}.{PREFERRED}: must be a list, got mapping"),
    (f"{{nodeGroupAntiAffinity: {{{REQUIRED}: [group1, 2]}}}}", f"{_NGAA}.{REQUIRED}[1]: must be a string, got integer 2"),
    (f"{{nodeGroupAntiAffinity: {{{PREFERRED}: [null]}}}}", f"{_NGAA}.{PREFERRED}[0]: must be a string, got null"),
    (f"{{nodeGroupAffinity: {{{REQUIRED}: [true]}}}}", f"{_NGA}.{REQUIRED}[0]: must be a string, got boolean True"),
    ("{nodeGroupAffinity: {1: [group1]}}", f"{_NGA}: keys must be strings, got integer 1"),
])
def test_bad_affinity_exits_2_naming_file_document_queue_and_field(simulate, aff, expected):
    code, err = simulate(NODES + gqueue("q1", aff))
    assert code == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"cluster.yaml: document 5 (Queue q1): {expected}" in err


@pytest.mark.parametrize("aff", [
    "null", "{}", "{nodeGroupAffinity: null, nodeGroupAntiAffinity: {}}",
    f"{{nodeGroupAffinity: {{{REQUIRED}: null, {PREFERRED}: []}}}}",
    f"{{nodeGroupAffinity: {{{REQUIRED}: ['', 'Not A Label!']}}}}",  # the schema has no pattern for the names
])
def test_affinity_the_api_server_accepts(simulate, aff):
    code, out = simulate(NODES + gqueue("q1", aff))
    assert code == 0, out
