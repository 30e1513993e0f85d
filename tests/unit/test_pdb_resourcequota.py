"""What the pdb and resourcequota scenarios cannot reach through ``simulate``: the quantity text Go and
the API server write, the plugin's answer for a PodGroup ``enqueue`` never asks about, the cache's
bookkeeping of PodDisruptionBudgets and ResourceQuotas, and the controllers' rules one by one."""

from __future__ import annotations

from fractions import Fraction

import pytest

from vcsched.api.job_info import JobInfo, PodGroup
from vcsched.api.namespace_info import NamespaceInfo, quota_status_from
from vcsched.api.quota import canonical, go_repr, quantity
from vcsched.api.types import Vote
from vcsched.cache import Cache
from vcsched.controllers.disruption import pdb_status
from vcsched.controllers.resourcequota import admit, pod_usage, quota_status
from vcsched.framework.arguments import Arguments
from vcsched.framework.interface import Point
from vcsched.plugins.resourcequota import ResourceQuotaPlugin

from .fakes import FakeSession

NOW = 1_767_229_200.0  # 2026-01-01T01:00:00Z


@pytest.mark.parametrize(("raw", "printed"), [
    # Go's ParseQuantity keeps the text it was given only when it is already canonical
    ("2", "{{2 0} {<nil>} 2 DecimalSI}"),
    ("2000m", "{{2000 -3} {<nil>}  DecimalSI}"),
    ("20G", "{{20 9} {<nil>} 20G DecimalSI}"),
    ("1Gi", "{{1073741824 0} {<nil>} 1Gi BinarySI}"),
    ("8Gi", "{{8589934592 0} {<nil>}  BinarySI}"),
    ("1e3", "{{1 3} {<nil>} 1e3 DecimalExponent}"),
    ("0", "{{0 0} {<nil>} 0 DecimalSI}"),
    (3, "{{3 0} {<nil>} 3 DecimalSI}"),
])
def test_go_prints_a_quantity_as_parse_quantity_builds_it(raw, printed):
    assert go_repr(raw) == printed


@pytest.mark.parametrize(("raw", "text"), [
    ("2000m", "2"), ("1500m", "1500m"), ("0.5", "500m"), ("2000", "2k"), ("1024Mi", "1Gi"), ("1536Mi", "1536Mi"),
    ("1.5Gi", "1536Mi"), ("512", "512"), ("1e3", "1e3"), ("100Ki", "100Ki"), ("0", "0"),
])
def test_the_api_server_writes_quantities_back_in_canonical_form(raw, text):
    assert canonical(quantity(raw)) == text


def test_resourcequota_permits_a_podgroup_without_min_resources():
    """resourcequota_test.go, "MinResources field of pg is not set", asked of the plugin itself (the
    enqueue action never asks about such a PodGroup)."""
    ssn = FakeSession()
    ssn.namespace_info = {"default": NamespaceInfo("default", {"test": quota_status_from(
        {"status": {"hard": {"cpu": "2", "memory": "2G"}}})})}
    ResourceQuotaPlugin(Arguments({}, "resourcequota")).on_session_open(ssn)
    job = JobInfo("default/pg3")
    job.podgroup = PodGroup("pg3", "default", "uid-pg3", 0.0, min_member=2, queue="c1")
    assert ssn.fn(Point.JOB_ENQUEUEABLE, "resourcequota")(job) == Vote.Permit
    job.podgroup.min_resources_list = {"cpu": "20000m", "memory": "20G"}
    assert ssn.fn(Point.JOB_ENQUEUEABLE, "resourcequota")(job) == Vote.Reject


def test_the_cache_keeps_pdbs_and_quotas_by_key():
    cache = Cache()
    pdb = {"metadata": {"name": "p", "namespace": "ns", "resourceVersion": "2"},
           "spec": {"selector": {"matchLabels": {"a": "b"}}}, "status": {"disruptionsAllowed": 1}}
    cache.add_pdb(pdb)
    cache.update_pdb({**pdb, "metadata": {**pdb["metadata"], "resourceVersion": "1"}, "status": {}})  # older
    quota = {"metadata": {"name": "q", "namespace": "ns"}, "status": {"hard": {"cpu": "2"}, "used": {"cpu": "1"}}}
    cache.add_resource_quota(quota)
    snap = cache.snapshot()
    assert [(p.key, p.disruptions_allowed) for p in snap.pdbs] == [("ns/p", 1)]
    assert snap.namespaces["ns"].quota_status["q"].used == {"cpu": quantity("1")}
    cache.update_resource_quota({**quota, "status": {"hard": {"cpu": "2"}, "used": {"cpu": "2"}}})
    assert cache.snapshot().namespaces["ns"].quota_status["q"].used_text == {"cpu": "2"}
    assert snap.namespaces["ns"].quota_status["q"].used_text == {"cpu": "1"}  # the session's copy
    cache.delete_pdb("ns/p")
    cache.delete_resource_quota("ns/q")
    snap = cache.snapshot()
    assert snap.pdbs == () and snap.namespaces["ns"].quota_status == {}


