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


# -- spec.affinity and spec.topologySpreadConstraints: what the predicates parse is refused first ---------

_AA = "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution"
_PA = "spec.affinity.podAffinity"
_NA = "spec.affinity.nodeAffinity"
_NSR = f"{_NA}.requiredDuringSchedulingIgnoredDuringExecution"
_SEL = f"{_PA}.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector"
_TSC = "spec.topologySpreadConstraints"


def _with_spec(text: str) -> str:
    """A node and one pod whose spec carries ``text`` (YAML at the spec's indentation)."""
    return node("n1") + pod("p", spec_extra=text)


def _pod_affinity(term: str) -> str:
    return _with_spec(f"  affinity: {{podAffinity: {{requiredDuringSchedulingIgnoredDuringExecution: [{term}]}}}}")


def _selector(expression: str) -> str:
    return _pod_affinity(f"{{topologyKey: zone, labelSelector: {{matchExpressions: [{expression}]}}}}")


def _node_term(term: str) -> str:
    return _with_spec("  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: "
                      f"{{nodeSelectorTerms: [{term}]}}}}}}")


def _spread(constraint: str) -> str:
    return _with_spec(f"  topologySpreadConstraints: [{constraint}]")


def _expect_one_line(simulate, manifests, expected):
    code, err = simulate(manifests)
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"document 1 (Pod default/p): {expected}" in err


@pytest.mark.parametrize("affinity, expected", [
    # the four shapes the fuzzer's preempt seed crashed the predicates with
    ("{podAntiAffinity: 9223372036854775808}",
     "spec.affinity.podAntiAffinity: must be a mapping, got integer 9223372036854775808"),
    ("{podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: -1.0e-09}}", f"{_AA}: must be a list, got number"),
    ("{podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {a: []}}}", f"{_AA}: must be a list, got mapping"),
    ("{podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{labelSelector: {matchLabels: abc}, "
     "topologyKey: zone}]}}", f"{_AA}[0].labelSelector.matchLabels: must be a mapping, got string 'abc'"),
    ("{podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: ['-5']}}",
     f"{_AA}[0]: must be a mapping, got string '-5'"),
    ("5", "spec.affinity: must be a mapping, got integer 5"),
    ("{nodeAffinity: {1: a, b: c}}", f"{_NA}: keys must be strings, got integer 1"),
    ("{nodeAffinity: {preferredDuringSchedulingIgnoredDuringExecution: {weight: 1}}}",
     f"{_NA}.preferredDuringSchedulingIgnoredDuringExecution: must be a list, got mapping"),
])
def test_affinity_structure_is_typed(simulate, affinity, expected):
    _expect_one_line(simulate, _with_spec(f"  affinity: {affinity}"), expected)


@pytest.mark.parametrize("term, expected", [
    ("{labelSelector: {matchLabels: {app: x}}}",
     f"{_PA}.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Required value: can not be empty"),
    ("{topologyKey: 'a/b/c'}", f"{_PA}.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: "
                               "Invalid value: 'a/b/c': a qualified name must consist of"),
    ("{topologyKey: zone, namespaces: [Team_A]}",
     f"{_PA}.requiredDuringSchedulingIgnoredDuringExecution[0].namespaces[0]: a lowercase RFC 1123 label"),
    ("{topologyKey: zone, namespaces: team-a}",
     f"{_PA}.requiredDuringSchedulingIgnoredDuringExecution[0].namespaces: must be a list, got string 'team-a'"),
    ("{topologyKey: zone, matchLabelKeys: [app]}", f"{_PA}.requiredDuringSchedulingIgnoredDuringExecution[0]"
                                                   ".matchLabelKeys: Forbidden: must not be specified when "
                                                   "labelSelector is not set"),
    ("{topologyKey: zone, labelSelector: {}, matchLabelKeys: [app], mismatchLabelKeys: [app]}",
     f"{_PA}.requiredDuringSchedulingIgnoredDuringExecution[0].matchLabelKeys[0]: Invalid value: 'app': "
     "exists in both matchLabelKeys and mismatchLabelKeys"),
    ("{topologyKey: zone, labelSelector: {}, mismatchLabelKeys: ['-x']}",
     f"{_PA}.requiredDuringSchedulingIgnoredDuringExecution[0].mismatchLabelKeys[0]: Invalid value: '-x'"),
])
def test_pod_affinity_terms(simulate, term, expected):
    _expect_one_line(simulate, _pod_affinity(term), expected)


