"""The vGPU bench's decisions, pinned: every placement, device annotation and pending reason.

The vGPU hot path (vgpu.py's probe and device order cache, the shared node search, the
node-order scores) is tuned for speed; this digest was taken from the straightforward code
before that tuning and must not move.  If a deliberate behaviour change moves it, check the
diff of ``decisions`` against the old code before updating the digest.
"""

import argparse
import hashlib
import json

import pytest

from vcsched.bench import GPU_SCHEDULER_CONF
from vcsched.conf import parse_conf
from vcsched.framework.effects import Bind, PodCondition

from .bench_cluster import run_cycles

# requests: memory share, exclusive cards (cores 100), core-less pods, and memory the cards cannot hold
MIX = "2048:10,4096:30,8192:0,12000:50,40960:100,0:0,50000:10"


def decisions(policy: str) -> list:
    args = argparse.Namespace(nodes=16, node_cpu="32", node_memory="128Gi", node_pods=110, pods=400, gang_size=1,
                              cpu="250m,500m,1,2", memory="512Mi,1Gi,2Gi,4Gi", seed=1, gpus_per_node=4,
                              gpu_model="NVIDIA-NVIDIA A100-PCIE-40GB", gpu_memory=40960, gpu_split=10,
                              gpu_request_mix=MIX)
    conf = parse_conf(GPU_SCHEDULER_CONF.replace("SchedulePolicy: binpack", f"SchedulePolicy: {policy}"))
    out = []
    for e in run_cycles(args, conf):
        if isinstance(e, Bind):
            out.append(["bind", e.name, e.node, sorted(e.annotations.items())])
        elif isinstance(e, PodCondition):
            out.append(["pending", e.name, e.reason, e.message])
    return out


@pytest.mark.parametrize("policy, binds, digest", [
    ("binpack", 131, "a73fbc5ce18880880a6115abebbe6ebb0d8a528dd070543c5e1fbaafc5205a84"),
    ("spread", 173, "445ddfe1c075e3defc6ffd597ef07bf85a08279c068c1d97de55b48f24f619e6"),
])
def test_vgpu_bench_decisions_are_unchanged(policy, binds, digest):
    out = decisions(policy)
    assert sum(1 for o in out if o[0] == "bind") == binds
    assert any(o[0] == "pending" and "hami-vgpuDeviceSharing" in o[3] for o in out)  # device failures are pinned too
    assert hashlib.sha256(json.dumps(out).encode()).hexdigest() == digest
