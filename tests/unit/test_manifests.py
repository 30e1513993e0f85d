"""vcsched.sim.manifests: reading, checking and defaulting the simulator's input."""

from __future__ import annotations

import io
import textwrap
import uuid
from pathlib import Path

import pytest

from vcsched.sim.manifests import Manifest, ManifestError, load_manifests

NODE = """
apiVersion: v1
kind: Node
metadata:
  name: node-1
  labels: {kubernetes.io/hostname: node-1}
spec:
  taints:
  - {key: dedicated, value: gpu, effect: NoSchedule}
status:
  allocatable: {cpu: "4", memory: 8Gi, pods: 110, nvidia.com/gpu: 2}
  capacity: {cpu: "4", memory: 8Gi, pods: 110, nvidia.com/gpu: 2}
"""

POD = """
apiVersion: v1
kind: Pod
metadata:
  name: p1
  annotations: {scheduling.k8s.io/group-name: pg1}
spec:
  schedulerName: volcano
  priority: 100
  nodeSelector: {zone: a}
  tolerations:
  - {key: dedicated, operator: Equal, value: gpu, effect: NoSchedule}
  - {operator: Exists}
  containers:
  - name: main
    image: busybox
    ports: [{containerPort: 80, hostPort: 8080, protocol: TCP}]
    resources:
      requests: {cpu: 500m, memory: 1Gi}
      limits: {cpu: "1", memory: 1Gi}
"""

ALL_KINDS = """
apiVersion: v1
kind: Namespace
metadata: {name: team-a, annotations: {scheduling.volcano.sh/queue-name: q1}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: volcano-scheduler-configmap, namespace: volcano-system}
data:
  volcano-scheduler.conf: |
    actions: "enqueue, allocate"
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
globalDefault: false
preemptionPolicy: PreemptLowerPriority
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: q1}
spec:
  weight: 2
  reclaimable: false
  capability: {cpu: "8", memory: 16Gi}
  deserved: {cpu: "4"}
  guarantee: {resource: {cpu: "2"}}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: pg1, namespace: team-a}
spec:
  minMember: 2
  minTaskMember: {worker: 2}
  minResources: {cpu: "2"}
  queue: q1
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: job1, namespace: team-a}
spec:
  minAvailable: 1
  schedulerName: volcano
  tasks:
  - name: worker
    replicas: 1
    template:
      spec:
        containers: [{name: c, image: busybox}]
"""


def write(tmp_path: Path, text: str, name: str = "cluster.yaml") -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def docs(*texts: str) -> str:
    return "---\n".join(textwrap.dedent(t).strip() + "\n" for t in texts)


def error_of(tmp_path: Path, text: str, name: str = "cluster.yaml") -> str:
    """The one-line message for ``text``, with the tmp directory stripped from the file name."""
    path = write(tmp_path, text, name)
    with pytest.raises(ManifestError) as info:
        load_manifests([path])
    message = str(info.value)
    assert "\n" not in message
    return message.replace(str(tmp_path) + "/", "")


def pod(**overrides: str) -> str:
    """A Pod document whose first container's resources (or other spec text) are given."""
    resources = overrides.get("resources", "requests: {cpu: 1}")
    extra = overrides.get("spec", "")
    meta = overrides.get("meta", "name: p1")
    return (
        "apiVersion: v1\nkind: Pod\nmetadata: {" + meta + "}\nspec:\n"
        + textwrap.indent(textwrap.dedent(extra).strip() + "\n", "  ") * bool(extra.strip())
        + "  containers:\n  - name: c\n    resources:\n"
        + textwrap.indent(textwrap.dedent(resources).strip() + "\n", "      ")
    )


# -- accepted input --------------------------------------------------------------


def test_every_accepted_kind_loads_in_input_order(tmp_path: Path) -> None:
    path = write(tmp_path, docs(NODE, POD, ALL_KINDS))
    manifests = load_manifests([path])
    assert [(m.api_version, m.kind, m.key) for m in manifests] == [
        ("v1", "Node", "node-1"),
        ("v1", "Pod", "default/p1"),
        ("v1", "Namespace", "team-a"),
        ("v1", "ConfigMap", "volcano-system/volcano-scheduler-configmap"),
        ("scheduling.k8s.io/v1", "PriorityClass", "high"),
        ("scheduling.volcano.sh/v1beta1", "Queue", "q1"),
        ("scheduling.volcano.sh/v1beta1", "PodGroup", "team-a/pg1"),
        ("batch.volcano.sh/v1alpha1", "Job", "team-a/job1"),
    ]
    assert [m.source for m in manifests] == [f"{path}: document {i}" for i in range(8)]
    node, p1 = manifests[0], manifests[1]
    assert (node.name, node.namespace) == ("node-1", "")
    assert (p1.name, p1.namespace, p1.ref) == ("p1", "default", "Pod default/p1")
    assert manifests[2].namespace == ""  # Namespace is cluster-scoped
    assert manifests[3].obj["data"]["volcano-scheduler.conf"].startswith("actions:")
    assert isinstance(node, Manifest)