@pytest.mark.parametrize("weighted, expected", [
    ("{podAffinityTerm: {topologyKey: zone}}", "weight: Invalid value: 0: must be in the range 1-100"),
    ("{weight: 101, podAffinityTerm: {topologyKey: zone}}", "weight: Invalid value: 101: must be in the range 1-100"),
    ("{weight: '5', podAffinityTerm: {topologyKey: zone}}", "weight: must be an integer, got string '5'"),
    ("{weight: 5}", "podAffinityTerm.topologyKey: Required value: can not be empty"),
])
def test_preferred_pod_affinity_weights(simulate, weighted, expected):
    manifests = _with_spec(f"  affinity: {{podAntiAffinity: {{preferredDuringSchedulingIgnoredDuringExecution: "
                           f"[{weighted}]}}}}")
    _expect_one_line(simulate, manifests,
                     f"spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].{expected}")


@pytest.mark.parametrize("expression, expected", [
    ("{key: app, operator: Gt, values: ['1']}", "operator: Invalid value: 'Gt': not a valid selector operator"),
    ("{key: app}", "operator: Invalid value: '': not a valid selector operator"),
    ("{key: app, operator: In}", "values: Required value: must be specified when `operator` is 'In' or 'NotIn'"),
    ("{key: app, operator: Exists, values: [a]}",
     "values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"),
    ("{key: 'bad key', operator: Exists}", "key: Invalid value: 'bad key': name part must consist of"),
    ("{key: app, operator: In, values: ['a b']}", "values[0]: Invalid value: 'a b': a valid label must be"),
    ("{key: app, operator: In, values: [1]}", "values[0]: must be a string, got integer 1"),
    ("null", "operator: Invalid value: '': not a valid selector operator"),
])
def test_label_selectors(simulate, expression, expected):
    _expect_one_line(simulate, _selector(expression), f"{_SEL}.matchExpressions[0].{expected}")


def test_label_selector_match_labels_are_labels(simulate):
    manifests = _pod_affinity("{topologyKey: zone, namespaceSelector: {matchLabels: {team: 'a/b'}}}")
    _expect_one_line(simulate, manifests, f"{_PA}.requiredDuringSchedulingIgnoredDuringExecution[0]"
                                          ".namespaceSelector.matchLabels[team]: Invalid value: 'a/b'")


@pytest.mark.parametrize("term, expected", [
    ("{matchExpressions: [{key: zone, operator: Gt, values: ['1', '2']}]}", "nodeSelectorTerms[0].matchExpressions[0]"
     ".values: Required value: must be specified single value when `operator` is 'Lt' or 'Gt'"),
    ("{matchExpressions: [{key: zone, operator: Has, values: [a]}]}",
     "nodeSelectorTerms[0].matchExpressions[0].operator: Invalid value: 'Has': not a valid selector operator"),
    ("{matchExpressions: [{key: zone, operator: In, values: ['a/b']}]}",
     "nodeSelectorTerms[0].matchExpressions[0].values[0]: Invalid value: 'a/b'"),
    ("{matchFields: [{key: metadata.labels, operator: In, values: [n1]}]}",
     "nodeSelectorTerms[0].matchFields[0].key: Invalid value: 'metadata.labels': not a valid field selector key"),
    ("{matchFields: [{key: metadata.name, operator: In, values: [n1, n2]}]}", "nodeSelectorTerms[0].matchFields[0]"
     ".values: Required value: must be only one value when `operator` is 'In' or 'NotIn' for node field selector"),
    ("{matchFields: [{key: metadata.name, operator: Exists}]}",
     "nodeSelectorTerms[0].matchFields[0].operator: Invalid value: 'Exists': not a valid selector operator"),
    ("{matchFields: [{key: metadata.name, operator: In, values: [N_1]}]}",
     "nodeSelectorTerms[0].matchFields[0].values[0]: a lowercase RFC 1123 subdomain"),
    ("{matchFields: 7}", "nodeSelectorTerms[0].matchFields: must be a list, got integer 7"),
])
def test_node_affinity_required_terms(simulate, term, expected):
    _expect_one_line(simulate, _node_term(term), f"{_NSR}.{expected}")