def pod(name: str, *, labels: dict | None = None, phase: str = "Running", ready: str | None = None,
        requests: dict | None = None, **spec) -> dict:
    status: dict = {"phase": phase}
    if ready is not None:
        status["conditions"] = [{"type": "Ready", "status": ready}]
    return {"metadata": {"name": name, "namespace": "default", "labels": labels or {"app": "a"}},
            "spec": {"containers": [{"name": "main", "resources": {"requests": requests or {"cpu": "1"}}}], **spec},
            "status": status}


def test_disruption_controller_counts_ready_pods_and_ignores_deleted_and_disrupted_ones():
    pdb = {"metadata": {"name": "p", "namespace": "default"},
           "spec": {"selector": {"matchLabels": {"app": "a"}}, "minAvailable": 1},
           "status": {"disruptedPods": {"d": "2026-01-01T00:59:30Z", "old": "2026-01-01T00:50:00Z"}}}
    pods = [pod("r"), pod("not-ready", ready="False"), pod("pending", phase="Pending"), pod("d"), pod("old"),
            pod("other", labels={"app": "b"})]
    status = pdb_status(pdb, pods, NOW)
    # expected: the five selected pods; healthy: r and old (d was disrupted 30 s ago)
    assert (status["expectedPods"], status["currentHealthy"], status["disruptionsAllowed"]) == (5, 2, 1)
    assert status["disruptedPods"] == {"d": "2026-01-01T00:59:30Z"}


def test_pod_usage_is_kubes_pod_evaluator():
    p = pod("p", requests={"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "2", "hugepages-2Mi": "4Mi"})
    p["spec"]["containers"][0]["resources"]["limits"] = {"cpu": "2"}
    p["spec"]["overhead"] = {"cpu": "100m", "memory": "10Mi"}
    usage = {k: q.value for k, q in pod_usage(p, NOW).items()}
    assert usage == {
        "count/pods": 1, "pods": 1, "cpu": Fraction(11, 10), "requests.cpu": Fraction(11, 10),
        "limits.cpu": Fraction(21, 10), "memory": 2**30 + 10 * 2**20, "requests.memory": 2**30 + 10 * 2**20,
        "requests.nvidia.com/gpu": 2, "hugepages-2Mi": 4 * 2**20, "requests.hugepages-2Mi": 4 * 2**20}
    assert {k: q.value for k, q in pod_usage(pod("done", phase="Succeeded"), NOW).items()} == {"count/pods": 1}


def test_quota_admission_refuses_and_names_what_it_exceeds():
    quota = {"metadata": {"name": "q"}, "spec": {"hard": {"requests.cpu": "2"}},
             "status": {"hard": {"requests.cpu": "2"}, "used": {"requests.cpu": "1500m"}}}
    refusal, _ = admit([quota], pod("p"), NOW)
    assert refusal == "exceeded quota: q, requested: requests.cpu=1, used: requests.cpu=1500m, limited: requests.cpu=2"
    refusal, charged = admit([quota], pod("p", requests={"cpu": "500m"}), NOW)
    assert refusal is None and charged == {0: {"requests.cpu": "2"}}
    no_cpu = pod("p", requests={"memory": "1Gi"})
    assert admit([quota], no_cpu, NOW)[0] == "failed quota: q: must specify requests.cpu for: main"


def test_quota_controller_tracks_every_hard_resource_it_can_count():
    quota = {"metadata": {"name": "q"}, "spec": {"hard": {"pods": "5", "services": "1", "configmaps": "3",
                                                          "count/foo.example.com": "1"}},
             "status": {"used": {"count/foo.example.com": "1"}}}
    status = quota_status(quota, {"Pod": [pod("a"), pod("b", phase="Failed")], "ConfigMap": [{}, {}]}, NOW)
    assert status["used"] == {"configmaps": "2", "count/foo.example.com": "1", "pods": "1", "services": "0"}