def test_empty_documents_are_skipped_but_counted(tmp_path: Path) -> None:
    # a leading "---" opens document 0, so the node is document 2 and the pod document 5
    text = "---\n---\n# only a comment\n---" + NODE + "---\n---\n---" + POD
    path = write(tmp_path, text)
    node, p1 = load_manifests([path])
    assert node.source == f"{path}: document 2"
    assert p1.source == f"{path}: document 5"


def test_empty_file_gives_nothing(tmp_path: Path) -> None:
    assert load_manifests([write(tmp_path, "")]) == []


def test_list_items_are_unpacked(tmp_path: Path) -> None:
    text = docs(
        NODE,
        """
        apiVersion: v1
        kind: List
        items:
        - {apiVersion: v1, kind: Node, metadata: {name: node-2}}
        - {apiVersion: scheduling.volcano.sh/v1beta1, kind: Queue, metadata: {name: q2}}
        """,
    )
    path = write(tmp_path, text)
    manifests = load_manifests([path])
    assert [m.key for m in manifests] == ["node-1", "node-2", "q2"]
    assert manifests[1].source == f"{path}: document 1 item 0"
    assert manifests[2].source == f"{path}: document 1 item 1"


def test_several_files_and_stdin(tmp_path: Path) -> None:
    first = write(tmp_path, NODE, "nodes.yaml")
    stdin = io.StringIO(textwrap.dedent(POD))
    manifests = load_manifests([first, "-"], stdin=stdin)
    assert [m.key for m in manifests] == ["node-1", "default/p1"]
    assert manifests[1].source == "<stdin>: document 0"


def test_errors_on_stdin_name_stdin() -> None:
    stdin = io.StringIO("apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n")
    with pytest.raises(ManifestError, match=r"^<stdin>: document 0: unsupported apiVersion/kind v1 Secret"):
        load_manifests(["-"], stdin=stdin)


def test_input_documents_are_not_modified(tmp_path: Path) -> None:
    """Defaulting happens on a copy: two List items sharing a YAML anchor stay independent."""
    text = """
    apiVersion: v1
    kind: List
    items:
    - &pod {apiVersion: v1, kind: Pod, metadata: {name: a}, spec: {containers: [{name: c}]}}
    - {apiVersion: v1, kind: Pod, metadata: {name: b}, spec: {containers: [{name: c}]}}
    """
    a, b = load_manifests([write(tmp_path, text)])
    a.obj["spec"]["containers"][0]["name"] = "changed"
    assert b.obj["spec"]["containers"][0]["name"] == "c"


# -- defaulting ------------------------------------------------------------------


def test_metadata_defaults(tmp_path: Path) -> None:
    text = docs(NODE, POD, "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q1}\n")
    node, p1, q1 = load_manifests([write(tmp_path, text)])
    assert p1.obj["metadata"]["namespace"] == "default"
    assert "namespace" not in node.obj["metadata"]
    assert p1.obj["metadata"]["uid"] == str(
        uuid.UUID(p1.obj["metadata"]["uid"])
    )  # a well-formed UUID
    assert [m.obj["metadata"]["creationTimestamp"] for m in (node, p1, q1)] == [
        "2026-01-01T00:00:00Z",
        "2026-01-01T00:00:01Z",
        "2026-01-01T00:00:02Z",
    ]


def test_creation_timestamps_count_objects_across_files_and_lists(tmp_path: Path) -> None:
    first = write(tmp_path, NODE, "a.yaml")
    second = write(
        tmp_path,
        "apiVersion: v1\nkind: List\nitems:\n"
        "- {apiVersion: v1, kind: Node, metadata: {name: n2}}\n"
        "- {apiVersion: v1, kind: Node, metadata: {name: n3}}\n",
        "b.yaml",
    )
    stamps = [m.obj["metadata"]["creationTimestamp"] for m in load_manifests([first, second])]
    assert stamps == ["2026-01-01T00:00:00Z", "2026-01-01T00:00:01Z", "2026-01-01T00:00:02Z"]


def test_given_uid_and_timestamps_are_kept_and_normalised(tmp_path: Path) -> None:
    text = """
    apiVersion: v1
    kind: Pod
    metadata:
      name: p1
      uid: abc
      creationTimestamp: 2025-06-01T12:00:00+02:00
      deletionTimestamp: "2025-06-01T12:30:00.5Z"
    spec: {containers: [{name: c}]}
    """
    [p1] = load_manifests([write(tmp_path, text)])
    meta = p1.obj["metadata"]
    assert meta["uid"] == "abc"
    assert meta["creationTimestamp"] == "2025-06-01T10:00:00Z"
    assert meta["deletionTimestamp"] == "2025-06-01T12:30:00Z"