@pytest.mark.parametrize("node_affinity, expected", [
    ("{requiredDuringSchedulingIgnoredDuringExecution: {}}",
     f"{_NSR}.nodeSelectorTerms: Required value: must have at least one node selector term"),
    ("{requiredDuringSchedulingIgnoredDuringExecution: []}", f"{_NSR}: must be a mapping, got list"),
    ("{preferredDuringSchedulingIgnoredDuringExecution: [{preference: {}}]}",
     f"{_NA}.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 0: must be in the range 1-100"),
    ("{preferredDuringSchedulingIgnoredDuringExecution: [{weight: 1, preference: {matchExpressions: "
     "[{key: zone, operator: Lt}]}}]}", f"{_NA}.preferredDuringSchedulingIgnoredDuringExecution[0].preference"
                                        ".matchExpressions[0].values: Required value"),
])
def test_node_affinity(simulate, node_affinity, expected):
    _expect_one_line(simulate, _with_spec(f"  affinity: {{nodeAffinity: {node_affinity}}}"), expected)


@pytest.mark.parametrize("constraint, expected", [
    ("{maxSkew: 0, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}",
     "[0].maxSkew: Invalid value: 0: must be greater than zero"),
    ("{topologyKey: zone, whenUnsatisfiable: DoNotSchedule}", "[0].maxSkew: Invalid value: 0: must be greater than zero"),
    ("{maxSkew: abc, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}", "[0].maxSkew: must be an integer"),
    ("{maxSkew: 1, whenUnsatisfiable: DoNotSchedule}", "[0].topologyKey: Required value: can not be empty"),
    ("{maxSkew: 1, topologyKey: zone}", "[0].whenUnsatisfiable: Unsupported value: string ''"),
    ("{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: Never}", "[0].whenUnsatisfiable: Unsupported value"),
    ("{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}, "
     "{maxSkew: 2, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}",
     "[1].{topologyKey, whenUnsatisfiable}: Duplicate value: '{zone, DoNotSchedule}'"),
    ("{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway, minDomains: 2}",
     "[0].minDomains: Invalid value: 2: can only use minDomains if whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway"),
    ("{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, minDomains: 0}",
     "[0].minDomains: Invalid value: 0: must be greater than zero"),
    ("{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, nodeAffinityPolicy: honor}",
     "[0].nodeAffinityPolicy: Unsupported value: string 'honor': supported values: 'Honor', 'Ignore'"),
    ("{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, nodeTaintsPolicy: 1}",
     "[0].nodeTaintsPolicy: Unsupported value: integer 1"),
    ("{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, matchLabelKeys: [app]}",
     "[0].matchLabelKeys: Forbidden: must not be specified when labelSelector is not set"),
    ("{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: x}}, "
     "matchLabelKeys: [app]}", "[0].matchLabelKeys[0]: Invalid value: 'app': exists in both matchLabelKeys and labelSelector"),
    ("{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchExpressions: "
     "[{key: app, operator: Bad}]}}", "[0].labelSelector.matchExpressions[0].operator: Invalid value: 'Bad'"),
    ("7", "[0]: must be a mapping, got integer 7"),
])
def test_topology_spread_constraints(simulate, constraint, expected):
    _expect_one_line(simulate, _spread(constraint), f"{_TSC}{expected}")


