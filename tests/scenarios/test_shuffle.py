"""shuffle end to end: Volcano's actions/shuffle/shuffle_test.go through ``vcsched simulate``.

TestShuffle registers a test-double plugin ("fake") whose VictimTasksFn names the low-priority
(10) tasks among the Running ones, and expects shuffle to evict exactly those.  A configuration can
only name real plugins, so the double is replaced by tdm, the plugin that feeds shuffle in Volcano:
both nodes are revocable in a zone whose window is closed (``--now`` at noon, window ``0:00-0:01``),
the low-priority pods are ``volcano.sh/preemptable: "true"`` and the high-priority ones ``"false"``.
Each job has one low-priority pod and no disruption budget, so tdm names one pod per job: the same
three victims.  The priorities themselves come from PriorityClasses (a manifest's ``spec.priority``
must match its class); tdm does not read them.
"""

from __future__ import annotations

from vcsched.conf import ENABLE_FLAGS

NOW = "2026-03-10T12:00:00Z"


def option(name: str, *enabled: str, arguments: str = "") -> str:
    lines = [f"  - name: {name}"]
    lines += [f"    {flag}: {'true' if flag in enabled else 'false'}"
              for flag in ENABLE_FLAGS if flag != "enableHierarchy"]
    if arguments:
        lines.append(f"    arguments: {{{arguments}}}")
    return "\n".join(lines) + "\n"


TDM_VICTIMS = option("tdm", "enabledVictim", arguments="tdm.revocable-zone.rz1: '0:00-0:01'")


def cluster() -> str:
    text = """
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: 10
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 100
"""
    for name in ("node1", "node2"):
        text += f"""
---
apiVersion: v1
kind: Node
metadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}, volcano.sh/revocable-zone: rz1}}}}
status: {{allocatable: {{cpu: "4", memory: 8Gi, pods: "10"}}}}
"""
    for pg in ("pg1", "pg2", "pg3"):
        text += f"""
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {{name: {pg}, namespace: test}}
spec: {{minMember: 0, queue: default}}
status: {{phase: Running}}
"""
    pods = [("pod1-1", "node1", "pg1", "low"), ("pod1-2", "node1", "pg1", "high"), ("pod1-3", "node1", "pg1", "high"),
            ("pod2-1", "node1", "pg2", "low"), ("pod2-2", "node2", "pg2", "high"),
            ("pod3-1", "node2", "pg3", "low"), ("pod3-2", "node2", "pg3", "high")]
    for name, node, pg, priority in pods:
        preemptable = "true" if priority == "low" else "false"
        text += f"""
---
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: test
  annotations: {{scheduling.k8s.io/group-name: {pg}, volcano.sh/preemptable: "{preemptable}"}}
spec:
  schedulerName: volcano
  nodeName: {node}
  priorityClassName: {priority}
  containers: [{{name: c, image: x, resources: {{requests: {{cpu: "1", memory: 2G}}}}}}]
status: {{phase: Running}}
"""
    return text


def test_shuffle_evicts_the_victims_the_plugins_name(simulate):
    """TestShuffle "select pods with low priority and evict them": ExpectEvictNum 3, ExpectEvicted
    test/pod1-1, test/pod2-1, test/pod3-1 (one session)."""
    code, out = simulate(cluster(), "--now", NOW, "--cycles", "1", conf=f'actions: "shuffle"\ntiers:\n- plugins:\n{TDM_VICTIMS}')
    assert code == 0
    assert sorted(out["evicted"]) == ["test/pod1-1", "test/pod2-1", "test/pod3-1"]
    assert {k for k, p in out["pods"].items() if p["node"]} == {
        "test/pod1-2", "test/pod1-3", "test/pod2-2", "test/pod3-2"}


def test_shuffle_without_a_victim_plugin_evicts_nothing(simulate):
    """Not in shuffle_test.go: no plugin with a VictimTasksFn (or its enabledVictim off): no victims."""
    for tiers in (option("priority", "enableJobOrder"), option("tdm", arguments="tdm.revocable-zone.rz1: '0:00-0:01'")):
        code, out = simulate(cluster(), "--now", NOW, "--cycles", "1", conf=f'actions: "shuffle"\ntiers:\n- plugins:\n{tiers}')
        assert code == 0 and out["evicted"] == []


def test_shuffle_is_an_action_name_the_conf_accepts(simulate):
    """``shuffle`` in ``actions`` is run, not refused as unimplemented; beside the others, in the given order."""
    conf = f'actions: "enqueue, allocate, backfill, shuffle"\ntiers:\n- plugins:\n{TDM_VICTIMS}'
    code, out = simulate(cluster(), "--now", NOW, "--cycles", "1", conf=conf)
    assert code == 0 and len(out["evicted"]) == 3
