"""Interconnect-aware placement of multi-card pods (issue 24) through ``vcsched simulate``.

Nodes publish which cards talk fast (HAMi's ``hami.io/node-nvidia-score``, Ascend HCCS layouts from
the chip model or NetworkID, vcsched's ``vcsched.io/device-topology``); pods ask with HAMi's
``hami.io/gpu-scheduler-policy: topology-aware`` (preferred) or ``vcsched.io/device-topology-policy:
required|preferred``.  Volcano's placement is unchanged for pods that do not ask.
"""

import json

import yaml

from vcsched.cli import main
from vcsched.plugins.deviceshare import topology
from vcsched.plugins.deviceshare.topology import Choice, choose, parse_hami_scores, placement_score

from .test_deviceshare import A100, gpu_node, vgpu_pod
from .test_deviceshare_ascend import DEVICE_CONFIG, ann, ask, b3, npu_node, npu_pod

POLICY = "vcsched.io/device-topology-policy"
HAMI_POLICY = "hami.io/gpu-scheduler-policy"
REQUIRED = {POLICY: "required"}
PREFERRED = {POLICY: "preferred"}


def topo_conf(**arguments) -> str:
    """Device scoring alone decides between nodes (no nodeorder): what the tests look at."""
    args = {"deviceshare.ScheduleWeight": 10, **arguments}
    return f"""
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: deviceshare
    arguments: {json.dumps(args)}
"""


def npu_conf(**arguments) -> str:
    return topo_conf(**{"deviceshare.AscendHAMiVNPUEnable": True, **arguments})


def gpu_conf(**arguments) -> str:
    return topo_conf(**{"deviceshare.VGPUEnable": True, **arguments})


def with_annotations(manifest: str, extra: dict) -> str:
    """A node manifest with more annotations."""
    head, rest = manifest.split("  annotations: ", 1)
    line, tail = rest.split("\n", 1)
    merged = {**yaml.safe_load(line), **extra}
    return f"{head}  annotations: {json.dumps(merged)}\n{tail}"


def b3_server(name: str, n: int = 16) -> str:
    """An Ascend 910B3 server as HAMi's ascend-device-plugin registers it, no NetworkID: n NPUs."""
    return npu_node(name, "Ascend910B3", [b3(i) for i in range(n)])


def holding(name: str, node: str, cards: list[int]) -> str:
    """A running pod holding whole 910B3 NPUs, as the scheduler wrote it."""
    value = "".join(f"910b3-{i},Ascend910B3,65536,0:" for i in cards) + ";"
    return npu_pod(name, ask("Ascend910B3", len(cards)), node_name=node,
                   annotations={"hami.io/Ascend910B3-devices-allocated": value, "hami.io/bind-phase": "success"})


def npus(out, pod: str) -> list[str]:
    value = ann(out, pod)["hami.io/Ascend910B3-devices-allocated"]
    return [item.split(",")[0] for item in value.rstrip(";").split(":") if item]


# 6 + 2: two NPUs of the first HCCS domain (0-7) and six of the second (8-15) are taken
SIX_PLUS_TWO = (DEVICE_CONFIG + b3_server("a") + holding("old-1", "a", [0, 1])
                + holding("old-2", "a", [8, 9, 10, 11, 12, 13]))


def test_six_plus_two_required_stays_pending_with_the_domains_named(simulate):
    code, out = simulate(SIX_PLUS_TWO + npu_pod("train", ask("Ascend910B3", 8), annotations=REQUIRED),
                         conf=npu_conf())
    assert code == 0
    p = out["pods"]["default/train"]
    assert p["node"] is None
    assert "device topology required: no domain has 8 free cards" in p["reason"]
    assert "d0 6 of 8 free (910b3-2,910b3-3,910b3-4,910b3-5,910b3-6,910b3-7)" in p["reason"]
    assert "d1 2 of 8 free (910b3-14,910b3-15)" in p["reason"]
    # the diagnosis (sim/diagnosis.py's device family) lists the cards beside the reason
    cards = [e for e in p["diagnosis"]["nodes"]["a"] if e["reason"] == "devices"][0]["cards"]
    assert len(cards) == 16