def test_a_job_template_names_the_task(simulate):
    job = """
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: j}
spec:
  minAvailable: 1
  schedulerName: volcano
  tasks:
  - name: t
    replicas: 1
    template:
      spec:
        affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{labelSelector: {}}]}}
        containers: [{name: c, image: x}]
"""
    code, err = simulate(node("n1") + job)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert ("document 1 (Job default/j): spec.tasks[0].template.spec.affinity.podAntiAffinity."
            "requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Required value: can not be empty") in err


# -- the other pod fields the scheduler, the simulator and the job controller read ----------------------


@pytest.mark.parametrize("spec, expected", [
    ("  schedulingGates: [1]", "spec.schedulingGates[0]: must be a mapping, got integer 1"),
    ("  schedulingGates: gate", "spec.schedulingGates: must be a list, got string 'gate'"),
    ("  schedulingGates: [{name: a}, {name: a}]", "spec.schedulingGates[1]: Duplicate value: 'a'"),
    ("  schedulingGates: [{name: 'x/y/z'}]", "spec.schedulingGates[0]: Invalid value: 'x/y/z'"),
    ("  initContainers: [{name: i, image: x, restartPolicy: Never}]",
     "spec.initContainers[0].restartPolicy: Unsupported value: string 'Never': supported values: 'Always'"),
    ("  initContainers: [{name: i, image: x, restartPolicy: [1]}]",
     "spec.initContainers[0].restartPolicy: Unsupported value: list"),
    ("  nodeSelector: {'bad key': a}", "spec.nodeSelector: Invalid value: 'bad key'"),
    ("  nodeSelector: {zone: 'a b'}", "spec.nodeSelector[zone]: Invalid value: 'a b'"),
    ("status: {conditions: [1]}", "status.conditions[0]: must be a mapping, got integer 1"),
    ("status: {conditions: [{status: 'True'}]}", "status.conditions[0].type: Required value"),
    ("status: {conditions: [{type: Ready, lastTransitionTime: yesterday}]}",
     "status.conditions[0].lastTransitionTime: must be an RFC 3339 date-time"),
    ("status: {containerStatuses: [1]}", "status.containerStatuses[0]: must be a mapping, got integer 1"),
    ("status: {containerStatuses: [{name: c, restartCount: abc}]}",
     "status.containerStatuses[0].restartCount: must be an integer, got string 'abc'"),
    ("status: {containerStatuses: [{name: c, state: {terminated: {exitCode: x}}}]}",
     "status.containerStatuses[0].state.terminated.exitCode: must be an integer, got string 'x'"),
])
def test_other_pod_fields_are_typed(simulate, spec, expected):
    _expect_one_line(simulate, _with_spec(spec), expected)


# -- node, PodGroup, Queue and Job status fields the cache, the session and the controllers read --------

_JOB = """
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: j}
spec:
  minAvailable: 1
  schedulerName: volcano
  tasks: [{name: t, replicas: 1, template: {spec: {containers: [{name: c, image: x}]}}}]
"""