def test_uids_are_deterministic_and_distinct(tmp_path: Path) -> None:
    text = docs(
        NODE,
        POD,
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p1, namespace: other}\nspec: {containers: [{name: c}]}\n",
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: p1}\n",
    )
    first = [m.obj["metadata"]["uid"] for m in load_manifests([write(tmp_path, text, "a.yaml")])]
    again = [m.obj["metadata"]["uid"] for m in load_manifests([write(tmp_path, text, "b.yaml")])]
    assert first == again
    assert len(set(first)) == len(first)
    # the uid depends on the object, not on its place in the input
    reordered = docs(POD, NODE)
    uids = {m.key: m.obj["metadata"]["uid"] for m in load_manifests([write(tmp_path, reordered, "c.yaml")])}
    assert uids == {"default/p1": first[1], "node-1": first[0]}


def test_pod_defaults(tmp_path: Path) -> None:
    text = """
    apiVersion: v1
    kind: Pod
    metadata: {name: p1}
    spec:
      containers:
      - name: c
        resources:
          limits: {cpu: "2", memory: 1Gi, volcano.sh/vgpu-number: 1}
          requests: {cpu: "1"}
      initContainers:
      - name: init
        resources:
          limits: {cpu: 500m}
    """
    [p1] = load_manifests([write(tmp_path, text)])
    spec = p1.obj["spec"]
    assert spec["schedulerName"] == "default-scheduler"
    assert p1.obj["status"]["phase"] == "Pending"
    # SetDefaults_Pod: limits fill in missing requests
    assert spec["containers"][0]["resources"]["requests"] == {"cpu": "1", "memory": "1Gi", "volcano.sh/vgpu-number": 1}
    assert spec["initContainers"][0]["resources"]["requests"] == {"cpu": "500m"}


def test_pod_given_scheduler_and_phase_are_kept(tmp_path: Path) -> None:
    text = """
    apiVersion: v1
    kind: Pod
    metadata: {name: p1}
    spec: {schedulerName: volcano, nodeName: node-1, containers: [{name: c}]}
    status: {phase: Running}
    """
    [p1] = load_manifests([write(tmp_path, text)])
    assert p1.obj["spec"]["schedulerName"] == "volcano"
    assert p1.obj["status"]["phase"] == "Running"


def test_node_allocatable_defaults_to_capacity(tmp_path: Path) -> None:
    text = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {capacity: {cpu: 2, pods: 10}}\n"
    [node] = load_manifests([write(tmp_path, text)])
    assert node.obj["status"]["allocatable"] == {"cpu": 2, "pods": 10}


def test_queue_and_podgroup_defaults(tmp_path: Path) -> None:
    text = docs(
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q0}\nspec: {weight: 0}\n",
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q1}\n",
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: pg}\nspec: {minMember: 1}\n",
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: pg2}\nspec: {queue: q1}\n",
    )
    q0, q1, pg, pg2 = load_manifests([write(tmp_path, text)])
    assert (q0.obj["spec"]["weight"], q0.obj["spec"]["reclaimable"]) == (1, True)
    assert (q1.obj["spec"]["weight"], q1.obj["spec"]["reclaimable"]) == (1, True)
    assert pg.obj["spec"]["queue"] == "default"
    assert pg2.obj["spec"]["queue"] == "q1"


# -- file and document errors ----------------------------------------------------


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ManifestError) as info:
        load_manifests([str(tmp_path / "nope.yaml")])
    assert str(info.value) == f"{tmp_path}/nope.yaml: cannot read file: No such file or directory"


def test_yaml_syntax_error_names_document_and_line(tmp_path: Path) -> None:
    text = NODE.strip() + "\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: p1\n"
    message = error_of(tmp_path, text)
    assert message.startswith("cluster.yaml: document 1: YAML syntax error at line 16, column 1: ")


def test_yaml_indentation_error(tmp_path: Path) -> None:
    message = error_of(tmp_path, "apiVersion: v1\nkind: Node\n  metadata: x\n")
    assert message == (
        "cluster.yaml: document 0: YAML syntax error at line 3, column 11: "
        "mapping values are not allowed here"
    )


def test_document_must_be_a_mapping(tmp_path: Path) -> None:
    message = error_of(tmp_path, docs(NODE, "- a\n- b\n"))
    assert message == "cluster.yaml: document 1: a manifest must be a mapping, got list"


def test_list_item_must_be_a_mapping(tmp_path: Path) -> None:
    message = error_of(tmp_path, "apiVersion: v1\nkind: List\nitems: [x]\n")
    assert message == "cluster.yaml: document 0 item 0: a manifest must be a mapping, got string"


