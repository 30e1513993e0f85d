"""The PodGroup controller's pure functions: a bare pod (or a workload's pods) → its PodGroup."""

from __future__ import annotations

import pytest

from vcsched.controllers.podgroup import group_min_member, merge_owner_annotations, needs_podgroup, \
    network_topology, owner_references, podgroup_for_pod, podgroup_name


def pod(name: str = "p", uid: str = "pod-uid", owners: list | None = None, annotations: dict | None = None,
        labels: dict | None = None, cpu: str = "1", priority_class: str | None = None) -> dict:
    spec: dict = {"schedulerName": "volcano",
                  "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}]}
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ns", "uid": uid, "ownerReferences": owners or [],
                         "annotations": annotations or {}, "labels": labels or {}},
            "spec": spec}


RS = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d9", "uid": "rs-uid", "controller": True}
STS = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db", "uid": "sts-uid", "controller": True}


def test_a_bare_pod_gets_its_own_podgroup_owned_by_the_pod():
    pg = podgroup_for_pod(pod(annotations={"scheduling.volcano.sh/queue-name": "q1"}))
    assert pg["metadata"]["name"] == "podgroup-pod-uid"
    assert pg["metadata"]["ownerReferences"] == [{"apiVersion": "v1", "kind": "Pod", "name": "p",
                                                  "uid": "pod-uid", "controller": True}]
    assert pg["spec"] == {"minMember": 1, "queue": "q1",
                          "minResources": {"cpu": "1", "requests.cpu": "1", "pods": "1", "count/pods": "1"}}
    assert pg["status"] == {"phase": "Pending"}


def test_the_pods_of_one_owner_share_the_owners_podgroup_and_its_references():
    a, b = pod("web-a", "uid-a", [RS]), pod("web-b", "uid-b", [RS])
    assert podgroup_name(a) == podgroup_name(b) == "podgroup-rs-uid"
    assert podgroup_for_pod(a)["metadata"]["ownerReferences"] == [RS]
    # an owner that is not the controller does not name the group
    loose = {**RS, "controller": False}
    assert podgroup_name(pod(owners=[loose])) == "podgroup-pod-uid"
    assert podgroup_for_pod(pod(owners=[loose]))["metadata"]["ownerReferences"][0]["kind"] == "Pod"


def test_min_member_and_volcano_annotations_are_inherited_from_the_owner():
    owner = {"scheduling.volcano.sh/group-min-member": "3", "volcano.sh/custom-key": "v",
             "volcano.sh/jdb-min-available": "2", "scheduling.volcano.sh/queue-name": "from-owner",
             "deployment.kubernetes.io/revision": "4"}
    p = pod("web-a", "uid-a", [RS], annotations={"volcano.sh/jdb-min-available": "1"}, priority_class="high")
    pg = podgroup_for_pod(p, owner)
    assert pg["spec"]["minMember"] == 3
    assert pg["spec"]["minResources"] == {"cpu": "3", "requests.cpu": "3", "pods": "3", "count/pods": "3"}
    # volcano.sh/ keys only; the pod's own annotation wins over the owner's
    assert pg["metadata"]["annotations"] == {"volcano.sh/custom-key": "v", "volcano.sh/jdb-min-available": "1"}
    # Volcano takes the queue from the pod's annotation only, the priority from the pod's spec
    assert "queue" not in pg["spec"] and pg["spec"]["priorityClassName"] == "high"
    assert podgroup_for_pod(p, None)["spec"]["minMember"] == 1  # --inherit-owner-annotations=false


@pytest.mark.parametrize("text, expected", [("2", 2), ("+4", 4), ("0", 0), ("-1", 1), ("two", 1), ("", 1),
                                            (" 2", 1), ("1_0", 1), ("2147483648", 1), (None, 1)])
def test_group_min_member_reads_like_go_parseint_and_falls_back_to_one(text, expected):
    owner = {} if text is None else {"scheduling.volcano.sh/group-min-member": text}
    assert group_min_member(owner) == expected


def test_min_member_zero_gives_empty_min_resources_as_volcano():
    pg = podgroup_for_pod(pod(owners=[STS]), {"scheduling.volcano.sh/group-min-member": "0"})
    assert pg["spec"]["minMember"] == 0 and pg["spec"]["minResources"] == {}