@pytest.mark.parametrize("manifests, expected", [
    (node("n1").replace("status:\n", "status:\n  images: [1]\n"),
     "document 0 (Node n1): status.images[0]: must be a mapping, got integer 1"),
    (node("n1").replace("status:\n", "status:\n  images: [{names: 5}]\n"),
     "document 0 (Node n1): status.images[0].names: must be a list, got integer 5"),
    (node("n1").replace("status:\n", "status:\n  images: [{names: [a], sizeBytes: big}]\n"),
     "document 0 (Node n1): status.images[0].sizeBytes: must be an integer, got string 'big'"),
    (node("n1") + podgroup("pg", 1, extra="status: {running: abc}"),
     "(PodGroup default/pg): status.running: must be an integer, got string 'abc'"),
    (node("n1") + podgroup("pg", 1, extra="status: {conditions: [1]}"),
     "(PodGroup default/pg): status.conditions[0]: must be a mapping, got integer 1"),
    (node("n1") + podgroup("pg", 1, extra="status: {conditions: [{type: Unschedulable, lastTransitionTime: noon}]}"),
     "(PodGroup default/pg): status.conditions[0].lastTransitionTime: must be an RFC 3339 date-time"),
    (node("n1") + "---\napiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q}\n"
                  "status: {allocated: 5}\n", "(Queue q): status.allocated: must be a mapping, got integer 5"),
    (node("n1") + "---\napiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q}\n"
                  "status: {allocated: {cpu: lots}}\n", "(Queue q): status.allocated.cpu: "),
    (node("n1") + _JOB + "status: 5\n", "(Job default/j): status: must be a mapping, got integer 5"),
    (node("n1") + _JOB + "status: {state: 5}\n", "(Job default/j): status.state: must be a mapping, got integer 5"),
    (node("n1") + _JOB + "status: {version: abc}\n", "(Job default/j): status.version: must be an integer"),
    (node("n1") + _JOB + "status: {retryCount: 1.5}\n", "(Job default/j): status.retryCount: must be an integer"),
    (node("n1") + _JOB + "status: {running: abc}\n", "(Job default/j): status.running: must be an integer"),
    (node("n1") + _JOB + "status: {conditions: [1]}\n", "(Job default/j): status.conditions[0]: must be a mapping"),
    (node("n1") + _JOB + "status: {taskStatusCount: {t: {phase: {Succeeded: x}}}}\n",
     "(Job default/j): status.taskStatusCount[t].phase[Succeeded]: must be an integer, got string 'x'"),
])
def test_status_fields_read_back_are_typed(simulate, manifests, expected):
    code, err = simulate(manifests)
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert expected in err


def test_status_times_are_given_back_as_the_api_server_would(simulate):
    """An unquoted YAML timestamp in a PodGroup condition once reached the JSON output as a datetime."""
    pg = podgroup("pg", 3, extra="status:\n  phase: Pending\n  conditions:\n"
                                 "  - {type: Unschedulable, status: 'True', lastTransitionTime: 2026-01-01T00:00:00Z}")
    code, out = simulate(node("n1") + pg)
    assert code == 0, out
    assert out["podgroups"]["default/pg"]["conditions"][0]["lastTransitionTime"] == "2026-01-01T00:00:00Z"


# -- YAML that JSON cannot carry, or that would make a walk over the document explode --------------------


def _laughs(levels: int) -> str:
    """A pod whose spec carries ``levels`` rows of ten aliases to the row before: 10**levels nodes expanded."""
    rows = ["  x0: &a0 [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"]
    rows += [f"  x{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, levels)]
    return "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: x}]\n" + "\n".join(rows)


@pytest.mark.parametrize("manifests, expected", [
    ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: x}]\n"
     "  affinity: {nodeAffinity: {x: &loop [*loop]}}",
     "document 0: spec.affinity.nodeAffinity.x[0]: YAML error: an alias used inside the node it names"),
    ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {foo: " + "[" * 120 + "]" * 120 + "}",
     "document 0: spec.foo[0][0]"),
    ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {foo: " + "[" * 5000 + "]" * 5000 + "}",
     "document 0: YAML error: nested more than 100 levels deep"),
    (_laughs(9), "document 0: YAML error: document contains excessive aliasing"),
])
def test_yaml_json_cannot_carry(simulate, manifests, expected):
    code, err = simulate(manifests)
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert expected in err


def test_aliases_within_reason_are_fine(simulate):
    code, out = simulate(node("n1") + "---\n" + _laughs(3).replace("metadata: {name: p}",
                                                                    "metadata: {name: p, namespace: default}")
                         .replace("spec:\n", "spec:\n  schedulerName: volcano\n"))
    assert code == 0, out
    assert out["pods"]["default/p"]["node"] == "n1"


def test_simulate_without_manifests_or_a_cluster_exits_2(capsys):
    from vcsched.cli import main

    assert main(["simulate"]) == 2
    err = capsys.readouterr().err
    assert err == "vcsched simulate: -f: give manifests (-f FILE, or - for stdin), or --kubeconfig for a live cluster\n"