def test_six_plus_two_preferred_is_placed_split_and_a_whole_domain_elsewhere_wins(simulate):
    code, out = simulate(SIX_PLUS_TWO + npu_pod("train", ask("Ascend910B3", 8), annotations=PREFERRED),
                         conf=npu_conf())
    assert out["pods"]["default/train"]["node"] == "a"
    assert sorted(npus(out, "train"), key=lambda s: int(s.split("-")[1])) == [
        f"910b3-{i}" for i in (2, 3, 4, 5, 6, 7, 14, 15)]
    # an idle 8-NPU 910B3 server (one HCCS domain) next to it: the whole domain scores higher
    cluster = SIX_PLUS_TWO + npu_node("b", "Ascend910B3", [b3(i) for i in range(8)]) + npu_pod(
        "train", ask("Ascend910B3", 8), annotations=PREFERRED)
    code, out = simulate(cluster, conf=npu_conf())
    assert out["pods"]["default/train"]["node"] == "b"
    # listed first, node a still loses: it is the score, not the order
    cluster = (DEVICE_CONFIG + npu_node("b", "Ascend910B3", [b3(i) for i in range(8)]) + SIX_PLUS_TWO[len(DEVICE_CONFIG):]
               + npu_pod("train", ask("Ascend910B3", 8), annotations=PREFERRED))
    code, out = simulate(cluster, conf=npu_conf())
    assert out["pods"]["default/train"]["node"] == "b"


def test_split_scores_lower_than_a_whole_domain():
    """placement_score: the 6 + 2 split against the same request inside one domain."""
    topo = topology.ascend_layout("Ascend910B3", list(range(16)), None)
    free = [2, 3, 4, 5, 6, 7, 14, 15]
    split = choose(topo, free, 8, policy=topology.PREFERRED)
    assert split.domain == -1 and split.weakest == topology.ACROSS
    assert choose(topo, free, 8, policy=topology.REQUIRED) is None
    whole = choose(topo, list(range(8, 16)), 8, policy=topology.REQUIRED)
    assert whole == Choice(tuple(range(8, 16)), 1, topology.IN_DOMAIN)
    assert placement_score(topo, split, free, 8, 0) < topology.NO_TOPOLOGY_SCORE < placement_score(
        topo, whole, list(range(8, 16)), 8, 0)


def test_hccs_from_network_id_and_the_tightest_domain(simulate):
    """NetworkID (what HAMi's plugin publishes) makes the domains; a 2-NPU pod takes the domain it
    fills best, where Volcano's HAMi code takes the largest group (spec §6.8.3)."""
    devices = [b3(i, net=0 if i < 4 else 1) for i in range(8)]
    cluster = (DEVICE_CONFIG + npu_node("n", "Ascend910B3", devices) + holding("old", "n", [0, 1])
               + npu_pod("p", ask("Ascend910B3", 2), annotations=PREFERRED))
    code, out = simulate(cluster, conf=npu_conf())
    assert npus(out, "p") == ["910b3-2", "910b3-3"]
    cluster = cluster.replace(json.dumps(PREFERRED), "{}")
    code, out = simulate(cluster, conf=npu_conf())
    assert set(npus(out, "p")) <= {f"910b3-{i}" for i in range(4, 8)}  # Volcano's: the larger group


# -- NVIDIA: HAMi's pair scores ------------------------------------------------------------------------


def hami_scores(uuids: list[str], score) -> str:
    """``hami.io/node-nvidia-score`` as HAMi's device plugin marshals ``ListDeviceScore``."""
    return json.dumps([{"uuid": a, "score": {b: score(a, b) for b in uuids if b != a}} for a in uuids],
                      separators=(",", ":"))