def test_owner_annotations_merge_with_the_first_owner_winning():
    assert merge_owner_annotations([{"a": "1"}, None, {"a": "2", "b": "3"}]) == {"a": "1", "b": "3"}


def test_owners_read_are_replicasets_statefulsets_daemonsets_and_batch_jobs_only():
    refs = [RS, STS, {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ds"},
            {"apiVersion": "batch/v1", "kind": "Job", "name": "bj"},
            {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "vj"},
            {"apiVersion": "apps/v1", "kind": "Deployment", "name": "dep"},
            {"apiVersion": "v1", "kind": "Node", "name": "n"}]
    assert owner_references(pod(owners=refs)) == [("apps", "ReplicaSet", "web-7d9"), ("apps", "StatefulSet", "db"),
                                                  ("apps", "DaemonSet", "ds"), ("batch", "Job", "bj")]


def test_pod_annotations_and_labels_copied_and_network_topology():
    p = pod(annotations={"volcano.sh/preemptable": "true", "volcano.sh/jdb-max-unavailable": "1",
                         "volcano.sh/network-topology-mode": "SOFT", "volcano.sh/network-topology-highest-tier": "2",
                         "other": "x"},
            labels={"volcano.sh/preemptable": "true", "app": "a"})
    pg = podgroup_for_pod(p)
    assert pg["metadata"]["annotations"] == {"volcano.sh/preemptable": "true", "volcano.sh/jdb-max-unavailable": "1"}
    assert pg["metadata"]["labels"] == {"volcano.sh/preemptable": "true"}
    assert pg["spec"]["networkTopology"] == {"mode": "soft", "highestTierAllowed": 2}
    assert network_topology({"volcano.sh/network-topology-mode": "weird"}) == {"mode": "hard"}
    assert network_topology({"volcano.sh/network-topology-highest-tier": "x"}) == {"mode": "hard"}
    assert network_topology({}) is None


def test_only_volcano_pods_without_a_group_need_one():
    assert needs_podgroup(pod(), ("volcano",))
    assert not needs_podgroup(pod(annotations={"scheduling.k8s.io/group-name": "g"}), ("volcano",))
    assert not needs_podgroup(pod(), ("other",))


def test_a_workloads_first_pod_by_its_selector_and_revision():
    from vcsched.controllers.podgroup import first_pod, workload_replicas, workload_selector

    sts = {"kind": "StatefulSet", "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "db"}}},
           "status": {"updateRevision": "db-r2"}}
    assert workload_selector(sts) == {"app": "db", "controller-revision-hash": "db-r2"}
    assert workload_replicas(sts) == 2 and workload_replicas({"spec": {}}) == 1
    assert workload_replicas({"spec": {"replicas": 0}}) == 0
    old = pod("db-0", labels={"app": "db", "controller-revision-hash": "db-r1"})
    new = [pod(n, labels={"app": "db", "controller-revision-hash": "db-r2"}) for n in ("db-2", "db-1")]
    assert first_pod([old, *new], workload_selector(sts))["metadata"]["name"] == "db-1"
    assert first_pod([old], workload_selector(sts)) is None


def test_an_existing_podgroup_is_updated_only_when_spec_labels_or_annotations_differ():
    from vcsched.controllers.podgroup import podgroup_update

    p = pod(owners=[STS])
    stored = {**podgroup_for_pod(p, {"scheduling.volcano.sh/group-min-member": "2"}), "status": {"phase": "Running"}}
    stored["spec"]["queue"] = "default"  # the API's default
    assert podgroup_update(stored, podgroup_for_pod(p, {"scheduling.volcano.sh/group-min-member": "2"})) is None
    updated = podgroup_update(stored, podgroup_for_pod(p, {"scheduling.volcano.sh/group-min-member": "3",
                                                           "volcano.sh/x": "y"}))
    assert updated["spec"]["minMember"] == 3 and updated["spec"]["queue"] == "default"
    assert updated["metadata"]["annotations"] == {"volcano.sh/x": "y"}
    assert updated["status"] == {"phase": "Running"} and updated["metadata"]["name"] == stored["metadata"]["name"]
