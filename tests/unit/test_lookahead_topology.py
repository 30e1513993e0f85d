"""The fragmentation policy's look-ahead plans device-topology pods with their topology (issue 24;
plugins/deviceshare/lookahead.py, ``place``).

Each case runs a real session (Cache → Scheduler → deviceshare, policy ``fragmentation``) on 8-GPU nodes
whose cards form two NVLink groups of four (``vcsched.io/device-topology``), and compares the look-ahead
on and off where they place differently.
"""

import json

from vcsched.cache import Cache
from vcsched.framework.effects import Bind
from vcsched.plugins.deviceshare import device_builder
from vcsched.plugins.deviceshare.lookahead import OFF_PLAN, SessionPlan
from vcsched.plugins.deviceshare.topology import planned_choice
from vcsched.scheduler import Scheduler
from vcsched.sim.cluster import SIM_EPOCH, rfc3339

from .test_fragmentation import CARD
from .test_fragmentation_lookahead import lookahead_conf

GPUS = 8
D0 = {0, 1, 2, 3}
D1 = {4, 5, 6, 7}


def node(name: str, held: dict[int, int] | None = None) -> dict:
    """An 8-GPU node, groups 0-3 and 4-7 (vcsched's annotation)."""
    reg = "".join(f"GPU-{name}-{i},10,{CARD},NVIDIA-T4,true,hami-core:" for i in range(GPUS))
    domains = [[f"GPU-{name}-{i}" for i in range(k, k + 4)] for k in (0, 4)]
    alloc = {"cpu": "64", "memory": "256Gi", "pods": "110", "volcano.sh/vgpu-number": str(10 * GPUS),
             "volcano.sh/vgpu-memory": str(CARD * GPUS), "volcano.sh/vgpu-cores": str(100 * GPUS)}
    return {"metadata": {"name": name, "annotations": {"volcano.sh/node-vgpu-register": reg,
                                                        "vcsched.io/device-topology": json.dumps({"domains": domains})}},
            "status": {"allocatable": alloc}}


def pod(name: str, cards: int, share: int = 100, node_name: str = "", gpus: list[int] | None = None,
        policy: str = "preferred") -> tuple[dict, dict]:
    """A job of one pod asking ``cards`` vGPUs of ``share`` % each, with a device-topology policy; bound to
    ``gpus`` of ``node_name`` when given."""
    ann = {"scheduling.k8s.io/group-name": name, "vcsched.io/device-topology-policy": policy}
    if gpus:
        ann["volcano.sh/vgpu-ids-new"] = "".join(
            f"GPU-{node_name}-{g},NVIDIA,{share * CARD // 100},{share}:" for g in gpus)
    lim = {"volcano.sh/vgpu-number": str(cards), "volcano.sh/vgpu-memory": str(share * CARD // 100),
           "volcano.sh/vgpu-cores": str(share)}
    p = {"metadata": {"name": name, "namespace": "t", "uid": name, "annotations": ann,
                      "creationTimestamp": rfc3339(SIM_EPOCH)},
         "spec": {"schedulerName": "volcano", "nodeName": node_name, "containers": [
             {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}, "limits": lim}}]},
         "status": {"phase": "Running" if node_name else "Pending"}}
    pg = {"metadata": {"name": name, "namespace": "t", "uid": f"pg-{name}", "creationTimestamp": rfc3339(SIM_EPOCH)},
          "spec": {"minMember": 1, "queue": "default"}, "status": {"phase": "Running" if node_name else "Pending"}}
    return pg, p


def run(nodes: list[dict], pods: list[tuple[dict, dict]], lookahead: bool = True):
    """(binds by pod name, the session's plan) of one session under the fragmentation policy."""
    c = lookahead_conf(None, lookahead=lookahead)
    cache = Cache(devices=device_builder(c, {}))
    cache.add_queue({"metadata": {"name": "default"}, "spec": {"weight": 1}, "status": {"state": "Open"}})
    for n in nodes:
        cache.add_node(n)
    for pg, p in pods:
        cache.add_podgroup(pg)
        cache.add_pod(p)
    sched = Scheduler(cache, c)
    effects = sched.run_once(now=SIM_EPOCH)
    family = next(f for n in cache.nodes.values() for k, f in ((k, d.family) for k, d in n.devices.items())
                  if k == "hamivgpu")
    return {e.name: e for e in effects if isinstance(e, Bind)}, family.plan