def test_unknown_kind_is_refused(tmp_path: Path) -> None:
    deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n"
    message = error_of(tmp_path, docs(NODE, POD, deployment))
    assert message.startswith(
        "cluster.yaml: document 2: unsupported apiVersion/kind apps/v1 Deployment (accepted: v1 Node, v1 Pod,"
    )


def test_known_kind_with_wrong_api_version_is_refused(tmp_path: Path) -> None:
    message = error_of(tmp_path, "apiVersion: scheduling.volcano.sh/v1alpha1\nkind: PodGroup\nmetadata: {name: a}\n")
    assert message.startswith(
        "cluster.yaml: document 0: unsupported apiVersion/kind scheduling.volcano.sh/v1alpha1 PodGroup"
    )


def test_unknown_kind_inside_a_list(tmp_path: Path) -> None:
    message = error_of(tmp_path, "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Service}\n")
    assert message.startswith("cluster.yaml: document 0 item 0: unsupported apiVersion/kind v1 Service")


def test_missing_kind(tmp_path: Path) -> None:
    assert error_of(tmp_path, "apiVersion: v1\nmetadata: {name: a}\n") == "cluster.yaml: document 0: kind: Required value"


def test_duplicate_objects_name_both_sources(tmp_path: Path) -> None:
    a = write(tmp_path, docs(NODE, POD), "a.yaml")
    b = write(tmp_path, POD, "b.yaml")
    with pytest.raises(ManifestError) as info:
        load_manifests([a, b])
    assert str(info.value) == f"{b}: document 0 (Pod default/p1): duplicate object, already defined in {a}: document 1"


def test_same_name_in_other_namespace_or_kind_is_not_a_duplicate(tmp_path: Path) -> None:
    text = docs(
        POD,
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p1, namespace: other}\nspec: {containers: [{name: c}]}\n",
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: p1}\n",
    )
    assert len(load_manifests([write(tmp_path, text)])) == 3


def test_explicit_default_namespace_duplicates_implicit_one(tmp_path: Path) -> None:
    text = docs(POD, pod(meta="name: p1, namespace: default"))
    assert error_of(tmp_path, text) == (
        "cluster.yaml: document 1 (Pod default/p1): duplicate object, already defined in cluster.yaml: document 0"
    )


# -- metadata --------------------------------------------------------------------


def test_name_is_required(tmp_path: Path) -> None:
    text = "apiVersion: v1\nkind: Pod\nmetadata: {namespace: a}\nspec: {containers: [{name: c}]}\n"
    assert error_of(tmp_path, text) == "cluster.yaml: document 0 (Pod): metadata.name: Required value"


def test_name_must_be_a_dns_subdomain(tmp_path: Path) -> None:
    message = error_of(tmp_path, pod(meta="name: My_Pod"))
    assert message == (
        "cluster.yaml: document 0 (Pod): metadata.name: a lowercase RFC 1123 subdomain must consist of lower case "
        "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character, got 'My_Pod'"
    )


def test_dotted_names_are_fine_except_for_namespaces(tmp_path: Path) -> None:
    assert load_manifests([write(tmp_path, "apiVersion: v1\nkind: Node\nmetadata: {name: node-1.example.com}\n")])
    message = error_of(tmp_path, "apiVersion: v1\nkind: Namespace\nmetadata: {name: a.b}\n", "ns.yaml")
    assert message.startswith(
        "ns.yaml: document 0 (Namespace): metadata.name: a lowercase RFC 1123 label must consist of"
    )


def test_name_too_long(tmp_path: Path) -> None:
    message = error_of(tmp_path, pod(meta="name: " + "a" * 254))
    assert message == "cluster.yaml: document 0 (Pod): metadata.name: must be no more than 253 characters, got 254"


def test_name_must_be_a_string(tmp_path: Path) -> None:
    message = error_of(tmp_path, "apiVersion: v1\nkind: Node\nmetadata: {name: 12}\n")
    assert message == "cluster.yaml: document 0 (Node): metadata.name: must be a string, got integer 12"


def test_namespace_must_be_a_label(tmp_path: Path) -> None:
    message = error_of(tmp_path, pod(meta="name: p1, namespace: Team"))
    assert message.startswith("cluster.yaml: document 0 (Pod p1): metadata.namespace: a lowercase RFC 1123 label")


def test_label_values_must_be_strings(tmp_path: Path) -> None:
    message = error_of(tmp_path, pod(meta="name: p1, labels: {replicas: 3}"))
    assert message == "cluster.yaml: document 0 (Pod default/p1): metadata.labels[replicas]: must be a string, got integer 3"