def dgx(name: str, n: int = 8, group: int = 4, used: str = "") -> str:
    """n A100s, NVLink inside groups of ``group`` (4 links: 400), PCIe across (cross socket: 10)."""
    uuids = [f"{name}-GPU-{i}" for i in range(n)]
    score = hami_scores(uuids, lambda a, b: 400 if uuids.index(a) // group == uuids.index(b) // group else 10)
    node = gpu_node(name, [(u, 10, 40960, A100) for u in uuids])
    return with_annotations(node, {"hami.io/node-nvidia-score": score})


def whole(n: int) -> dict:
    return {"volcano.sh/vgpu-number": n, "volcano.sh/vgpu-cores": 100}


def gpus(out, pod: str) -> list[str]:
    value = out["pods"][f"default/{pod}"]["annotations"].get("volcano.sh/vgpu-ids-new", "")
    return [item.split(",")[0] for item in value.split(":") if item]


def running(name: str, node: str, uuids: list[str]) -> str:
    value = "".join(f"{u},NVIDIA,40960,100:" for u in uuids)
    return vgpu_pod(name, whole(len(uuids)), node_name=node,
                    annotations={"volcano.sh/vgpu-ids-new": value, "volcano.sh/bind-phase": "success"})


def test_nvlink_pairs_over_pcie_pairs_with_hamis_annotation(simulate):
    """HAMi's annotations as HAMi writes them: the pair scores (TestGetNodeDevices_PairScores' shape) and
    ``hami.io/gpu-scheduler-policy: topology-aware`` on the pod (a comma list, util.PolicyContains)."""
    uuids = ["GPU-a", "GPU-b", "GPU-c", "GPU-d"]
    nv = {frozenset(("GPU-a", "GPU-c")), frozenset(("GPU-b", "GPU-d"))}
    score = hami_scores(uuids, lambda a, b: 200 if frozenset((a, b)) in nv else 20)
    node = with_annotations(gpu_node("n", [(u, 10, 40960, A100) for u in uuids]), {"hami.io/node-nvidia-score": score})
    # Volcano's legacy order (index descending) takes GPU-d and GPU-c: a PCIe pair
    code, out = simulate(node + vgpu_pod("plain", whole(2)), conf=gpu_conf())
    assert gpus(out, "plain") == ["GPU-d", "GPU-c"]
    for policy in ("topology-aware", "binpack,topology-aware"):
        code, out = simulate(node + vgpu_pod("p", whole(2), annotations={HAMI_POLICY: policy}), conf=gpu_conf())
        assert frozenset(gpus(out, "p")) in nv, policy
    # across nodes: a node with an NVLink pair free beats one with only a PCIe pair free
    cluster = (dgx("x", 4, 2) + running("busy-x", "x", ["x-GPU-0", "x-GPU-2"])  # x: GPU-1 and GPU-3, PCIe
               + dgx("y", 4, 2) + running("busy-y", "y", ["y-GPU-0", "y-GPU-1"])  # y: GPU-2 and GPU-3, NVLink
               + vgpu_pod("p", whole(2), annotations={HAMI_POLICY: "topology-aware"}))
    code, out = simulate(cluster, conf=gpu_conf(**{"deviceshare.SchedulePolicy": "binpack"}))
    assert out["pods"]["default/p"]["node"] == "y" and gpus(out, "p") == ["y-GPU-2", "y-GPU-3"]


def test_a_small_pod_does_not_break_a_domain_a_big_one_waits_for(simulate):
    """Two 8-GPU nodes as 2 x 4 NVLink groups; a 4-GPU pod waits (its CPU fits nowhere yet).  A 2-GPU pod
    goes where it fills a domain without taking one the 4-GPU pod could use: node n2's half-used group."""
    cluster = (dgx("n1") + dgx("n2") + running("old", "n2", ["n2-GPU-4", "n2-GPU-5"])
               + vgpu_pod("big", {**whole(4), "cpu": "64"}) + vgpu_pod("small", whole(2)))
    code, out = simulate(cluster, conf=gpu_conf(**{"deviceshare.TopologyPolicy": "preferred"}))
    assert out["pods"]["default/big"]["node"] is None
    assert out["pods"]["default/small"]["node"] == "n2"
    assert sorted(gpus(out, "small")) == ["n2-GPU-6", "n2-GPU-7"]
    # n1 keeps both domains whole: the big pod fits either
    n1 = {d["id"]: d["pods"] for d in out["nodes"]["n1"]["devices"]}
    assert not any(n1.values())
    # a 3-GPU pod waits: one GPU goes to the idle 4-GPU group (3 stay for it), not to the group with
    # exactly 3 free, the tighter fit, that it would break
    three = (dgx("m1", 4, 4) + running("old", "m1", ["m1-GPU-0"]) + dgx("m2", 4, 4)
             + vgpu_pod("big", {**whole(3), "cpu": "64"}) + vgpu_pod("small", whole(1)))
    code, out = simulate(three, conf=gpu_conf(**{"deviceshare.TopologyPolicy": "preferred"}))
    assert out["pods"]["default/small"]["node"] == "m2"
    code, out = simulate(three.replace('"cpu": "64"', '"cpu": "1"'),
                         conf=gpu_conf(**{"deviceshare.TopologyPolicy": "preferred"}))
    assert out["pods"]["default/big"]["node"] is not None
    # Volcano's binpack without topology: every empty card scores the same, n1 (first) takes it
    code, out = simulate(cluster, conf=gpu_conf(**{"deviceshare.SchedulePolicy": "binpack"}))
    assert out["pods"]["default/small"]["node"] == "n1" or sorted(gpus(out, "small")) != ["n2-GPU-6", "n2-GPU-7"]


def test_required_vgpu_pending_and_gpushare_number_by_vcsched_annotation(simulate):
    # vGPU: 4 cards free but 2 + 2 over the groups: required stays pending, naming the domains
    cluster = dgx("n", 8, 4) + running("old", "n", ["n-GPU-0", "n-GPU-1", "n-GPU-4", "n-GPU-5"])
    code, out = simulate(cluster + vgpu_pod("p", whole(4), annotations=REQUIRED), conf=gpu_conf())
    reason = out["pods"]["default/p"]["reason"]
    assert out["pods"]["default/p"]["node"] is None
    assert "d0 2 of 4 free (n-GPU-2,n-GPU-3); d1 2 of 4 free (n-GPU-6,n-GPU-7)" in reason
    code, out = simulate(cluster + vgpu_pod("p", whole(4), annotations={POLICY: "soft"}), conf=gpu_conf())
    assert sorted(gpus(out, "p")) == ["n-GPU-2", "n-GPU-3", "n-GPU-6", "n-GPU-7"]
    # gpushare number mode: vcsched's annotation with the card indices as ids
    node = """
---
apiVersion: v1
kind: Node
metadata:
  name: g
  labels: {kubernetes.io/hostname: g}
  annotations: {vcsched.io/device-topology: '{"domains": [["0","1","2","3"],["4","5","6","7"]]}'}
status:
  capacity: {volcano.sh/gpu-memory: "65536", volcano.sh/gpu-number: "8"}
  allocatable: {cpu: "16", memory: 64Gi, pods: "110", volcano.sh/gpu-number: "8"}
"""
    holder = """
---
apiVersion: v1
kind: Pod
metadata: {name: old, namespace: default, annotations: {volcano.sh/gpu-index: "0,1,2"}}
spec:
  schedulerName: volcano
  nodeName: g
  containers: [{name: c, image: busybox, resources: {limits: {volcano.sh/gpu-number: "3"}}}]
status: {phase: Running}
"""

    def number_pod(name, n, annotations):
        return f"""
---
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default, annotations: {json.dumps(annotations)}}}
spec:
  schedulerName: volcano
  containers: [{{name: c, image: busybox, resources: {{limits: {{volcano.sh/gpu-number: "{n}"}}}}}}]
"""
    gconf = topo_conf(**{"deviceshare.GPUNumberEnable": True})
    code, out = simulate(node + holder + number_pod("p", 2, PREFERRED), conf=gconf)
    # the first idle card (3) is alone in d0: Volcano would take 3,4; the topology keeps the pair in d1
    assert out["pods"]["default/p"]["annotations"]["volcano.sh/gpu-index"] == "4,5"
    code, out = simulate(node + holder + number_pod("p", 2, {}), conf=gconf)
    assert out["pods"]["default/p"]["annotations"]["volcano.sh/gpu-index"] == "3,4"
    code, out = simulate(node + holder + number_pod("p", 5, REQUIRED), conf=gconf)
    assert "GpuNumber device topology required: no domain has 5 free cards (d0 1 of 4 free (3); d1 4 of 4 free" in (
        out["pods"]["default/p"]["reason"])


# -- bad input: a warning naming node and field, scheduling goes on ----------------------------------------


def test_bad_topology_is_a_warning_and_the_node_has_none(tmp_path, capsys):
    uuids = ["GPU-a", "GPU-b"]
    good = hami_scores(uuids, lambda a, b: 200)
    cases = {
        "asymmetric": ({"hami.io/node-nvidia-score": json.dumps(
            [{"uuid": "GPU-a", "score": {"GPU-b": 200}}, {"uuid": "GPU-b", "score": {"GPU-a": 20}}])},
            "hami.io/node-nvidia-score[GPU-a][GPU-b]", "asymmetric"),
        "not json": ({"hami.io/node-nvidia-score": "not-valid-json"}, "hami.io/node-nvidia-score", "not JSON"),
        "unknown card": ({"vcsched.io/device-topology": json.dumps({"domains": [["GPU-a", "GPU-z"]]})},
                         "vcsched.io/device-topology.domains[0][1]", "unknown card id 'GPU-z'"),
        "no card of the node": ({"vcsched.io/device-topology": json.dumps({"domains": [["GPU-y", "GPU-z"]]})},
                                "vcsched.io/device-topology", "unknown card ids"),
        "two domains": ({"vcsched.io/device-topology": json.dumps({"domains": [["GPU-a", "GPU-b"], ["GPU-b"]]})},
                        "vcsched.io/device-topology.domains[1][0]", "in two domains"),
        "negative": ({"vcsched.io/device-topology": json.dumps({"links": {"GPU-a": {"GPU-b": -1}}})},
                     "vcsched.io/device-topology.links[GPU-a][GPU-b]", "not a score"),
    }
    assert parse_hami_scores(good, uuids).domains == ((0, 1),)
    for case, (annotations, field, problem) in cases.items():
        node = with_annotations(gpu_node("bad", [(u, 10, 40960, A100) for u in uuids]), annotations)
        (tmp_path / "c.yaml").write_text(node + vgpu_pod("p", whole(2), annotations=REQUIRED))
        (tmp_path / "s.conf").write_text(gpu_conf())
        code = main(["simulate", "-f", str(tmp_path / "c.yaml"), "--conf", str(tmp_path / "s.conf"), "-o", "json"])
        captured = capsys.readouterr()
        assert code == 0, case
        out = json.loads(captured.out)
        # no topology: even a required pod is placed (nothing says its cards are apart)
        assert out["pods"]["default/p"]["node"] == "bad", case
        logs = [json.loads(line) for line in captured.err.splitlines() if line.startswith("{")]
        assert any(e.get("node") == "bad" and e.get("field") == field and problem in e.get("problem", "")
                   for e in logs), (case, logs)


def test_a_bad_topology_policy_argument_is_refused(simulate):
    code, err = simulate(dgx("n", 4, 2), conf=gpu_conf(**{"deviceshare.TopologyPolicy": "always"}))
    assert code == 2 and "deviceshare.TopologyPolicy" in err and "'always'" in err


def test_simulate_shows_each_multi_card_pods_cards_and_domain(simulate, tmp_path, capsys):
    cluster = SIX_PLUS_TWO + npu_pod("train", ask("Ascend910B3", 8), annotations=PREFERRED) + npu_pod(
        "pair", ask("Ascend910B3", 2))
    code, out = simulate(cluster, conf=npu_conf())
    train = out["pods"]["default/train"]["cards"]
    assert train == [{"kind": "Ascend910B3", "cards": npus(out, "train"), "domain": "d0+d1"}]
    assert out["pods"]["default/old-2"]["cards"][0]["domain"] == "d1"
    assert out["nodes"]["a"]["deviceTopology"]["Ascend910B3"] == {
        "source": "Ascend910B3: HCCS 8 per domain",
        "domains": {"d0": [f"910b3-{i}" for i in range(8)], "d1": [f"910b3-{i}" for i in range(8, 16)]}}
    assert "cards" not in out["pods"]["default/pair"] or out["pods"]["default/pair"]["node"] is None
    (tmp_path / "t.yaml").write_text(SIX_PLUS_TWO + npu_pod("train", ask("Ascend910B3", 8), annotations=REQUIRED)
                                     + npu_pod("four", ask("Ascend910B3", 4), annotations=REQUIRED))
    (tmp_path / "t.conf").write_text(npu_conf())
    assert main(["simulate", "-f", str(tmp_path / "t.yaml"), "--conf", str(tmp_path / "t.conf"), "-o", "table",
                 "--now", "2026-01-01T01:00:00Z"]) == 0
    text = capsys.readouterr().out
    section = text.split("Multi-card pods:")[1].split("\n\n")[0]
    rows = {line.split()[0]: line.split() for line in section.strip().splitlines()[1:]}
    assert rows["default/four"][1:3] == ["a", "Ascend910B3"] and rows["default/four"][4] == "d0"
    assert rows["default/old-2"][4] == "d1" and "default/train" not in rows
    assert "device topology required: no domain has 8 free cards" in text


# -- rack scale: NVLink fabrics as tier-1 HyperNodes -------------------------------------------------------


def fabric(name: str, tier: int, members: list[str], kind: str = "Node") -> str:
    ms = "".join(f"\n  - type: {kind}\n    selector: {{exactMatch: {{name: {m}}}}}" for m in members)
    return f"""
---
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata: {{name: {name}}}
spec:
  tier: {tier}
  members:{ms}
"""


RACK_CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: network-topology-aware
  - name: deviceshare
    arguments: {"deviceshare.VGPUEnable": true, "deviceshare.ScheduleWeight": 10}
"""


def test_a_gang_with_hard_network_topology_lands_inside_one_nvlink_fabric(simulate):
    """Rack-scale NVLink (GB200 NVL72-like fabrics, scaled down): each fabric is a tier-1 HyperNode, a spine
    joins them at tier 2.  A gang of three 4-GPU workers with ``networkTopology: hard, highestTierAllowed:
    1`` goes into the one fabric that holds three nodes, though the other fabric's nodes come first; a gang
    of four that no fabric holds waits, though the cluster has five idle nodes."""
    nodes = "".join(dgx(n, 4, 4) for n in ("a1", "a2", "b1", "b2", "b3"))
    tree = fabric("nvl-a", 1, ["a1", "a2"]) + fabric("nvl-b", 1, ["b1", "b2", "b3"]) + fabric(
        "spine", 2, ["nvl-a", "nvl-b"], kind="HyperNode")

    def gang(size: int) -> str:
        pg = f"""
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {{name: train, namespace: default}}
spec:
  minMember: {size}
  queue: default
  networkTopology: {{mode: hard, highestTierAllowed: 1}}
"""
        return pg + "".join(vgpu_pod(f"w{i}", whole(4), group="train") for i in range(size))

    code, out = simulate(nodes + tree + gang(3), conf=RACK_CONF)
    assert code == 0
    assert sorted(out["pods"][f"default/w{i}"]["node"] for i in range(3)) == ["b1", "b2", "b3"]
    assert out["podgroups"]["default/train"]["hypernode"] == "nvl-b"
    # each worker's four GPUs inside its node's NVLink domain
    assert {c["domain"] for i in range(3) for c in out["pods"][f"default/w{i}"]["cards"]} == {"d0"}
    code, out = simulate(nodes + tree + gang(4), conf=RACK_CONF)
    assert all(out["pods"][f"default/w{i}"]["node"] is None for i in range(4))


def test_hamis_pair_score_rule():
    """``deviceshare.TopologyPolicy: pairscore`` is HAMi's rule: HAMi's TestComputeWorstSingleCard (gpu1,
    the lowest total) and TestComputeBestCombination / TestFit_TopologyBestCombination ([gpu0, gpu2]);
    TestFit_TopologyBestCombinationZeroScores (all 0: two cards still chosen)."""
    scores = {"gpu0": {"gpu1": 100, "gpu2": 200}, "gpu1": {"gpu0": 100, "gpu2": 150},
              "gpu2": {"gpu0": 200, "gpu1": 150}}
    raw = json.dumps([{"uuid": k, "score": v} for k, v in scores.items()])
    topo = parse_hami_scores(raw, ["gpu0", "gpu1", "gpu2"])
    assert choose(topo, [0, 1, 2], 1, topology.PAIRSCORE).cards == (1,)
    assert choose(topo, [0, 1, 2], 2, topology.PAIRSCORE).cards == (0, 2)
    zero = parse_hami_scores(json.dumps([{"uuid": k, "score": {o: 0 for o in v}} for k, v in scores.items()]),
                             ["gpu0", "gpu1", "gpu2"])
    assert len(choose(zero, [0, 1, 2], 2, topology.PAIRSCORE).cards) == 2
    # HAMi's rule scores no node; vcsched's preferred does
    pick = choose(topo, [0, 1, 2], 2, topology.PAIRSCORE)
    assert placement_score(topo, pick, [0, 1, 2], 2, 0, topology.PAIRSCORE) == 0.0
    assert placement_score(topo, pick, [0, 1, 2], 2, 0) > 0.0


def test_a_job_split_into_fabric_sized_partitions_keeps_each_inside_one_fabric(simulate):
    """Rack scale with subgroups: a Volcano Job of four 4-GPU workers whose task has ``partitionPolicy``
    (partitions of two, two needed, each ``networkTopology: hard`` at tier 1) and the whole job within the
    spine (tier 2).  The job controller writes the partitions as the PodGroup's subGroupPolicy; each
    partition lands inside one NVLink fabric, never across the spine, though the fabrics' nodes come
    interleaved (n1, n3 in nvl-a; n2, n4, n5 in nvl-b: in node order a partition would straddle them),
    while the job as a whole spans both fabrics."""
    nodes = "".join(dgx(n, 4, 4) for n in ("n1", "n2", "n3", "n4", "n5"))
    tree = fabric("nvl-a", 1, ["n1", "n3"]) + fabric("nvl-b", 1, ["n2", "n4", "n5"]) + fabric(
        "spine", 2, ["nvl-a", "nvl-b"], kind="HyperNode")
    job = """
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: moe, namespace: default}
spec:
  schedulerName: volcano
  minAvailable: 4
  networkTopology: {mode: hard, highestTierAllowed: 2}
  tasks:
  - name: worker
    replicas: 4
    partitionPolicy:
      totalPartitions: 2
      partitionSize: 2
      minPartitions: 2
      networkTopology: {mode: hard, highestTierAllowed: 1}
    template:
      metadata:
        annotations: {vcsched.io/device-topology-policy: required}
      spec:
        containers:
        - name: c
          image: trainer
          resources:
            limits: {volcano.sh/vgpu-number: 4, volcano.sh/vgpu-cores: 100}
"""
    code, out = simulate(nodes + tree + job, conf=RACK_CONF)
    assert code == 0, out
    fabric_of = {"n1": "nvl-a", "n3": "nvl-a", "n2": "nvl-b", "n4": "nvl-b", "n5": "nvl-b"}
    where = {i: out["pods"][f"default/moe-worker-{i}"]["node"] for i in range(4)}
    assert all(where.values()), where
    partitions = [{fabric_of[where[0]], fabric_of[where[1]]}, {fabric_of[where[2]], fabric_of[where[3]]}]
    assert all(len(p) == 1 for p in partitions), where  # each partition inside one fabric
    assert partitions[0] | partitions[1] == {"nvl-a", "nvl-b"}  # no fabric holds four: the job spans both
    (pg,) = out["podgroups"].values()
    assert pg["hypernode"] == "spine"