def cards(bind: Bind) -> set[int]:
    ids = bind.annotations["volcano.sh/vgpu-ids-new"]
    return {int(item.split(",")[0].rsplit("-", 1)[1]) for item in ids.split(":") if item}


def test_a_four_card_pod_is_planned_inside_one_group_and_gets_it():
    """Nodes a and b each have one whole group free (0-3) and the other group taken.  A 2-card pod comes
    before two 4-card pods (all preferred).  Scored one by one, the 2-card pod takes half of a's free
    group (the nodes tie), the first 4-card pod gets b's and the second has no four free cards anywhere.
    The look-ahead plans the 4-card pods first, each inside one group (a's 0-3 and b's 0-3), finds no
    room for the 2-card pod (held back: its queue's larger pods have the room), and the allocation
    takes the planned cards."""
    nodes = [node("a"), node("b")]
    pods = [pod("run-a", 4, node_name="a", gpus=[4, 5, 6, 7]), pod("run-b", 4, node_name="b", gpus=[4, 5, 6, 7]),
            pod("pair", 2), pod("quad1", 4), pod("quad2", 4)]
    binds, plan = run(nodes, pods)
    assert {binds["quad1"].node, binds["quad2"].node} == {"a", "b"}
    assert cards(binds["quad1"]) == D0 and cards(binds["quad2"]) == D0
    assert plan.cards("quad1", binds["quad1"].node) == frozenset(D0)
    assert plan.cards("quad2", binds["quad2"].node) == frozenset(D0)
    assert "pair" not in binds and "pair" in plan.held
    # the planned node is steered to whatever the topology score: 100 there, below 100 elsewhere
    assert plan.ceiling["quad1"] == 200.0
    assert plan.adjust("quad1", binds["quad1"].node, 10.0) == 100.0
    assert plan.adjust("quad1", "elsewhere", 200.0) == 100.0 * OFF_PLAN
    myopic, _ = run(nodes, pods, lookahead=False)
    assert "pair" in myopic and sum(1 for q in ("quad1", "quad2") if q in myopic) == 1


def test_a_one_card_pod_is_planned_off_the_group_a_bigger_pod_needs():
    """One node: group 0-3 untouched, GPU 4 of group 4-7 half used.  A whole-card pod comes before a
    4-card pod (both preferred).  Scored alone, the one-card pod takes the first card in the policy's
    order, GPU 0, and the 4-card pod is split over both groups.  The look-ahead plans the 4-card pod on
    0-3 and the one-card pod on group 4-7 (the group 0-3 is planned for the bigger pod), and the one-card
    pod's planned card comes first."""
    nodes = [node("n")]
    pods = [pod("run", 1, share=50, node_name="n", gpus=[4]), pod("one", 1), pod("quad", 4)]
    binds, plan = run(nodes, pods)
    assert cards(binds["one"]) <= D1 and cards(binds["quad"]) == D0
    assert plan.cards("one", "n") == frozenset(cards(binds["one"]))
    myopic, _ = run(nodes, pods, lookahead=False)
    assert cards(myopic["one"]) <= D0 and not cards(myopic["quad"]) <= D0


def test_required_pod_planned_inside_one_group_only():
    """A required pod's plan never splits it: with 3 + 3 free whole cards and a 4-card required pod, the
    plan finds no room (the pod stays pending with the topology reason), and a preferred one is planned
    split.  The planned cards are taken as a Choice only when they still fit the policy."""
    nodes = [node("n")]
    held = [pod("r0", 1, node_name="n", gpus=[0]), pod("r4", 1, node_name="n", gpus=[4])]
    binds, plan = run(nodes, held + [pod("quad", 4, policy="required")])
    assert "quad" not in binds and "quad" in plan.unplaced
    binds, plan = run(nodes, held + [pod("quad", 4)])
    got = plan.cards("quad", "n")
    assert got is not None and got & D0 and got & D1 and cards(binds["quad"]) == set(got)
    # the allocation's side: planned cards that span groups are no Choice for a required pod
    from vcsched.plugins.deviceshare.topology import CardTopology
    topo = CardTopology(tuple(str(i) for i in range(8)), (tuple(D0), tuple(D1)),
                        (0, 0, 0, 0, 1, 1, 1, 1), None, "test")
    assert planned_choice(topo, [1, 2, 5, 6], {1, 5}, 2, "required") is None
    assert planned_choice(topo, [1, 2, 5, 6], {1, 5}, 2, "preferred").cards == (1, 5)
    assert planned_choice(topo, [1, 2, 5, 6], {2, 3}, 2, "preferred") is None  # 3 no longer fits
    assert planned_choice(topo, [6, 1, 5, 2], {5, 6}, 2, "required").domain == 1
    assert SessionPlan().adjust("x", "n", 150.0) == 150.0