def test_annotation_values_must_be_strings(tmp_path: Path) -> None:
    text = "apiVersion: v1\nkind: Node\nmetadata: {name: n1, annotations: {volcano.sh/preemptable: true}}\n"
    assert error_of(tmp_path, text) == (
        "cluster.yaml: document 0 (Node n1): metadata.annotations[volcano.sh/preemptable]: must be a string, got boolean True"
    )


def test_bad_creation_timestamp(tmp_path: Path) -> None:
    message = error_of(tmp_path, pod(meta="name: p1, creationTimestamp: yesterday"))
    assert message == (
        "cluster.yaml: document 0 (Pod default/p1): metadata.creationTimestamp: must be an RFC 3339 date-time "
        "such as '2026-01-01T00:00:00Z', got string 'yesterday'"
    )


def test_owner_reference_needs_a_uid(tmp_path: Path) -> None:
    meta = "name: p1, ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: rs, controller: true}]"
    assert error_of(tmp_path, pod(meta=meta)) == (
        "cluster.yaml: document 0 (Pod default/p1): metadata.ownerReferences[0].uid: Required value"
    )


# -- Pod -------------------------------------------------------------------------


def test_malformed_quantity(tmp_path: Path) -> None:
    message = error_of(tmp_path, docs(NODE, POD, NODE.replace("node-1", "node-2"), pod(resources="requests: {cpu: 1x}")))
    assert message == (
        "cluster.yaml: document 3 (Pod default/p1): spec.containers[0].resources.requests.cpu: "
        "quantities must match the regular expression, got '1x'"
    )


def test_negative_quantity(tmp_path: Path) -> None:
    message = error_of(tmp_path, pod(resources="limits: {memory: -1Gi}"))
    assert message == (
        "cluster.yaml: document 0 (Pod default/p1): spec.containers[0].resources.limits.memory: "
        "must be greater than or equal to 0, got '-1Gi'"
    )


def test_request_above_limit(tmp_path: Path) -> None:
    message = error_of(tmp_path, pod(resources="requests: {cpu: 2}\nlimits: {cpu: 1500m}"))
    assert message == (
        "cluster.yaml: document 0 (Pod default/p1): spec.containers[0].resources.requests.cpu: "
        "must be less than or equal to cpu limit of 1500m, got '2'"
    )


def test_request_equal_to_limit_is_fine(tmp_path: Path) -> None:
    assert load_manifests([write(tmp_path, pod(resources="requests: {cpu: 1000m}\nlimits: {cpu: 1}"))])


def test_extended_resource_must_be_whole(tmp_path: Path) -> None:
    message = error_of(tmp_path, pod(resources="limits: {nvidia.com/gpu: 0.5}"))
    assert message == (
        "cluster.yaml: document 0 (Pod default/p1): spec.containers[0].resources.limits.nvidia.com/gpu: "
        "must be an integer, got '0.5'"
    )


def test_extended_resource_request_must_equal_limit(tmp_path: Path) -> None:
    message = error_of(tmp_path, pod(resources="requests: {nvidia.com/gpu: 1}\nlimits: {nvidia.com/gpu: 2}"))
    assert message == (
        "cluster.yaml: document 0 (Pod default/p1): spec.containers[0].resources.requests.nvidia.com/gpu: "
        "must be equal to nvidia.com/gpu limit of 2, got '1'"
    )


def test_extended_resource_request_without_limit_is_accepted(tmp_path: Path) -> None:
    [p1] = load_manifests([write(tmp_path, pod(resources="requests: {nvidia.com/gpu: 1}"))])
    assert p1.obj["spec"]["containers"][0]["resources"]["requests"] == {"nvidia.com/gpu": 1}


def test_kubernetes_io_resources_may_be_fractional(tmp_path: Path) -> None:
    assert load_manifests([write(tmp_path, pod(resources="requests: {cpu: 100m, hugepages-2Mi: 2Mi}"))])


def test_unknown_bare_resource_name(tmp_path: Path) -> None:
    message = error_of(tmp_path, pod(resources="requests: {gpu: 1}"))
    assert message == (
        "cluster.yaml: document 0 (Pod default/p1): spec.containers[0].resources.requests.gpu: "
        "must be a standard resource for containers, got 'gpu'"
    )


def test_init_container_quantities(tmp_path: Path) -> None:
    text = pod(spec="initContainers: [{name: init, resources: {requests: {memory: 1Q}}}]")
    assert error_of(tmp_path, text) == (
        "cluster.yaml: document 0 (Pod default/p1): spec.initContainers[0].resources.requests.memory: "
        "quantities must match the regular expression, got '1Q'"
    )


def test_overhead(tmp_path: Path) -> None:
    message = error_of(tmp_path, pod(spec="overhead: {cpu: -100m}"))
    assert message == (
        "cluster.yaml: document 0 (Pod default/p1): spec.overhead.cpu: must be greater than or equal to 0, got '-100m'"
    )
    assert load_manifests([write(tmp_path, pod(spec="overhead: {cpu: 100m}"), "ok.yaml")])


