"""deviceshare NodeLockEnable rules (spec/devices.md §4.5, E-15; Volcano plugins/util/nodelock/nodelock.go)."""

import pytest

from vcsched.plugins.deviceshare.gpushare import GpuShareFamily, GpuShareRequest
from vcsched.plugins.deviceshare.ascend310p import MindClusterFamily
from vcsched.plugins.deviceshare.config import NvidiaConfig
from vcsched.plugins.deviceshare.nodelock import (
    GPUSHARE_LOCK, HAMI_ASCEND_LOCK, VGPU_LOCK, allocate_error, lock_error, lock_name, lock_value,
    locks_before_selection, parse_lock_time,
)
from vcsched.plugins.deviceshare.vgpu import VGPUFamily

NOW = 1767229200.0  # 2026-01-01T01:00:00Z


def test_absent_lock_can_be_taken():
    assert lock_error("n1", None, NOW) is None


@pytest.mark.parametrize("value", ["2026-01-01T00:58:00Z", "2026-01-01T08:56:00+08:00", "2026-01-01T01:00:00Z",
                                   "2026-01-01T00:55:00Z", "2026-01-01T02:00:00Z"])
def test_fresh_lock_fails(value):
    """Younger than 5 minutes (exactly 5 is not older; a future time is fresh too)."""
    assert lock_error("n1", value, NOW) == "node n1 has been locked within 5 minutes"


@pytest.mark.parametrize("value", ["2026-01-01T00:54:59Z", "2025-12-31T00:00:00Z", "2026-01-01T08:54:00.5+08:00"])
def test_stale_lock_is_replaced(value):
    assert lock_error("n1", value, NOW) is None


@pytest.mark.parametrize("value", ["", "yesterday", "2026-01-01 00:58:00", "2026-01-01T00:58:00", "1767229200",
                                   "2026-01-01T00:58:00Z,default,p1", "2026-13-01T00:58:00Z"])
def test_unparsable_lock_fails_with_the_parse_error(value):
    """HAMi's own ``time,namespace,name`` is not RFC 3339 for Volcano either: the node stays locked."""
    err = lock_error("n1", value, NOW)
    assert err is not None and err.startswith(f'parsing time "{value}" as "2006-01-02T15:04:05Z07:00"')


def test_parse_and_write_rfc3339():
    assert parse_lock_time("2026-01-01T01:00:00Z") == NOW
    assert parse_lock_time("2026-01-01T09:00:00+08:00") == NOW
    assert lock_value(NOW + 0.9) == "2026-01-01T01:00:00Z"
    assert parse_lock_time(lock_value(NOW)) == NOW


def test_lock_names_per_kind():
    share = GpuShareFamily(sharing=True, number=False)
    assert lock_name(share, GpuShareRequest(memory=1000, number=0)) == GPUSHARE_LOCK
    assert lock_name(GpuShareFamily(sharing=False, number=True), GpuShareRequest(memory=0, number=1)) is None
    assert lock_name(VGPUFamily(NvidiaConfig()), object()) == VGPU_LOCK
    assert lock_name(MindClusterFamily(), object()) is None

    class HamiAscend:  # registered under its commonWord
        key = "Ascend910B3"

    assert lock_name(HamiAscend(), object()) == HAMI_ASCEND_LOCK
    assert locks_before_selection(GPUSHARE_LOCK) and locks_before_selection(HAMI_ASCEND_LOCK)
    assert not locks_before_selection(VGPU_LOCK)


def test_allocate_error_wording_per_kind():
    err = "node n1 has been locked within 5 minutes"
    assert allocate_error(VGPU_LOCK, "n1", "p", err) == \
        "node n1 locked for p hamivgpu lockname node n1 has been locked within 5 minutes"
    assert allocate_error(GPUSHARE_LOCK, "n1", "p", err) == \
        "node n1 locked for lockname gpushare node n1 has been locked within 5 minutes"
    assert allocate_error(HAMI_ASCEND_LOCK, "n1", "p", err) == \
        "node n1 locked for p hami vnpu. lockname node n1 has been locked within 5 minutes"


def _vgpu_node(name, lock=None):
    ann = {"volcano.sh/node-vgpu-register": f"GPU-{name},10,40960,NVIDIA-A100,true,hami-core:"}
    if lock is not None:
        ann["hamivgpu"] = lock
    alloc = {"cpu": "16", "memory": "64Gi", "pods": "110", "volcano.sh/vgpu-number": "10",
             "volcano.sh/vgpu-memory": "40960", "volcano.sh/vgpu-cores": "100"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "annotations": ann},
            "status": {"allocatable": alloc, "capacity": alloc}}


def _vgpu_pod(name):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": name,
                         "annotations": {"scheduling.k8s.io/group-name": f"pg-{name}"}},
            "spec": {"schedulerName": "volcano", "containers": [
                {"name": "c", "image": "x", "resources": {
                    "limits": {"volcano.sh/vgpu-number": "1", "volcano.sh/vgpu-memory": "1000"},
                    "requests": {"volcano.sh/vgpu-number": "1", "volcano.sh/vgpu-memory": "1000"}}}]},
            "status": {"phase": "Pending"}}


def test_session_emits_the_lock_right_before_its_bind_and_locks_a_node_once():
    from vcsched.cache import Cache
    from vcsched.conf import parse_conf
    from vcsched.framework.effects import Bind, NodeLock
    from vcsched.plugins.deviceshare import device_builder
    from vcsched.scheduler import Scheduler

    conf = parse_conf("""
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: gang
  - name: predicates
  - name: proportion
  - name: deviceshare
    arguments: {deviceshare.VGPUEnable: true, deviceshare.NodeLockEnable: true}
""")
    cache = Cache(("volcano",), devices=device_builder(conf, {}))
    cache.add_queue({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "default"},
                     "spec": {"weight": 1}, "status": {"state": "Open"}})
    cache.add_node(_vgpu_node("a", lock="2026-01-01T00:59:00Z"))  # fresh at NOW: skipped
    cache.add_node(_vgpu_node("b"))
    for name in ("p1", "p2"):
        cache.add_podgroup({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                            "metadata": {"name": f"pg-{name}", "namespace": "default", "uid": f"pg-{name}"},
                            "spec": {"minMember": 1, "queue": "default"}, "status": {"phase": "Inqueue"}})
        cache.add_pod(_vgpu_pod(name))
    effects = Scheduler(cache, conf).run_once(now=NOW, uid="s1")
    binds = [i for i, e in enumerate(effects) if isinstance(e, Bind)]
    assert len(binds) == 1 and effects[binds[0]].node == "b"  # one locking pod per node per session
    lock = effects[binds[0] - 1]
    assert lock == NodeLock("b", "hamivgpu", "2026-01-01T01:00:00Z")
    assert sum(isinstance(e, NodeLock) for e in effects) == 1