def test_the_allocation_takes_the_planned_cards():
    """One node, both groups free; a 2-card pod comes before a 3-card pod.  The plan takes the larger
    first: 0-2 for the 3-card pod, then 4-5 for the 2-card one (group 0-3 has one card left).  Placed
    alone, the 2-card pod would take 0-1 (the groups tie, the first wins); with the plan it takes its
    planned 4-5 and the 3-card pod its 0-2."""
    nodes = [node("n")]
    pods = [pod("pair", 2), pod("triple", 3)]
    binds, plan = run(nodes, pods)
    assert cards(binds["pair"]) == set(plan.cards("pair", "n")) == {4, 5}
    assert cards(binds["triple"]) == set(plan.cards("triple", "n")) == {0, 1, 2}
    myopic, _ = run(nodes, pods, lookahead=False)
    assert cards(myopic["pair"]) == {0, 1} and cards(myopic["triple"]) == {4, 5, 6}


def test_the_plan_ranks_a_placement_inside_one_group_above_any_split_one():
    """The plan's own ranking (lookahead._score_on): a preferred 2-card pod scores WHOLE more on a node
    where it lies inside one group (a: cards 0-1 free in group 0-3) than on one where it must be split
    (b: cards 0 and 4 free), so it is split only where no node has a group for it; a one-card pod gets
    no such bonus (nothing to keep together), and a node without topology none either."""
    from vcsched.plugins.deviceshare.fragmentation import FragmentationModel, FragmentationScorer, TaskShape
    from vcsched.plugins.deviceshare.lookahead import WHOLE, PlanNode, _score_on, _shape_kind
    from vcsched.plugins.deviceshare.topology import CardTopology
    from vcsched.plugins.deviceshare.vgpu import ContainerRequest, VGPURequest, type_allowed

    topo = CardTopology(tuple(str(i) for i in range(8)), (tuple(sorted(D0)), tuple(sorted(D1))),
                        (0, 0, 0, 0, 1, 1, 1, 1), None, "test")
    model = FragmentationModel([(TaskShape(1000, 0, 2, 100, 100, 0, None, None), 1.0)], {"NVIDIA-T4": 24},
                               streams=8)
    scorer = FragmentationScorer(model, 8)

    def plan_node(name: str, free: set[int], topology=topo) -> PlanNode:
        cards = [["NVIDIA-T4", CARD, 10, 0, 0, 0, i] if i in free else ["NVIDIA-T4", CARD, 10, 1, 100, CARD, i]
                 for i in range(GPUS)]
        return PlanNode(name, 64000, 256 << 30, cards, topology, 0 if topology else -1, states)

    states: dict = {}
    a, b, c = plan_node("a", {0, 1}), plan_node("b", {0, 4}), plan_node("c", {0, 1}, None)
    pair = VGPURequest((ContainerRequest(2, 0, 100, 100),), None, "", (), (), None, None, (), ("", ""),
                       topology="preferred")
    one = VGPURequest((ContainerRequest(1, 0, 100, 100),), None, "", (), (), None, None, (), ("", ""),
                      topology="preferred")

    def score(n: PlanNode, req, number: int) -> float:
        return _score_on(n, {}, scorer, req, (number, _shape_kind(req)), 1000, 0, type_allowed, 2)

    assert score(a, pair, 0) >= WHOLE > score(b, pair, 0) >= 0
    assert 0 <= score(c, pair, 0) < WHOLE  # no topology: nothing says the cards are together
    assert max(score(n, one, 1) for n in (a, b, c)) < WHOLE