def test_containers_required(tmp_path: Path) -> None:
    for n, spec in enumerate(("{}", "{containers: []}")):
        text = f"apiVersion: v1\nkind: Pod\nmetadata: {{name: p1}}\nspec: {spec}\n"
        assert error_of(tmp_path, text, f"{n}.yaml") == f"{n}.yaml: document 0 (Pod default/p1): spec.containers: Required value"


def test_spec_required(tmp_path: Path) -> None:
    assert error_of(tmp_path, "apiVersion: v1\nkind: Pod\nmetadata: {name: p1}\n") == (
        "cluster.yaml: document 0 (Pod default/p1): spec: Required value"
    )


def test_containers_must_be_a_list(tmp_path: Path) -> None:
    text = "apiVersion: v1\nkind: Pod\nmetadata: {name: p1}\nspec: {containers: {name: c}}\n"
    assert error_of(tmp_path, text) == (
        "cluster.yaml: document 0 (Pod default/p1): spec.containers: must be a list, got mapping"
    )


def test_container_name_required_and_unique(tmp_path: Path) -> None:
    text = "apiVersion: v1\nkind: Pod\nmetadata: {name: p1}\nspec: {containers: [{image: busybox}]}\n"
    assert error_of(tmp_path, text) == "cluster.yaml: document 0 (Pod default/p1): spec.containers[0].name: Required value"
    text = "apiVersion: v1\nkind: Pod\nmetadata: {name: p1}\nspec: {containers: [{name: c}, {name: c}]}\n"
    assert error_of(tmp_path, text, "dup.yaml") == "dup.yaml: document 0 (Pod default/p1): spec.containers[1].name: Duplicate value: 'c'"


def test_priority_must_be_int32(tmp_path: Path) -> None:
    assert error_of(tmp_path, pod(spec="priority: 3000000000")) == (
        "cluster.yaml: document 0 (Pod default/p1): spec.priority: must be less than or equal to 2147483647, got 3000000000"
    )
    assert error_of(tmp_path, pod(spec='priority: "10"'), "s.yaml") == (
        "s.yaml: document 0 (Pod default/p1): spec.priority: must be an integer, got string '10'"
    )


def test_ports(tmp_path: Path) -> None:
    text = "apiVersion: v1\nkind: Pod\nmetadata: {name: p1}\nspec: {containers: [{name: c, ports: [{containerPort: 0}]}]}\n"
    assert error_of(tmp_path, text) == (
        "cluster.yaml: document 0 (Pod default/p1): spec.containers[0].ports[0].containerPort: "
        "must be between 1 and 65535, inclusive, got integer 0"
    )
    text = text.replace("containerPort: 0", "containerPort: 80, hostPort: 70000")
    assert error_of(tmp_path, text, "h.yaml") == (
        "h.yaml: document 0 (Pod default/p1): spec.containers[0].ports[0].hostPort: "
        "must be between 1 and 65535, inclusive, got integer 70000"
    )


def test_tolerations(tmp_path: Path) -> None:
    bad_operator = pod(spec="tolerations: [{key: a, operator: In, value: b}]")
    assert error_of(tmp_path, bad_operator) == (
        "cluster.yaml: document 0 (Pod default/p1): spec.tolerations[0].operator: "
        "Unsupported value: string 'In': supported values: '', 'Exists', 'Equal'"
    )
    bad_effect = pod(spec="tolerations: [{key: a, effect: NoRun}]")
    assert error_of(tmp_path, bad_effect, "e.yaml") == (
        "e.yaml: document 0 (Pod default/p1): spec.tolerations[0].effect: "
        "Unsupported value: string 'NoRun': supported values: '', 'NoSchedule', 'PreferNoSchedule', 'NoExecute'"
    )
    exists_with_value = pod(spec="tolerations: [{key: a, operator: Exists, value: b}]")
    assert error_of(tmp_path, exists_with_value, "v.yaml") == (
        "v.yaml: document 0 (Pod default/p1): spec.tolerations[0].value: value must be empty when `operator` is 'Exists'"
    )
    assert load_manifests([write(tmp_path, pod(spec="tolerations: [{key: a, effect: ''}]"), "ok.yaml")])


def test_node_selector_values_must_be_strings(tmp_path: Path) -> None:
    assert error_of(tmp_path, pod(spec="nodeSelector: {gpu: true}")) == (
        "cluster.yaml: document 0 (Pod default/p1): spec.nodeSelector[gpu]: must be a string, got boolean True"
    )


def test_pod_phase(tmp_path: Path) -> None:
    text = pod() + "status: {phase: Sleeping}\n"
    assert error_of(tmp_path, text).startswith(
        "cluster.yaml: document 0 (Pod default/p1): status.phase: Unsupported value: string 'Sleeping'"
    )