_PARTITIONED = _JOB.replace("tasks: [{name: t, replicas: 1,", "tasks: [{name: t, replicas: 4, partitionPolicy: PP,")


@pytest.mark.parametrize("manifests, expected", [
    # found by fuzzing: a Job's spec.networkTopology that is not a mapping was an internal error
    (node("n1") + _JOB + "  networkTopology: true\n",
     "(Job default/j): spec.networkTopology: must be a mapping, got boolean True"),
    (node("n1") + _JOB + "  networkTopology: {mode: loose}\n",
     "(Job default/j): spec.networkTopology.mode: Unsupported value: string 'loose'"),
    (node("n1") + _JOB + "  networkTopology: {highestTierAllowed: -1}\n",
     "(Job default/j): spec.networkTopology.highestTierAllowed: must be greater than or equal to 0"),
    (node("n1") + _PARTITIONED.replace("PP", "5"),
     "(Job default/j): spec.tasks[0].partitionPolicy: must be a mapping, got integer 5"),
    (node("n1") + _PARTITIONED.replace("PP", "{totalPartitions: 2}"),
     "(Job default/j): spec.tasks[0].partitionPolicy.partitionSize: Required value"),
    (node("n1") + _PARTITIONED.replace("PP", "{totalPartitions: 0, partitionSize: 2}"),
     "(Job default/j): spec.tasks[0].partitionPolicy.totalPartitions: must be greater than or equal to 1"),
    (node("n1") + _PARTITIONED.replace("PP", "{totalPartitions: 2, partitionSize: two}"),
     "(Job default/j): spec.tasks[0].partitionPolicy.partitionSize: must be an integer, got string 'two'"),
    (node("n1") + _PARTITIONED.replace("PP", "{totalPartitions: 2, partitionSize: 2, minPartitions: -1}"),
     "(Job default/j): spec.tasks[0].partitionPolicy.minPartitions: must be greater than or equal to 0"),
    (node("n1") + _PARTITIONED.replace("PP", "{totalPartitions: 2, partitionSize: 2, networkTopology: [hard]}"),
     "(Job default/j): spec.tasks[0].partitionPolicy.networkTopology: must be a mapping, got list"),
])
def test_job_network_topology_and_partitions_are_typed(simulate, manifests, expected):
    code, err = simulate(manifests)
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert expected in err


def test_a_job_asking_for_more_pods_than_a_cluster_holds_is_refused(simulate):
    """A Job's replicas are int32s the API server takes; 2,000,000,000 pods made one by one ran out of memory
    (or time) before this.  The controllers refuse a Job of more than 150,000 pods (vcsched's own rule:
    Kubernetes' tested limit for a whole cluster); simulate as the webhook's refusals, exit 2."""
    big = _JOB.replace("replicas: 1,", "replicas: 100000,")
    code, err = simulate(node("n1") + big.replace("tasks: [{name: t,", "tasks: [{name: u, replicas: 50001, template: "
                                                  "{spec: {containers: [{name: c, image: x}]}}}, {name: t,"))
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert ("document 1 (Job default/j): spec.tasks[1].replicas: the job asks for more than 150,000 pods, the most a "
            "Kubernetes cluster is tested to hold (150,001 with task t)") in err


def test_jobs_asking_for_more_pods_than_simulate_holds_are_refused(simulate):
    """Each under the limit of one Job, seven Jobs of 150,000 pods pass the 1,000,000 simulate holds in all."""
    jobs = "".join(_JOB.replace("replicas: 1,", "replicas: 150000,").replace("name: j}", f"name: j{i}}}")
                   for i in range(7))
    code, err = simulate(node("n1") + jobs)
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert ("document 7 (Job default/j6): spec.tasks[0].replicas: the Jobs ask for more than 1,000,000 pods in all, "
            "the most simulate holds in memory (1,050,000 with this task's)") in err
