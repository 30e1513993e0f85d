"""The fragmentation policy's session look-ahead and hold-back (plugins/deviceshare/lookahead.py).

Each case runs a real session (Cache → Scheduler → deviceshare) with the look-ahead on (the default)
and off, where the two place differently.
"""

import pytest

from vcsched.cache import Cache
from vcsched.framework.arguments import ArgumentError, Arguments
from vcsched.framework.effects import Bind, PodCondition
from vcsched.plugins.deviceshare import device_builder
from vcsched.plugins.deviceshare.config import DeviceShareArgs
from vcsched.plugins.deviceshare.lookahead import HELD_REASON, OFF_PLAN, SessionPlan, demand
from vcsched.plugins.deviceshare.vgpu import ContainerRequest, VGPURequest
from vcsched.scheduler import Scheduler
from vcsched.sim.cluster import SIM_EPOCH

from .test_fragmentation import conf, half, node, pod, schedule


def lookahead_conf(workload, lookahead: bool = True, hold_back: bool = True):
    c = conf("fragmentation", workload)
    c.tiers[1][1].arguments.values["deviceshare.FragmentationLookahead"] = lookahead
    c.tiers[1][1].arguments.values["deviceshare.FragmentationHoldBack"] = hold_back
    return c


def in_queue(p: tuple[dict, dict], queue: str) -> tuple[dict, dict]:
    p[0]["spec"]["queue"] = queue
    return p


def test_the_larger_task_of_the_session_gets_the_idle_card():
    """n1's GPU is idle, n2's half used.  A 30% task comes before a whole-GPU task; the given workload
    knows only 30% tasks, so the policy's score ties n1 and n2 for it and the first (n1) takes it: the
    whole-GPU task then fits nowhere.  The look-ahead plans the whole GPU first (n1, the only idle card)
    and the 30% task beside the running one on n2, and steers both there."""
    nodes = [node("n1", 1), node("n2", 1)]
    pods = [pod("run", 50, node_name="n2", gpu="GPU-n2-0"), pod("a", 30), pod("b", 100)]
    binds = schedule(lookahead_conf([half(30)]), nodes, pods)
    assert (binds["a"].node, binds["b"].node) == ("n2", "n1")
    myopic = schedule(lookahead_conf([half(30)], lookahead=False), nodes, pods)
    assert myopic["a"].node == "n1" and "b" not in myopic


def test_planned_cards_come_first_inside_the_node():
    """One node, GPU 0 idle, GPU 1 half used; a 30% task comes before a whole-GPU task.  With 30% tasks
    alone in the workload both GPUs tie for the 30% task and index order takes GPU 0; the plan puts the
    whole GPU on GPU 0 and the 30% task on GPU 1, and the allocation takes the planned card."""
    nodes = [node("n1", 2)]
    pods = [pod("run", 50, node_name="n1", gpu="GPU-n1-1"), pod("a", 30), pod("b", 100)]
    binds = schedule(lookahead_conf([half(30)]), nodes, pods)
    assert binds["a"].annotations["volcano.sh/vgpu-ids-new"].startswith("GPU-n1-1,")
    assert binds["b"].annotations["volcano.sh/vgpu-ids-new"].startswith("GPU-n1-0,")
    myopic = schedule(lookahead_conf([half(30)], lookahead=False), nodes, pods)
    assert myopic["a"].annotations["volcano.sh/vgpu-ids-new"].startswith("GPU-n1-0,") and "b" not in myopic


def test_tasks_naming_gpu_models_are_planned_first():
    """n1 has an A100, n2 a T4; a whole-GPU task any card suits comes before a whole-GPU task that names
    the A100.  The given workload names no model, so the policy's score ties both cards for the first
    task, and planned in job order it would take n1's A100, leaving the other nothing (held back, as
    its queue's). Planned first, the A100 task gets n1 and the other n2: both run."""
    nodes = [node("n1", 1, model="A100"), node("n2", 1, model="T4")]
    pods = [pod("any", 100), pod("a100", 100, gpu_type="A100")]
    binds = schedule(lookahead_conf([half(100)]), nodes, pods)
    assert (binds["any"].node, binds["a100"].node) == ("n2", "n1")


def test_a_task_whose_room_its_queue_needs_is_held_back():
    """One idle GPU; a 30% task comes before a whole-GPU task of the same queue.  The plan gives the card
    to the whole-GPU task and finds no room for the 30% one: it is held back (pending, the reason says
    why) rather than take the card.  Without hold-back it takes the card (nothing steers it) and the
    whole-GPU task fails."""
    nodes = [node("n1", 1)]
    pods = [pod("a", 30), pod("b", 100)]
    binds = schedule(lookahead_conf([half(30)]), nodes, pods)
    assert set(binds) == {"b"}
    greedy = schedule(lookahead_conf([half(30)], hold_back=False), nodes, pods)
    assert set(greedy) == {"a"}