# -- Node ------------------------------------------------------------------------


def test_node_quantities(tmp_path: Path) -> None:
    text = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: -2}}\n"
    assert error_of(tmp_path, text) == (
        "cluster.yaml: document 0 (Node n1): status.allocatable.cpu: must be greater than or equal to 0, got '-2'"
    )
    text = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {capacity: {memory: lots}}\n"
    assert error_of(tmp_path, text, "m.yaml") == (
        "m.yaml: document 0 (Node n1): status.capacity.memory: quantities must match the regular expression, got 'lots'"
    )
    text = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {capacity: {pods: 1.5}}\n"
    assert error_of(tmp_path, text, "p.yaml") == (
        "p.yaml: document 0 (Node n1): status.capacity.pods: must be an integer, got '1.5'"
    )


def test_node_taints(tmp_path: Path) -> None:
    text = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nspec: {taints: [{key: a, effect: Sometimes}]}\n"
    assert error_of(tmp_path, text) == (
        "cluster.yaml: document 0 (Node n1): spec.taints[0].effect: "
        "Unsupported value: string 'Sometimes': supported values: 'NoSchedule', 'PreferNoSchedule', 'NoExecute'"
    )
    text = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nspec: {taints: [{key: a}]}\n"
    assert error_of(tmp_path, text, "e.yaml") == "e.yaml: document 0 (Node n1): spec.taints[0].effect: Required value"
    text = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nspec: {taints: [{effect: NoSchedule}]}\n"
    assert error_of(tmp_path, text, "k.yaml") == "k.yaml: document 0 (Node n1): spec.taints[0].key: Required value"
    text = (
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n"
        "spec: {taints: [{key: a, effect: NoSchedule}, {key: a, value: b, effect: NoSchedule}]}\n"
    )
    assert error_of(tmp_path, text, "d.yaml") == (
        "d.yaml: document 0 (Node n1): spec.taints[1]: taints must be unique by key and effect pair"
    )


# -- PodGroup --------------------------------------------------------------------


def podgroup(spec: str) -> str:
    return f"apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {{name: pg, namespace: ns}}\nspec: {spec}\n"


def test_podgroup_fields(tmp_path: Path) -> None:
    assert error_of(tmp_path, podgroup("{minMember: -1}")) == (
        "cluster.yaml: document 0 (PodGroup ns/pg): spec.minMember: must be greater than or equal to 0, got -1"
    )
    assert error_of(tmp_path, podgroup("{minMember: '2'}"), "s.yaml") == (
        "s.yaml: document 0 (PodGroup ns/pg): spec.minMember: must be an integer, got string '2'"
    )
    assert error_of(tmp_path, podgroup("{minTaskMember: {ps: -1}}"), "t.yaml") == (
        "t.yaml: document 0 (PodGroup ns/pg): spec.minTaskMember[ps]: must be greater than or equal to 0, got -1"
    )
    assert error_of(tmp_path, podgroup("{minResources: {cpu: two}}"), "r.yaml") == (
        "r.yaml: document 0 (PodGroup ns/pg): spec.minResources.cpu: quantities must match the regular expression, got 'two'"
    )
    assert error_of(tmp_path, podgroup("{queue: 7}"), "q.yaml") == (
        "q.yaml: document 0 (PodGroup ns/pg): spec.queue: must be a string, got integer 7"
    )


# -- Queue -----------------------------------------------------------------------


def queue(spec: str) -> str:
    return f"apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {{name: q1}}\nspec: {spec}\n"


def test_queue_weight(tmp_path: Path) -> None:
    assert error_of(tmp_path, queue("{weight: -1}")) == (
        "cluster.yaml: document 0 (Queue q1): spec.weight: must be greater than or equal to 1, got -1"
    )
    assert error_of(tmp_path, queue("{weight: 65536}"), "b.yaml") == (
        "b.yaml: document 0 (Queue q1): spec.weight: must be less than or equal to 65535, got 65536"
    )
    [q] = load_manifests([write(tmp_path, queue("{weight: 65535}"), "ok.yaml")])
    assert q.obj["spec"]["weight"] == 65535


def test_queue_resources(tmp_path: Path) -> None:
    assert error_of(tmp_path, queue("{capability: {cpu: -1}}")) == (
        "cluster.yaml: document 0 (Queue q1): spec.capability.cpu: must be greater than or equal to 0, got '-1'"
    )
    assert error_of(tmp_path, queue("{guarantee: {resource: {memory: 1Gx}}}"), "g.yaml") == (
        "g.yaml: document 0 (Queue q1): spec.guarantee.resource.memory: "
        "quantities must match the regular expression, got '1Gx'"
    )
    assert error_of(tmp_path, queue("{deserved: {nvidia.com/gpu: 1.5}}"), "i.yaml") == (
        "i.yaml: document 0 (Queue q1): spec.deserved.nvidia.com/gpu: must be an integer, got '1.5'"
    )


