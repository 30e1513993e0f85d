"""charts/vcsched rendered by Helm's own engine (helm-python-sdk, Helm v4's Go SDK
in a bundled library: no helm binary, no cluster, no network).

What is pinned here: the kinds and names every install creates, the
`vcsched run` command line the runtime expects, the ConfigMap's conf (Volcano's
shipped default verbatim, deviceshare added as Volcano's guides add it), the
ClusterRole equal to SCHEDULER_ACCESS ∪ CONTROLLER_ACCESS (SCHEDULER_ACCESS alone with
controllers.enabled=false), and Volcano's CRD identities.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import helm_python as helm
import pytest
import yaml

from vcsched.conf import parse_conf
from vcsched.kube.access import CONTROLLER_ACCESS, SCHEDULER_ACCESS

ROOT = Path(__file__).resolve().parents[2]
CHART_DIR = ROOT / "charts" / "vcsched"
CONF_KEY = "volcano-scheduler.conf"

# The Job CRD alone is 230 kB of YAML: parse with libyaml when PyYAML has it.
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

CLUSTER_SCOPED = {"ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition"}

# Volcano's API identities (spec/jobs.md §1): CRD name → (group, version, kind,
# plural, shortNames, scope, has a status subresource).
VOLCANO_CRDS = {
    "podgroups.scheduling.volcano.sh": (
        "scheduling.volcano.sh", "v1beta1", "PodGroup", "podgroups", ["pg", "podgroup-v1beta1"], "Namespaced", False),
    "queues.scheduling.volcano.sh": (
        "scheduling.volcano.sh", "v1beta1", "Queue", "queues", ["q", "queue-v1beta1"], "Cluster", True),
    "jobs.batch.volcano.sh": (
        "batch.volcano.sh", "v1alpha1", "Job", "jobs", ["vcjob", "vj"], "Namespaced", True),
    "commands.bus.volcano.sh": (
        "bus.volcano.sh", "v1alpha1", "Command", "commands", None, "Namespaced", False),
    "hypernodes.topology.volcano.sh": (
        "topology.volcano.sh", "v1alpha1", "HyperNode", "hypernodes", ["hn"], "Cluster", True),
    "numatopologies.nodeinfo.volcano.sh": (
        "nodeinfo.volcano.sh", "v1alpha1", "Numatopology", "numatopologies", ["numatopo"], "Cluster", False),
}


@pytest.fixture(scope="module")
def chart():
    with helm.Chart.load(CHART_DIR) as loaded:
        yield loaded


class Rendered:
    """One render: every document parsed, indexed by (kind, name)."""

    def __init__(self, manifests: dict[str, str]) -> None:
        self.text = manifests
        self.docs: list[dict[str, Any]] = []
        for template, text in manifests.items():
            if not template.endswith((".yaml", ".yml")):
                continue  # NOTES.txt: printed, not applied (Helm installs only YAML templates)
            for doc in yaml.load_all(text, Loader=LOADER):  # every document must parse
                if doc is None:
                    continue
                assert isinstance(doc, dict), f"{template}: a document that is not a mapping"
                assert doc.get("apiVersion") and doc.get("kind"), f"{template}: no apiVersion/kind"
                self.docs.append(doc)
        self.by_kind_name = {(d["kind"], d["metadata"]["name"]): d for d in self.docs}
        assert len(self.by_kind_name) == len(self.docs), "two objects with one kind and name"

    def kinds_names(self) -> set[tuple[str, str]]:
        return set(self.by_kind_name)

    def one(self, kind: str) -> dict[str, Any]:
        found = [d for d in self.docs if d["kind"] == kind]
        assert len(found) == 1, f"expected one {kind}, got {len(found)}"
        return found[0]

    def conf_text(self) -> str:
        return self.one("ConfigMap")["data"][CONF_KEY]


def render(chart, values: dict[str, Any] | None = None, *, name: str = "vcsched",
           namespace: str = "volcano-system") -> Rendered:
    return Rendered(chart.render(values, name=name, namespace=namespace))


@pytest.fixture(scope="module")
def default(chart) -> Rendered:
    return render(chart)


def container_args(deployment: dict[str, Any]) -> list[str]:
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["command"] == ["vcsched"]
    return container["args"]


def flags(args: list[str]) -> dict[str, str | None]:
    """`run --a=1 --b` → {"a": "1", "b": None}; each flag at most once."""
    assert args[0] == "run"
    out: dict[str, str | None] = {}
    for arg in args[1:]:
        assert arg.startswith("--"), arg
        key, sep, value = arg[2:].partition("=")
        assert key not in out, f"--{key} given twice"
        out[key] = value if sep else None
    return out


def access_triples(rules) -> set[tuple[str, str, str]]:
    return {(a.group, a.resource, verb) for a in rules for verb in a.verbs}


def role_triples(role: dict[str, Any]) -> set[tuple[str, str, str]]:
    out = set()
    for rule in role["rules"]:
        assert set(rule) == {"apiGroups", "resources", "verbs"}, rule  # no resourceNames, no wildcards
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                for verb in rule["verbs"]:
                    assert "*" not in (group, resource, verb), rule
                    out.add((group, resource, verb))
    return out


# --- the chart as a whole ---------------------------------------------------


def test_chart_copy_of_the_conf_is_the_repository_conf():
    assert (CHART_DIR / "files" / CONF_KEY).read_bytes() == (ROOT / "conf" / CONF_KEY).read_bytes()


def test_lint_is_clean():
    report = helm.lint(CHART_DIR, strict=True)
    assert report["errors"] == []
    assert [m for m in report["messages"] if m["severity"] >= 2] == []


def test_default_install_creates_these_objects(default):
    assert default.kinds_names() == {
        ("ServiceAccount", "vcsched"),
        ("ClusterRole", "vcsched"),
        ("ClusterRoleBinding", "vcsched"),
        ("ConfigMap", "volcano-scheduler-configmap"),
        ("Deployment", "vcsched"),
        ("Service", "vcsched-metrics"),
        *(("CustomResourceDefinition", name) for name in VOLCANO_CRDS),
    }
    for doc in default.docs:
        if doc["kind"] in CLUSTER_SCOPED:
            assert "namespace" not in doc["metadata"], doc["metadata"]["name"]
        else:
            assert doc["metadata"]["namespace"] == "volcano-system", doc["metadata"]["name"]


def test_default_conf_is_volcanos_shipped_conf_verbatim(default):
    text = default.conf_text()
    assert text == (ROOT / "conf" / CONF_KEY).read_text()
    conf = parse_conf(text)
    assert conf.actions == ["enqueue", "allocate", "backfill"]
    assert [p.name for tier in conf.tiers for p in tier if p.name == "deviceshare"] == []


def test_deployment_runs_vcsched_with_leader_election(default):
    deployment = default.one("Deployment")
    assert deployment["spec"]["replicas"] == 2
    assert flags(container_args(deployment)) == {
        "scheduler-name": "volcano",
        "configmap-name": "volcano-scheduler-configmap",
        "configmap-namespace": "volcano-system",
        "schedule-period": "1s",
        "listen": ":8080",
        "leader-elect": None,
        "lease-name": "vcsched",
        "lease-namespace": "volcano-system",
        "controller-configmap-name": "volcano-controller-configmap",
        "controller-configmap-namespace": "volcano-system",
    }
    pod = deployment["spec"]["template"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    (container,) = pod["spec"]["containers"]
    assert container["image"] == "vcsched:0.1.0"
    assert container["imagePullPolicy"] == "IfNotPresent"
    assert container["resources"] == {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"memory": "1Gi"}}
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        get = container[probe]["httpGet"]
        assert get["path"] == path
        assert ports[get["port"]] == 8080
    assert pod["spec"]["terminationGracePeriodSeconds"] == 30
    assert pod["spec"]["serviceAccountName"] == default.one("ServiceAccount")["metadata"]["name"]


def test_image_and_resources_come_from_values(chart):
    out = render(chart, {
        "image": {"repository": "registry.example/vcsched", "tag": "1.2.3", "pullPolicy": "Always"},
        "resources": {"limits": {"cpu": "2", "memory": "4Gi"}},
    })
    (container,) = out.one("Deployment")["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "registry.example/vcsched:1.2.3"
    assert container["imagePullPolicy"] == "Always"
    # Helm merges maps with the defaults: the default requests stay.
    assert container["resources"] == {
        "limits": {"cpu": "2", "memory": "4Gi"}, "requests": {"cpu": "100m", "memory": "256Mi"},
    }


def test_metrics_service_selects_the_scheduler_pods(default):
    service = default.one("Service")
    assert service["metadata"]["annotations"] == {
        "prometheus.io/path": "/metrics",
        "prometheus.io/port": "8080",
        "prometheus.io/scrape": "true",
    }
    (port,) = service["spec"]["ports"]
    assert (port["name"], port["port"], port["targetPort"]) == ("metrics", 8080, "http")
    pod_labels = default.one("Deployment")["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()


# --- RBAC ---------------------------------------------------------------------


@pytest.mark.parametrize("controllers", [True, False])
def test_cluster_role_grants_exactly_scheduler_access(chart, controllers):
    out = render(chart, {"controllers": {"enabled": controllers}})
    # one ClusterRole: SCHEDULER_ACCESS ∪ CONTROLLER_ACCESS, or the scheduler's alone without the controllers
    want = SCHEDULER_ACCESS + (CONTROLLER_ACCESS if controllers else ())
    assert role_triples(out.one("ClusterRole")) == access_triples(want)
    components = flags(container_args(out.one("Deployment"))).get("components")
    assert components == (None if controllers else "scheduler")


def test_cluster_role_states_the_reason_for_each_rule(default):
    text = default.text["vcsched/templates/clusterrole.yaml"]
    for access in SCHEDULER_ACCESS + CONTROLLER_ACCESS:
        assert f"# {access.why}\n" in text, access


def test_notes_name_the_conf_metrics_and_lease(chart):
    notes = render(chart, name="prod", namespace="gpu-sched").text["vcsched/templates/NOTES.txt"]
    assert "kubectl -n gpu-sched edit configmap volcano-scheduler-configmap" in notes
    assert "svc/prod-vcsched-metrics 8080" in notes
    assert "get lease vcsched" in notes


def test_binding_gives_the_role_to_the_service_account(default):
    binding = default.one("ClusterRoleBinding")
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
        "name": default.one("ClusterRole")["metadata"]["name"],
    }
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": default.one("ServiceAccount")["metadata"]["name"],
         "namespace": "volcano-system"},
    ]


# --- CRDs ---------------------------------------------------------------------


def test_crds_have_volcanos_identities(default):
    for name, (group, version, kind, plural, short, scope, status) in VOLCANO_CRDS.items():
        crd = default.by_kind_name["CustomResourceDefinition", name]
        assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
        spec = crd["spec"]
        assert spec["group"] == group
        assert spec["names"]["kind"] == kind
        assert spec["names"]["plural"] == plural
        assert spec["names"].get("shortNames") == short
        assert spec["scope"] == scope
        (v,) = spec["versions"]
        assert (v["name"], v["served"], v["storage"]) == (version, True, True)
        assert ("status" in (v.get("subresources") or {})) is status, name
        # helm uninstall keeps them, and with them every PodGroup, Queue and Job.
        assert crd["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"


def test_crd_fields_the_scheduler_and_controllers_read(default):
    def props(name: str, *path: str) -> dict[str, Any]:
        node = default.by_kind_name["CustomResourceDefinition", name]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        for key in path:
            node = node["properties"][key]
        return node["properties"]

    pg = props("podgroups.scheduling.volcano.sh", "spec")
    assert {"minMember", "minTaskMember", "queue", "priorityClassName", "minResources"} <= pg.keys()
    assert pg["queue"]["default"] == "default"
    assert {"phase", "conditions", "running", "succeeded", "failed"} <= props(
        "podgroups.scheduling.volcano.sh", "status").keys()
    queue = props("queues.scheduling.volcano.sh", "spec")
    assert {"weight", "capability", "reclaimable", "guarantee", "deserved", "parent", "priority"} <= queue.keys()
    assert {"state", "allocated"} <= props("queues.scheduling.volcano.sh", "status").keys()
    job = props("jobs.batch.volcano.sh", "spec")
    assert {"minAvailable", "tasks", "queue", "maxRetry", "policies", "plugins", "schedulerName"} <= job.keys()
    assert {"action", "target", "reason", "message"} <= props("commands.bus.volcano.sh").keys()


def test_rendered_crds_are_the_vendored_files_unchanged(default):
    for path in sorted((CHART_DIR / "crd").glob("*.yaml")):
        text = path.read_text()
        assert text.startswith("# Vendored unmodified"), path.name
        vendored = yaml.load(text, Loader=LOADER)
        assert default.by_kind_name["CustomResourceDefinition", vendored["metadata"]["name"]] == vendored


def test_crds_can_be_skipped(chart, default):
    out = render(chart, {"crds": {"install": False}})
    assert out.kinds_names() == {
        kn for kn in default.kinds_names() if kn[0] != "CustomResourceDefinition"
    }


# --- non-default values -----------------------------------------------------


def test_non_default_install(chart):
    out = render(chart, {
        "deviceshare": {"vgpu": True, "schedulePolicy": "spread", "scheduleWeight": 5},
        "crds": {"install": False},
        "serviceMonitor": {"enabled": True, "labels": {"release": "prom"}},
        "leaderElection": {"leaseName": "vcsched-gpu"},
        "scheduler": {"schedulerName": "vcsched-gpu"},
    }, name="prod", namespace="gpu-sched")
    assert out.kinds_names() == {
        ("ServiceAccount", "prod-vcsched"),
        ("ClusterRole", "prod-vcsched"),
        ("ClusterRoleBinding", "prod-vcsched"),
        ("ConfigMap", "volcano-scheduler-configmap"),
        ("Deployment", "prod-vcsched"),
        ("Service", "prod-vcsched-metrics"),
        ("ServiceMonitor", "prod-vcsched"),
    }
    for doc in out.docs:
        if doc["kind"] not in CLUSTER_SCOPED:
            assert doc["metadata"]["namespace"] == "gpu-sched", doc["metadata"]["name"]
    args = flags(container_args(out.one("Deployment")))
    assert args["configmap-namespace"] == args["lease-namespace"] == "gpu-sched"
    assert (args["lease-name"], args["scheduler-name"]) == ("vcsched-gpu", "vcsched-gpu")
    assert out.one("ClusterRoleBinding")["subjects"][0]["namespace"] == "gpu-sched"

    monitor = out.one("ServiceMonitor")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["metadata"]["labels"]["release"] == "prom"
    service = out.one("Service")
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": ["gpu-sched"]}
    assert [(e["port"], e["path"]) for e in monitor["spec"]["endpoints"]] == [("metrics", "/metrics")]

    conf = parse_conf(out.conf_text())
    names = [[p.name for p in tier] for tier in conf.tiers]
    assert names == [
        ["priority", "gang", "conformance"],
        ["overcommit", "drf", "deviceshare", "predicates", "proportion", "nodeorder", "binpack"],
    ]
    deviceshare = conf.tiers[1][2]
    assert deviceshare.arguments.values == {
        "deviceshare.VGPUEnable": True,
        "deviceshare.SchedulePolicy": "spread",
        "deviceshare.ScheduleWeight": 5,
    }
    # Everything else in the shipped conf survives the rewrite.
    shipped = parse_conf((ROOT / "conf" / CONF_KEY).read_text())
    assert conf.actions == shipped.actions
    assert [[(p.name, p.flags) for p in t] for t in shipped.tiers] == [
        [(p.name, p.flags) for p in t if p.name != "deviceshare"] for t in conf.tiers
    ]


@pytest.mark.parametrize(("values", "arguments"), [
    ({"vgpu": True}, {"deviceshare.VGPUEnable": True}),
    ({"mig": True}, {"deviceshare.VGPUEnable": True}),
    ({"gpushare": True}, {"deviceshare.GPUSharingEnable": True}),
    ({"gpuNumber": True}, {"deviceshare.GPUNumberEnable": True}),
    ({"vnpu": True, "knownGeometriesCMName": "hami-scheduler-device", "knownGeometriesCMNamespace": "kube-system"},
     {"deviceshare.AscendHAMiVNPUEnable": True, "deviceshare.KnownGeometriesCMName": "hami-scheduler-device",
      "deviceshare.KnownGeometriesCMNamespace": "kube-system"}),
    ({"mindClusterVnpu": True, "nodeLock": True},
     {"deviceshare.AscendMindClusterVNPUEnable": True, "deviceshare.NodeLockEnable": True}),
    ({"vgpu": True, "vnpu": True, "schedulePolicy": "binpack"},
     {"deviceshare.VGPUEnable": True, "deviceshare.AscendHAMiVNPUEnable": True,
      "deviceshare.SchedulePolicy": "binpack"}),
])
def test_deviceshare_modes_set_the_plugin_arguments(chart, values, arguments):
    conf = parse_conf(render(chart, {"deviceshare": values}).conf_text())
    found = [p for tier in conf.tiers for p in tier if p.name == "deviceshare"]
    assert [p.arguments.values for p in found] == [arguments]


def test_deviceshare_is_added_to_an_override_conf_too(chart):
    override = (
        'actions: "enqueue, allocate"\n'
        "tiers:\n"
        "- plugins:\n  - name: gang\n"
        "- plugins:\n  - name: predicates\n    arguments:\n      predicate.CacheEnable: true\n  - name: nodeorder\n"
        "configurations:\n- name: allocate\n  arguments:\n    predicateErrorCacheEnable: false\n"
    )
    conf = parse_conf(render(chart, {
        "schedulerConfig": {"override": override}, "deviceshare": {"gpushare": True},
    }).conf_text())
    assert [[p.name for p in t] for t in conf.tiers] == [["gang"], ["deviceshare", "predicates", "nodeorder"]]
    assert conf.tiers[1][1].arguments.values == {"predicate.CacheEnable": True}
    assert conf.action_arguments("allocate").values == {"predicateErrorCacheEnable": False}


def test_override_conf_is_used_verbatim(chart):
    override = "# ours\nactions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: gang\n"
    assert render(chart, {"schedulerConfig": {"override": override}}).conf_text() == override


@pytest.mark.parametrize(("values", "message"), [
    ({"deviceshare": {"gpushare": True, "gpuNumber": True}}, "gpushare and gpuNumber cannot both be on"),
    ({"deviceshare": {"vgpu": True, "gpushare": True}}, "cannot be combined with gpushare or gpuNumber"),
    ({"deviceshare": {"mig": True, "gpuNumber": True}}, "cannot be combined with gpushare or gpuNumber"),
    ({"deviceshare": {"schedulePolicy": "binpack"}}, "no device mode"),
    ({"deviceshare": {"vgpu": True, "schedulePolicy": "pack"}}, "/deviceshare/schedulePolicy"),
    ({"deviceshare": {"vgpu": True, "scheduleWeight": "10"}}, "/deviceshare/scheduleWeight"),
    ({"deviceshare": {"vpgu": True}}, "'vpgu' not allowed"),
    ({"deviceshare": {"vgpu": True}, "schedulerConfig": {"override": "actions: allocate\ntiers:\n- plugins:\n  - name: gang\n"}},
     "needs the predicates plugin"),
    ({"deviceshare": {"vgpu": True}, "schedulerConfig": {
        "override": "tiers:\n- plugins:\n  - name: deviceshare\n  - name: predicates\n"}},
     "tiers[0] already lists deviceshare"),
    ({"schedulerConfig": {"override": "tiers: [\n"}}, "schedulerConfig.override: not valid YAML"),
    ({"leaderElection": {"enabled": False}}, "replicas > 1 needs leaderElection.enabled"),
])
def test_bad_values_are_refused_with_a_message(chart, values, message):
    with pytest.raises(helm.HelmError) as err:
        chart.render(values, name="vcsched", namespace="volcano-system")
    assert message in str(err.value)


def test_controller_configmap_is_made_from_values_and_named_to_the_controllers(chart):
    """controllers.config: Volcano's controller ConfigMap (key volcano-controller.conf), which HyperNode
    discovery reads; without it none is made; with the controllers off neither it nor the flags."""
    from vcsched.controllers.hypernode_discovery import CONFIG_KEY, load_config, parse_label_config

    text = ("networkTopologyDiscovery:\n  - source: label\n    enabled: true\n    config:\n"
            "      networkTopologyTypes:\n        a2:\n          - nodeLabel: volcano.sh/tor\n"
            "          - nodeLabel: kubernetes.io/hostname\n")
    out = render(chart, {"controllers": {"config": text, "configMapName": "hn-conf"}}, namespace="gpu-sched")
    cm = out.by_kind_name[("ConfigMap", "hn-conf")]
    assert cm["metadata"]["namespace"] == "gpu-sched"
    cfg = load_config(cm["data"])
    assert cm["data"][CONFIG_KEY].strip() == text.strip()
    assert dict(parse_label_config(cfg.source("label").config).types) == {"a2": ("volcano.sh/tor",)}
    args = flags(container_args(out.one("Deployment")))
    assert (args["controller-configmap-name"], args["controller-configmap-namespace"]) == ("hn-conf", "gpu-sched")
    off = render(chart, {"controllers": {"enabled": False, "config": text}})
    assert ("ConfigMap", "volcano-controller-configmap") not in off.kinds_names()
    assert not {"controller-configmap-name", "controller-configmap-namespace"} & \
        flags(container_args(off.one("Deployment"))).keys()


def test_single_replica_without_leader_election(chart):
    out = render(chart, {"replicas": 1, "leaderElection": {"enabled": False}})
    args = flags(container_args(out.one("Deployment")))
    assert not {"leader-elect", "lease-name", "lease-namespace"} & args.keys()
    assert out.one("Deployment")["spec"]["replicas"] == 1


# -- the image and the command line: chart, Dockerfile and CLI cannot drift ---------------------------

def parse_run(argv: list[str]):
    """``argv`` (after the program name) through the real ``vcsched run`` argparse parser and the
    checks ``run_command`` makes before it starts; an unknown flag or a bad value fails the test."""
    import argparse
    import contextlib
    import io

    from vcsched.kube.command import add_parser, checked_flags

    parser = argparse.ArgumentParser(prog="vcsched")
    add_parser(parser.add_subparsers(dest="command", required=True))
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            args = parser.parse_args(argv)
    except SystemExit:
        raise AssertionError(f"vcsched {' '.join(argv)}: {err.getvalue().strip()}") from None
    assert args.command == "run"
    checked_flags(args)
    return args


def dockerfile_entrypoint() -> list[str]:
    import json

    lines = [ln for ln in (ROOT / "Dockerfile").read_text().splitlines() if ln.startswith("ENTRYPOINT ")]
    assert len(lines) == 1
    return json.loads(lines[0].removeprefix("ENTRYPOINT "))


def test_dockerfile_builds_the_image_the_chart_runs(default):
    import tomllib

    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    (container,) = default.one("Deployment")["spec"]["template"]["spec"]["containers"]
    # the default image is the Dockerfile's build as the README says to tag it
    assert container["image"] == f"vcsched:{version}"
    assert f"docker build -t vcsched:{version} ." in (ROOT / "README.md").read_text()
    assert f"docker build -t vcsched:{version} ." in (ROOT / "Dockerfile").read_text()
    # the image's ENTRYPOINT and the chart's command line start the same program
    assert dockerfile_entrypoint() == ["vcsched", "run"]
    assert (container["command"] + container["args"])[:2] == ["vcsched", "run"]
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "FROM python:3.11-slim" in dockerfile and "USER 65532" in dockerfile
    assert "[test]" not in dockerfile


@pytest.mark.parametrize("values", [
    {},
    {"leaderElection": {"enabled": False}, "replicas": 1, "scheduler": {"schedulePeriod": "500ms", "port": 9090}},
    {"scheduler": {"extraArgs": ["--scheduler-conf=/etc/vcsched/conf", "--default-queue=batch"]}},
])
def test_chart_args_are_flags_vcsched_run_accepts(chart, values):
    (container,) = render(chart, values).one("Deployment")["spec"]["template"]["spec"]["containers"]
    argv = container["command"][1:] + container["args"]
    args = parse_run(argv)
    assert args.scheduler_name == "volcano"
    assert args.leader_elect is (values.get("leaderElection", {}).get("enabled", True))


def test_a_flag_vcsched_run_does_not_know_fails_the_check(chart):
    out = render(chart, {"scheduler": {"extraArgs": ["--no-such-flag=1"]}})
    (container,) = out.one("Deployment")["spec"]["template"]["spec"]["containers"]
    with pytest.raises(AssertionError, match="unrecognized arguments: --no-such-flag=1"):
        parse_run(container["command"][1:] + container["args"])
