"""vcsched.sim.pod_manifest: Pods and pod templates as the API server validates them."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from vcsched.sim.manifests import ManifestError, load_manifests

AFFINITY = """
apiVersion: v1
kind: Pod
metadata: {name: p1, labels: {app: web, tier: front}}
spec:
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions:
          - {key: zone, operator: In, values: [a, b]}
          - {key: gpu-count, operator: Gt, values: ["1"]}
          - {key: spot, operator: DoesNotExist}
        - matchFields: [{key: metadata.name, operator: NotIn, values: [node-9]}]
        - null
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 100
        preference: {matchExpressions: [{key: disk, operator: NotIn, values: [hdd]}]}
    podAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - labelSelector: {matchLabels: {app: cache}}
        namespaces: [default, team-a]
        topologyKey: kubernetes.io/hostname
    podAntiAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 1
        podAffinityTerm:
          labelSelector: {matchExpressions: [{key: app, operator: In, values: [web]}]}
          namespaceSelector: {}
          matchLabelKeys: [tier]
          mismatchLabelKeys: [app]
          topologyKey: zone
  topologySpreadConstraints:
  - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, minDomains: 2,
     labelSelector: {matchLabels: {app: web}}, matchLabelKeys: [tier],
     nodeAffinityPolicy: Ignore, nodeTaintsPolicy: Honor}
  - {maxSkew: 3, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway}
  schedulingGates: [{name: example.com/wait}]
  initContainers: [{name: sidecar, image: x, restartPolicy: Always}]
  containers: [{name: c, image: x}]
"""


def load(tmp_path: Path, text: str) -> list:
    path = tmp_path / "cluster.yaml"
    path.write_text(textwrap.dedent(text))
    return load_manifests([str(path)])


def error_of(tmp_path: Path, text: str) -> str:
    with pytest.raises(ManifestError) as info:
        load(tmp_path, text)
    message = str(info.value)
    assert "\n" not in message
    return message.replace(str(tmp_path) + "/", "")


def test_a_pod_using_every_affinity_and_spread_field_loads_unchanged(tmp_path: Path) -> None:
    import yaml

    given = yaml.safe_load(AFFINITY)
    (pod,) = load(tmp_path, AFFINITY)
    # but for what the API server adds on create: matchLabelKeys / mismatchLabelKeys join the selector
    term = given["spec"]["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]
    term["podAffinityTerm"]["labelSelector"].setdefault("matchExpressions", []).extend([
        {"key": "tier", "operator": "In", "values": ["front"]}, {"key": "app", "operator": "NotIn", "values": ["web"]}])
    assert pod.obj["spec"]["affinity"] == given["spec"]["affinity"]
    assert pod.obj["spec"]["topologySpreadConstraints"] == given["spec"]["topologySpreadConstraints"]
    assert pod.obj["spec"]["schedulingGates"] == [{"name": "example.com/wait"}]


def test_the_parsers_take_what_validation_lets_through(tmp_path: Path) -> None:
    from vcsched.api.k8s import parse_pod_terms
    from vcsched.api.pod_spec import build_pod_spec

    (pod,) = load(tmp_path, AFFINITY)
    terms = parse_pod_terms(build_pod_spec(pod.obj), "default")
    assert not terms.affinity_error and not terms.spread_error
    assert len(terms.required_node.required.terms) == 2  # the null term selects nothing and is dropped
    assert [c.min_domains for c in terms.hard_spread] == [2]
    assert terms.preferred_anti_affinity[0].weight == 1


def test_preferred_node_affinity_lets_invalid_label_values_through(tmp_path: Path) -> None:
    # ValidatePreferredSchedulingTerms: a preference may still match the one node that has the value
    text = AFFINITY.replace("values: [hdd]", "values: ['not/a/label value']")
    assert load(tmp_path, text)
    required = AFFINITY.replace("values: [a, b]", "values: ['not/a/label value']")
    assert "nodeSelectorTerms[0].matchExpressions[0].values[0]: Invalid value: 'not/a/label value'" in error_of(
        tmp_path, required)


def test_match_label_keys_in_the_selector_are_refused_only_for_labels_the_pod_has(tmp_path: Path) -> None:
    # the API server merges matchLabelKeys into the selector for the pod's labels, then finds the key twice
    twice = AFFINITY.replace("matchLabelKeys: [tier]\n", "matchLabelKeys: [app]\n").replace(
        "mismatchLabelKeys: [app]", "mismatchLabelKeys: [tier]")
    assert error_of(tmp_path, twice).endswith(
        "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm"
        ".matchLabelKeys[0]: Invalid value: 'app': exists in both matchLabelKeys and labelSelector")
    assert load(tmp_path, twice.replace("labels: {app: web, tier: front}", "labels: {tier: front}"))


def test_null_items_are_zero_values(tmp_path: Path) -> None:
    # a null list item decodes to the zero value: an empty node selector term is fine, an empty pod
    # affinity term lacks its topologyKey
    text = AFFINITY.replace("- labelSelector: {matchLabels: {app: cache}}", "- null\n      - labelSelector: {}")
    assert error_of(tmp_path, text).endswith(
        "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: "
        "Required value: can not be empty")


def test_job_templates_are_checked_with_their_labels(tmp_path: Path) -> None:
    job = """
    apiVersion: batch.volcano.sh/v1alpha1
    kind: Job
    metadata: {name: j}
    spec:
      tasks:
      - name: t
        replicas: 1
        template:
          metadata: {labels: {app: web}}
          spec:
            topologySpreadConstraints:
            - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, minDomains: 0}
            containers: [{name: c, image: x}]
    """
    assert error_of(tmp_path, job) == (
        "cluster.yaml: document 0 (Job default/j): spec.tasks[0].template.spec.topologySpreadConstraints[0]"
        ".minDomains: Invalid value: 0: must be greater than zero")
    job = job.replace("minDomains: 0", "minDomains: 1")
    (loaded,) = load(tmp_path, job)
    template = loaded.obj["spec"]["tasks"][0]["template"]
    assert template["metadata"] == {"labels": {"app": "web"}}  # the checks ran on a copy


def test_pod_status_conditions_and_container_statuses(tmp_path: Path) -> None:
    text = AFFINITY + textwrap.dedent("""
    status:
      phase: Running
      conditions: [{type: Ready, status: "True", lastTransitionTime: 2026-02-03T04:05:06Z}]
      containerStatuses:
      - name: c
        restartCount: 2
        state: {terminated: {exitCode: 137, reason: OOMKilled, finishedAt: "2026-02-03T04:05:06+02:00"}}
    """)
    (pod,) = load(tmp_path, text)
    status = pod.obj["status"]
    assert status["conditions"][0]["lastTransitionTime"] == "2026-02-03T04:05:06Z"
    assert status["containerStatuses"][0]["state"]["terminated"]["finishedAt"] == "2026-02-03T02:05:06Z"