def test_queue_guarantee_deserved_capability(tmp_path: Path) -> None:
    assert error_of(tmp_path, queue("{guarantee: {resource: {cpu: 2}}}")) == (
        "cluster.yaml: document 0 (Queue q1): spec.deserved.cpu: deserved[cpu] must be >= guarantee[cpu]=2"
    )
    assert error_of(tmp_path, queue("{guarantee: {resource: {cpu: 2}}, deserved: {cpu: 1}}"), "l.yaml") == (
        "l.yaml: document 0 (Queue q1): spec.deserved.cpu: deserved[cpu]=1 must be >= guarantee[cpu]=2"
    )
    assert error_of(tmp_path, queue("{deserved: {cpu: '4'}, capability: {cpu: 2000m}}"), "c.yaml") == (
        "c.yaml: document 0 (Queue q1): spec.deserved.cpu: deserved[cpu]=4 must be <= capability[cpu]=2000m"
    )
    ok = queue("{guarantee: {resource: {cpu: 2}}, deserved: {cpu: 2, memory: 1Gi}, capability: {cpu: 2000m}}")
    assert load_manifests([write(tmp_path, ok, "ok.yaml")])


def test_queue_reclaimable_and_state(tmp_path: Path) -> None:
    assert error_of(tmp_path, queue("{reclaimable: 'yes'}")) == (
        "cluster.yaml: document 0 (Queue q1): spec.reclaimable: must be a boolean, got string 'yes'"
    )
    closing = queue("{}") + "status: {state: Closing}\n"
    assert error_of(tmp_path, closing, "s.yaml") == (
        "s.yaml: document 0 (Queue q1): status.state: queue state must be in [Open Closed], got string 'Closing'"
    )
    [q] = load_manifests([write(tmp_path, queue("{reclaimable: false}") + "status: {state: Closed}\n", "ok.yaml")])
    assert q.obj["spec"]["reclaimable"] is False


# -- PriorityClass, ConfigMap, Job ------------------------------------------------


def test_priority_class_value(tmp_path: Path) -> None:
    text = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\n"
    assert error_of(tmp_path, text) == "cluster.yaml: document 0 (PriorityClass high): value: Required value"
    assert error_of(tmp_path, text + "value: 1.5\n", "f.yaml") == (
        "f.yaml: document 0 (PriorityClass high): value: must be an integer, got number 1.5"
    )
    assert error_of(tmp_path, text + "value: 2000000000\n", "big.yaml") == (
        "big.yaml: document 0 (PriorityClass high): value: "
        "maximum allowed value of a user defined priority is 1000000000, got 2000000000"
    )
    system = text.replace("high", "system-high") + "value: 2000000000\n"
    assert load_manifests([write(tmp_path, system, "sys.yaml")])[0].obj["value"] == 2000000000


def test_configmap_data_values_must_be_strings(tmp_path: Path) -> None:
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {retries: 3}\n"
    assert error_of(tmp_path, text) == "cluster.yaml: document 0 (ConfigMap default/cm): data[retries]: must be a string, got integer 3"


def test_job_spec(tmp_path: Path) -> None:
    base = "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: j}\n"
    assert error_of(tmp_path, base) == "cluster.yaml: document 0 (Job default/j): spec: Required value"
    assert error_of(tmp_path, base + "spec: [1]\n", "l.yaml") == (
        "l.yaml: document 0 (Job default/j): spec: must be a mapping, got list"
    )
    assert error_of(tmp_path, base + "spec: {tasks: {name: t}}\n", "t.yaml") == (
        "t.yaml: document 0 (Job default/j): spec.tasks: must be a list, got mapping"
    )


def test_error_from_a_preformatted_line() -> None:
    err = ManifestError("a.yaml: document 0 (PodGroup ns/pg): spec.queue: Queue q9 not found")
    assert str(err) == "a.yaml: document 0 (PodGroup ns/pg): spec.queue: Queue q9 not found"
    assert str(ManifestError("f.yaml: document 1", "bad\nthing", ref="Node n", field="spec")) == (
        "f.yaml: document 1 (Node n): spec: bad thing"
    )


def test_error_attributes(tmp_path: Path) -> None:
    path = write(tmp_path, pod(resources="requests: {cpu: 1x}"))
    with pytest.raises(ManifestError) as info:
        load_manifests([path])
    err = info.value
    assert isinstance(err, ValueError)
    assert (err.source, err.ref, err.field) == (
        f"{path}: document 0",
        "Pod default/p1",
        "spec.containers[0].resources.requests.cpu",
    )
