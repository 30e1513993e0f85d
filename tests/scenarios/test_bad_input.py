"""Bad input: exit 2 and one line naming the file, the document and the field; never a traceback."""

import pytest

from .conftest import node, pod, podgroup


@pytest.mark.parametrize("manifests, expected", [
    ("kind: Node\nmetadata: {name: [unclosed", "cluster.yaml"),
    ("apiVersion: v1\nkind: Secret\nmetadata: {name: s}", "cluster.yaml: document 0"),
    (node("n1") + pod("p", cpu="1x"), "document 1 (Pod default/p): spec.containers[0].resources.requests.cpu"),
    (node("n1") + pod("p", cpu="-1"), "document 1 (Pod default/p): spec.containers[0].resources.requests.cpu"),
    (node("n1", cpu="-4"), "document 0 (Node n1): status.allocatable.cpu"),
    (node("n1") + pod("p", group="missing"),
     "document 1 (Pod default/p): metadata.annotations[scheduling.k8s.io/group-name]: PodGroup default/missing not found"),
    (node("n1") + pod("p", queue="nowhere"),
     "document 1 (Pod default/p): metadata.annotations[scheduling.volcano.sh/queue-name]: Queue nowhere not found"),
    (node("n1") + podgroup("pg", 1, queue="nowhere"), "(PodGroup default/pg): spec.queue: Queue nowhere not found"),
    (podgroup("pg", -1), "(PodGroup default/pg): spec.minMember"),
    # found by fuzzing (tests/scenarios/fuzz_manifests.py), each once a traceback
    (node("n1") + pod("p", cpu="1e101"), "document 1 (Pod default/p): spec.containers[0].resources.requests.cpu"),
    (node("n1") + pod("p", cpu="1.0e+308"), "document 1 (Pod default/p): spec.containers[0].resources.requests.cpu"),
    (node("n1", cpu="1" + "0" * 120), "document 0 (Node n1): status.allocatable.cpu"),
    ("kind: Node\nmetadata: {name: n1, creationTimestamp: 2026-13-45T10:00:00Z}", "cluster.yaml: document 0"),
    ("apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: j}\nspec:\n  policies: [null]\n"
     "  tasks: [{name: t, replicas: 1, template: {spec: {containers: [{name: c, image: i}]}}}]",
     "(Job default/j): spec.policies[0]: must be a mapping, got null"),
])
def test_bad_manifests_exit_2_with_one_line(simulate, manifests, expected):
    code, err = simulate(manifests)
    assert code == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    assert expected in err


@pytest.mark.parametrize("conf, expected", [
    ('actions: "enqueue, alocate"', "failed to find Action  alocate"),
    ('actions: "allocate"\ntiers:\n- plugins:\n  - name: gnag', "tiers[0].plugins[0].name: unknown plugin 'gnag'"),
    ('actions: "allocate"\ntiers:\n- plugins:\n  - name: nodeorder\n    arguments: {leastrequested.weight: 1.5}',
     "tiers[0].plugins[0].arguments.leastrequested.weight: expected an integer"),
])
def test_bad_conf_exits_2_naming_the_field(simulate, conf, expected):
    code, err = simulate(node("n1"), conf=conf)
    assert code == 2 and err.count("\n") == 1
    assert "scheduler.conf: " in err and expected in err


def test_bad_conf_in_the_input_configmap_names_it(simulate):
    cm = """
---
apiVersion: v1
kind: ConfigMap
metadata: {name: volcano-scheduler-configmap, namespace: volcano-system}
data:
  volcano-scheduler.conf: |
    actions: "enqueue, nope"
"""
    code, err = simulate(node("n1") + cm)
    assert code == 2
    assert "ConfigMap volcano-system/volcano-scheduler-configmap: data[volcano-scheduler.conf]: " \
           "actions: failed to find Action  nope" in err


def test_configmap_conf_is_used(simulate):
    cm = """
---
apiVersion: v1
kind: ConfigMap
metadata: {name: volcano-scheduler-configmap, namespace: volcano-system}
data:
  volcano-scheduler.conf: |
    actions: "enqueue"
    tiers: []
"""
    code, out = simulate(node("n1") + pod("p") + cm)
    assert code == 0 and out["pods"]["default/p"]["node"] is None


def test_missing_file_is_bad_input(tmp_path, capsys):
    from vcsched.cli import main

    assert main(["simulate", "-f", str(tmp_path / "nope.yaml"), "-o", "json"]) == 2
    assert "nope.yaml" in capsys.readouterr().err