def test_the_held_back_reason_is_recorded():
    """The held-back task's fit error names the hold-back and its argument."""
    c = lookahead_conf([half(30)])
    cache = Cache(devices=device_builder(c, {}))
    cache.add_queue({"metadata": {"name": "default"}, "spec": {"weight": 1}, "status": {"state": "Open"}})
    cache.add_node(node("n1", 1))
    for pg, p in (pod("a", 30), pod("b", 100)):
        cache.add_podgroup(pg)
        cache.add_pod(p)
    effects = Scheduler(cache, c).run_once(now=SIM_EPOCH)
    held = [e for e in effects if isinstance(e, PodCondition) and e.name == "a"]
    assert held and HELD_REASON in held[0].message
    assert not any(isinstance(e, PodCondition) and e.name == "b" for e in effects)


def test_no_hold_back_for_another_queue():
    """The same two tasks, the 30% one in queue q2: the whole-GPU task of another queue is planned before
    it, so holding it back would hand its room to another queue.  It is not held: it competes as without
    the look-ahead, and fails for want of room (the default queue comes first), not for the hold-back."""
    nodes = [node("n1", 1)]
    pods = [in_queue(pod("a", 30), "q2"), pod("b", 100)]
    c = lookahead_conf([half(30)])
    cache = Cache(devices=device_builder(c, {}))
    for q in ("default", "q2"):
        cache.add_queue({"metadata": {"name": q}, "spec": {"weight": 1}, "status": {"state": "Open"}})
    cache.add_node(nodes[0])
    for pg, p in pods:
        cache.add_podgroup(pg)
        cache.add_pod(p)
    effects = Scheduler(cache, c).run_once(now=SIM_EPOCH)
    assert [e.name for e in effects if isinstance(e, Bind)] == ["b"]  # queue order: default first
    a = [e for e in effects if isinstance(e, PodCondition) and e.name == "a"]
    assert a and HELD_REASON not in a[0].message and "not enough gpu" in a[0].message


def test_no_hold_back_for_a_gang():
    """A 30% task whose job needs two tasks to start is never held back (a gang is not broken up): with
    two such tasks and a whole-GPU task on one idle GPU, the gang takes the card as without hold-back."""
    nodes = [node("n1", 1)]
    a1, a2 = pod("a1", 30), pod("a2", 30)
    a2[1]["metadata"]["annotations"]["scheduling.k8s.io/group-name"] = "a1"
    a1[0]["spec"]["minMember"] = 2
    pods = [a1, (a1[0], a2[1]), pod("b", 100)]
    binds = schedule(lookahead_conf([half(30)]), nodes, pods)
    assert {"a1", "a2"} <= set(binds)


def test_plan_scores_and_demand():
    """The steering: 100 on the planned node, the policy's score × OFF_PLAN elsewhere, unplanned tasks
    untouched; the demand a plan sorts by."""
    plan = SessionPlan(placed={"t": ("n1", frozenset({0}))})
    assert plan.adjust("t", "n1", 12.0) == 100.0
    assert plan.adjust("t", "n2", 100.0) == 100.0 * OFF_PLAN
    assert plan.adjust("u", "n2", 42.0) == 42.0
    assert plan.cards("t", "n1") == frozenset({0}) and plan.cards("t", "n2") is None
    whole = VGPURequest((ContainerRequest(2, 0, 100, 100),), None, "", (), (), None, None, (), ("", ""))
    share = VGPURequest((ContainerRequest(1, 0, 30, 0),), None, "", (), (), None, None, (), ("", ""))
    assert demand(whole) == 2.0 and demand(share) == 0.3 and demand(None) == 0.0


def test_arguments():
    a = DeviceShareArgs.parse(Arguments({}, "deviceshare"))
    assert a.frag_lookahead and a.frag_hold_back
    off = DeviceShareArgs.parse(Arguments({"deviceshare.FragmentationLookahead": "false",
                                           "deviceshare.FragmentationHoldBack": False}, "deviceshare"))
    assert not off.frag_lookahead and not off.frag_hold_back
    with pytest.raises(ArgumentError, match="FragmentationLookahead"):
        DeviceShareArgs.parse(Arguments({"deviceshare.FragmentationLookahead": 3}, "deviceshare"))
