"""The deviceshare ``fragmentation`` SchedulePolicy (plugins/deviceshare/fragmentation.py) on hand-made cases.

Each case is run through a real session (Cache → Scheduler → deviceshare), once with the fragmentation
policy and once with binpack, where binpack picks the other GPU or node.
"""

import pytest

from vcsched.api.task_info import new_task_info
from vcsched.cache import Cache
from vcsched.conf import parse_conf
from vcsched.framework.arguments import ArgumentError, Arguments
from vcsched.framework.effects import Bind
from vcsched.plugins.deviceshare import device_builder
from vcsched.plugins.deviceshare.config import DeviceShareArgs
from vcsched.plugins.deviceshare.fragmentation import (
    FragmentationModel, FragmentationScorer, TaskShape, WorkloadHistogram, scarcity,
)
from vcsched.scheduler import Scheduler
from vcsched.sim.cluster import SIM_EPOCH, rfc3339

CARD = 10000  # MiB: a share of s % is s × 100 MiB
GPU_ALLOC = {"volcano.sh/vgpu-number": "40", "volcano.sh/vgpu-memory": "40000", "volcano.sh/vgpu-cores": "400"}


def conf(policy: str, workload: list[dict] | None = None, scarcity: float | None = None):
    text = f"""\
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: predicates
  - name: deviceshare
    arguments:
      deviceshare.VGPUEnable: true
      deviceshare.SchedulePolicy: {policy}
      deviceshare.ScheduleWeight: 10
"""
    c = parse_conf(text)
    if workload is not None:
        c.tiers[1][1].arguments.values["deviceshare.FragmentationWorkload"] = workload
    if scarcity is not None:
        c.tiers[1][1].arguments.values["deviceshare.FragmentationScarcityWeight"] = scarcity
    return c


def node(name: str, gpus: int, cpu: str = "16", model: str = "T4") -> dict:
    reg = "".join(f"GPU-{name}-{i},10,{CARD},NVIDIA-{model},true,hami-core:" for i in range(gpus))
    alloc = {"cpu": cpu, "memory": "64Gi", "pods": "110"}
    if gpus:
        alloc.update(GPU_ALLOC)
    return {"metadata": {"name": name, "annotations": {"volcano.sh/node-vgpu-register": reg} if gpus else {}},
            "status": {"allocatable": alloc}}


def pod(name: str, share: int = 0, cpu: str = "1", node_name: str = "", gpu: str = "",
        gpu_type: str = "") -> tuple[dict, dict]:
    """A job of one pod asking ``share`` % of one GPU (memory and cores); bound to ``gpu`` when given."""
    ann = {"scheduling.k8s.io/group-name": name}
    if gpu_type:
        ann["nvidia.com/use-gputype"] = gpu_type
    lim = {"volcano.sh/vgpu-number": "1", "volcano.sh/vgpu-memory": str(share * CARD // 100),
           "volcano.sh/vgpu-cores": str(share)} if share else {}
    if gpu:
        ann["volcano.sh/vgpu-ids-new"] = f"{gpu},NVIDIA,{share * CARD // 100},{share}:"
    p = {"metadata": {"name": name, "namespace": "t", "uid": name, "annotations": ann,
                      "creationTimestamp": rfc3339(SIM_EPOCH)},
         "spec": {"schedulerName": "volcano", "nodeName": node_name, "containers": [
             {"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}, "limits": lim}}]},
         "status": {"phase": "Running" if node_name else "Pending"}}
    pg = {"metadata": {"name": name, "namespace": "t", "uid": f"pg-{name}", "creationTimestamp": rfc3339(SIM_EPOCH)},
          "spec": {"minMember": 1, "queue": "default"}, "status": {"phase": "Running" if node_name else "Pending"}}
    return pg, p


def schedule(c, nodes: list[dict], pods: list[tuple[dict, dict]]) -> dict[str, Bind]:
    cache = Cache(devices=device_builder(c, {}))
    cache.add_queue({"metadata": {"name": "default"}, "spec": {"weight": 1}, "status": {"state": "Open"}})
    for n in nodes:
        cache.add_node(n)
    for pg, p in pods:
        cache.add_podgroup(pg)
        cache.add_pod(p)
    effects = Scheduler(cache, c).run_once(now=SIM_EPOCH)
    return {e.name: e for e in effects if isinstance(e, Bind)}


def half(share: int, weight: float = 1) -> dict:
    return {"vgpuNumber": 1, "vgpuCores": share, "vgpuMemory": share * CARD // 100, "weight": weight}


def test_prefers_the_gpu_whose_use_leaves_no_fragment():
    """GPU 0 is 40% used, GPU 1 idle; the workload is 50% tasks.  A 50% task on GPU 0 would leave a 10%
    sliver nobody can use; on GPU 1 both GPUs keep room for one more 50% task.  Binpack takes GPU 0."""
    nodes = [node("n1", 2)]
    pods = [pod("run", 40, node_name="n1", gpu="GPU-n1-0"), pod("new", 50)]
    frag = schedule(conf("fragmentation", [half(50)]), nodes, pods)["new"]
    assert frag.annotations["volcano.sh/vgpu-ids-new"] == "GPU-n1-1,NVIDIA,5000,50:"
    binpack = schedule(conf("binpack"), nodes, pods)["new"]
    assert binpack.annotations["volcano.sh/vgpu-ids-new"] == "GPU-n1-0,NVIDIA,5000,50:"


def test_prefers_the_node_whose_free_gpu_stays_usable():
    """n1's GPU is 30% used, n2's idle; the workload is 70% tasks.  A 30% task on n1 leaves 40% free that
    no 70% task can use; on n2 it leaves 70%, exactly one more task.  Binpack takes n1."""
    nodes = [node("n1", 1), node("n2", 1)]
    pods = [pod("run", 30, node_name="n1", gpu="GPU-n1-0"), pod("new", 30)]
    assert schedule(conf("fragmentation", [half(70)]), nodes, pods)["new"].node == "n2"
    assert schedule(conf("binpack"), nodes, pods)["new"].node == "n1"


def test_cpu_only_task_goes_where_it_strands_no_gpu():
    """A 3-CPU task without GPU on n1 would leave 1 CPU beside an idle GPU that whole-GPU tasks of 2 CPUs
    need; n2's GPU is already full.  Without GPU fragmentation in mind, n1 (first) would do."""
    nodes = [node("n1", 1, cpu="4"), node("n2", 1, cpu="4")]
    whole = {"cpu": "2", "vgpuNumber": 1, "vgpuCores": 100, "vgpuMemory": CARD, "weight": 1}
    pods = [pod("run", 100, cpu="0", node_name="n2", gpu="GPU-n2-0"), pod("cpu", 0, cpu="3")]
    assert schedule(conf("fragmentation", [whole]), nodes, pods)["cpu"].node == "n2"
    assert schedule(conf("binpack"), nodes, pods)["cpu"].node == "n1"


def test_cpu_only_task_keeps_the_cpu_that_feeds_idle_gpus():
    """n1 has 2 idle GPUs and 4 CPUs, enough for the four 50% tasks of 1 CPU the workload holds; n2's GPU
    is full.  A 1-CPU task without GPU on n1 leaves three 50% tasks fitting there, so FGD's one-task
    measure sees no change on either node (and n1, first, would win); a stream of 50% tasks loses half a
    GPU on n1 and nothing on n2.  Whole-GPU classes keep FGD's measure: with them n1 wins."""
    nodes = [node("n1", 2, cpu="4"), node("n2", 1, cpu="4")]
    sharing = {**half(50), "cpu": "1"}
    whole = {"cpu": "2", "vgpuNumber": 1, "vgpuCores": 100, "vgpuMemory": CARD, "weight": 1}
    pods = [pod("run", 100, cpu="0", node_name="n2", gpu="GPU-n2-0"), pod("cpu", 0, cpu="1")]
    assert schedule(conf("fragmentation", [sharing]), nodes, pods)["cpu"].node == "n2"
    assert schedule(conf("fragmentation", [whole]), nodes, pods)["cpu"].node == "n1"
    assert schedule(conf("binpack"), nodes, pods)["cpu"].node == "n1"


def test_learned_distribution_without_a_given_one():
    """Learned online from the pods of the session: 30% tasks (running and pending) and a 70% one.  The
    pending 30% task goes to n2, keeping n1's 70% free for the 70% task; with 30% tasks alone the two
    nodes would tie and n1 (first) would win, so the learned 70% class decided."""
    nodes = [node("n1", 1), node("n2", 1)]
    pods = [pod("run", 30, node_name="n1", gpu="GPU-n1-0"), pod("a", 30), pod("b", 70)]
    binds = schedule(conf("fragmentation"), nodes, pods)
    assert (binds["a"].node, binds["b"].node) == ("n2", "n1")
    only_small = schedule(conf("fragmentation", [half(30)]), nodes, pods[:2])
    assert only_small["a"].node == "n1"


def test_node_fragmentation_by_hand():
    """F = Σ p_m F(m): whole, half (any model), CPU-only and half-on-V100 classes, 1/4 each."""
    whole = TaskShape(1000, 0, 1, 100, 100, 0, None, None)
    half_any = TaskShape(1000, 0, 1, 50, 50, 0, None, None)
    cpu = TaskShape(1000, 0, 0, 0, 0, 0, None, None)
    half_v100 = TaskShape(1000, 0, 1, 50, 50, 0, ("V100",), None)
    m = FragmentationModel([(whole, 1), (half_any, 1), (cpu, 1), (half_v100, 1)])
    t4 = [("NVIDIA-T4", 16384, 100, 1, 100, 16384), ("NVIDIA-T4", 16384, 100, 1, 50, 8192)]
    # free 0.5 on the second GPU: whole → 0.5 (no idle GPU), half → 0, CPU-only → 0.5, V100-only → 0.5
    f, free = m.node_frag(8000, 1 << 30, tuple(sorted(t4)))
    assert free == pytest.approx(0.5)
    assert f == pytest.approx((0.5 + 0 + 0.5 + 0.5) / 4)
    # without CPU for any GPU class, all free capacity is fragmented
    f, _ = m.node_frag(500, 1 << 30, tuple(sorted(t4)))
    assert f == pytest.approx(0.5)
    # an idle card: whole and half fit, CPU-only and V100-only do not use it
    f, free = m.node_frag(8000, 1 << 30, (("NVIDIA-T4", 16384, 100, 0, 0, 0),))
    assert (f, free) == (pytest.approx(0.5), pytest.approx(1.0))


def test_stream_fragmentation_by_hand():
    """The policy's measure for GPU-sharing classes: F(m) = free − min(free capacity m may use, k_m × d_m),
    k_m the tasks of m the idle CPU and memory feed.  FGD's (streams=0, and whole-GPU classes always)
    only asks whether one task fits."""
    whole = TaskShape(2000, 0, 1, 100, 100, 0, None, None)
    third = TaskShape(3000, 0, 1, 30, 30, 0, None, None)
    idle = ("NVIDIA-T4", 16384, 100, 0, 0, 0)
    four = (idle,) * 4
    fgd = FragmentationModel([(whole, 1), (third, 1)])
    stream = FragmentationModel([(whole, 1), (third, 1)], streams=4)
    # 5 CPUs: one whole-GPU task fits (FGD's measure: nothing lost) and one 30% task (0.3 of 4)
    assert fgd.node_frag(5000, 1 << 30, four) == (pytest.approx(0.0), pytest.approx(4.0))
    assert stream.node_frag(5000, 1 << 30, four)[0] == pytest.approx((0 + 4 - 0.3) / 2)
    # enough CPU for every GPU: the measures agree (30%: 14 tasks ≥ 4 GPUs' worth)
    assert stream.node_frag(42000, 1 << 30, four)[0] == pytest.approx(0.0)
    # the level counts at most what the largest node's GPUs hold: ceil(4 / 0.3) = 14 tasks of 30%;
    # whole-GPU classes only ask whether one fits
    assert stream.levels(1e9, 1 << 30) == (1, 14)
    assert fgd.levels(1e9, 1 << 30) == (1, 1)
    # memory in MiB without cores: its share depends on the card, so one task is asked about, as in FGD
    by_mib = TaskShape(1000, 0, 1, 0, 101, 4096, None, None)
    assert FragmentationModel([(by_mib, 1)], streams=4).levels(1e9, 1 << 30) == (1,)
    # a 30% task uses a GPU with 70% free, not one with 20% free; the stream is capped by what it may use
    gpus = tuple(sorted([("NVIDIA-T4", 16384, 100, 1, 80, 0), ("NVIDIA-T4", 16384, 100, 1, 30, 0)]))
    f, free = stream.node_frag(42000, 1 << 30, gpus)
    assert free == pytest.approx(0.9)
    assert f == pytest.approx((0.9 + 0.2) / 2)  # whole: nothing usable; 30%: the 20% sliver


def test_scarcity_by_hand():
    """Type k expects ρ_k = Σ_{m may use k} p_m d_m / cap(A_m) per GPU; the cost is (ρ_k − min ρ) / mean ρ."""
    unbound = TaskShape(1000, 0, 1, 100, 100, 0, None, None)
    on_t4 = TaskShape(1000, 0, 1, 100, 100, 0, ("T4",), None)
    two = TaskShape(1000, 0, 2, 100, 100, 0, ("T4", "A10"), None)
    capacity = {"NVIDIA-T4": 2, "NVIDIA-A10": 2, "NVIDIA-G2": 4}
    # demand 1 + 1 + 4 = 6 GPUs on 8: mean 0.75; ρ: T4 1/8 + 1/2 + 4/4, A10 1/8 + 4/4, G2 1/8
    assert scarcity([(unbound, 1), (on_t4, 1), (two, 2)], capacity, 1.0) == {
        "NVIDIA-T4": pytest.approx(1.5 / 0.75), "NVIDIA-A10": pytest.approx(1.0 / 0.75)}
    assert scarcity([(unbound, 1), (on_t4, 1)], capacity, 0.0) == {}  # off
    assert scarcity([(unbound, 1)], capacity, 1.0) == {}  # nothing bound: every type equally wanted
    # in F: a GPU in use costs its type's scarcity (here a full T4 adds 2 × 0.5 × 1.0)
    m = FragmentationModel([(unbound, 1), (on_t4, 1)], {"NVIDIA-T4": 1, "NVIDIA-A10": 1}, 1.0)
    assert m.scarcity == {"NVIDIA-T4": pytest.approx(1.0)}
    full, idle = ("NVIDIA-T4", 16384, 100, 1, 100, 16384), ("NVIDIA-T4", 16384, 100, 0, 0, 0)
    assert m.node_frag(8000, 1 << 30, (full,)) == (pytest.approx(1.0), 0.0)
    assert m.node_frag(8000, 1 << 30, (idle,)) == (pytest.approx(0.0), pytest.approx(1.0))


def test_unbound_task_leaves_the_scarce_model_to_bound_tasks():
    """n1 has an idle T4, n2 an A10 30% used; the workload is 70% tasks, half of them bound to T4.  A 30%
    task on the A10 leaves 40% nobody can use (ΔF = +0.05), on the T4 ΔF = 0: pure FGD takes the T4,
    which the bound half needs (T4's ρ is twice the A10's).  With the scarcity cost (0.3 GPU × 1.0) it
    takes the A10."""
    nodes = [node("n1", 1), node("n2", 1, model="A10")]
    pods = [pod("run", 30, node_name="n2", gpu="GPU-n2-0"), pod("new", 30)]
    seventy = [half(70), {**half(70), "gpuType": "T4"}]
    assert schedule(conf("fragmentation", seventy, scarcity=0), nodes, pods)["new"].node == "n1"
    assert schedule(conf("fragmentation", seventy), nodes, pods)["new"].node == "n2"
    # nothing bound: no scarcity, FGD alone
    assert schedule(conf("fragmentation", [half(70)]), nodes, pods)["new"].node == "n1"


def test_histogram_counts_each_pod_once_decays_and_stays_bounded():
    a, b, c = (TaskShape(i, 0, 1, 10 * i, 10 * i, 0, None, None) for i in (1, 2, 3))
    h = WorkloadHistogram(capacity=2, half_life=1)
    h.observe("p1", a)
    h.observe("p1", a)  # seen: not counted again
    h.observe("p2", b)  # one half-life later: twice the weight of the first
    assert dict(h.distribution(2)) == {a: pytest.approx(1 / 3), b: pytest.approx(2 / 3)}
    h.observe("p3", c)  # over capacity: the least popular shape goes
    assert set(h.weights) == {b, c}
    assert [s for s, _ in h.distribution(1)] == [c]
    # a GPU-model constraint keeps its most popular shape even outside the top classes
    t4 = TaskShape(1, 0, 1, 10, 10, 0, ("T4",), None)
    h = WorkloadHistogram(capacity=8, half_life=1e9)
    for i, s in enumerate([a, a, a, b, b, t4]):
        h.observe(f"q{i}", s)
    assert dict(h.distribution(1)) == {a: pytest.approx(3 / 4), t4: pytest.approx(1 / 4)}


def test_workload_argument_errors_name_the_field():
    def parse(workload):
        return DeviceShareArgs.parse(Arguments({"deviceshare.FragmentationWorkload": workload}, "deviceshare"))

    assert parse([half(50)]).frag_workload[0][0].cores == 50
    with pytest.raises(ArgumentError, match=r"FragmentationWorkload\[0\]\.vgpuCores"):
        parse([{"vgpuNumber": 1, "vgpuCores": 150, "weight": 1}])
    with pytest.raises(ArgumentError, match=r"FragmentationWorkload\[1\]\.weight: required"):
        parse([half(50), {"vgpuNumber": 1}])
    with pytest.raises(ArgumentError, match=r"FragmentationWorkload\[0\]\.cores: unknown field"):
        parse([{"cores": 1, "weight": 1}])
    with pytest.raises(ArgumentError, match=r"FragmentationWorkload\[0\]\.cpu: expected a quantity"):
        parse([{"cpu": "lots", "weight": 1}])
    with pytest.raises(ArgumentError, match="FragmentationClasses: expected >= 1"):
        DeviceShareArgs.parse(Arguments({"deviceshare.FragmentationClasses": 0}, "deviceshare"))
    with pytest.raises(ArgumentError, match="FragmentationScarcityWeight: expected >= 0"):
        DeviceShareArgs.parse(Arguments({"deviceshare.FragmentationScarcityWeight": -1}, "deviceshare"))


def test_memoised_reasons_name_each_node():
    """Two nodes in the same state share the memoised verdict, but each reason names its own node."""
    c = conf("fragmentation", [half(50)])
    cache = Cache(devices=device_builder(c, {}))
    for n in ("n1", "n2"):
        cache.add_node(node(n, 1))
    _, p = pod("two", 50)
    p["spec"]["containers"][0]["resources"]["limits"]["volcano.sh/vgpu-number"] = "2"
    task = new_task_info(p)
    d1, d2 = (cache.nodes[n].devices["hamivgpu"] for n in ("n1", "n2"))
    d1.family.scorer = FragmentationScorer(FragmentationModel([(TaskShape(0, 0, 1, 50, 101, 5000, None, None), 1)]), 1)
    d1.node, d2.node = cache.nodes["n1"], cache.nodes["n2"]
    req = d1.family.request(task)
    first, second = d1.filter(task, req, "fragmentation"), d2.filter(task, req, "fragmentation")
    assert first.reason.endswith("no enough gpu cards on node n1")
    assert second.reason.endswith("no enough gpu cards on node n2")
    assert len(d1.family.scorer.memo) == 1  # the second came from the memo


def test_learned_model_keeps_the_rare_cpu_heavy_classes():
    """The default ``FragmentationClasses`` keeps the trace's long tail of shapes (openb's default list:
    151 shapes, the top 32 cover 87% of its pods).  Here 40 light 30% classes (1 CPU each) outrank one
    CPU-heavy 30% class (12 CPUs).  A node with 8 idle CPUs and a 70%-free card feeds every light class,
    not the heavy one: only a model that kept the heavy class counts the card as partly stranded, so a
    CPU-only task is steered off the CPU that keeps the card usable.  With the former default (32) the
    heavy class fell outside the model and the node looked whole."""
    h = WorkloadHistogram(half_life=1e9)
    light = [TaskShape(1000, i * 1024, 1, 30, 30, 0, None, None) for i in range(40)]
    heavy = TaskShape(12000, 0, 1, 30, 30, 0, None, None)
    n = 0
    for s in light:
        for _ in range(3):
            h.observe(f"l{n}", s)
            n += 1
    for i in range(2):
        h.observe(f"h{i}", heavy)
    classes = DeviceShareArgs.parse(Arguments({}, "deviceshare")).frag_classes
    dist = h.distribution(classes)
    assert heavy in dict(dist)
    gpus = (("NVIDIA-T4", 16384, 100, 1, 30, 4915),)
    f, free = FragmentationModel(dist, streams=1).node_frag(8000, 1 << 40, gpus)
    assert free == pytest.approx(0.7)
    assert f > 0
    assert FragmentationModel(h.distribution(32), streams=1).node_frag(8000, 1 << 40, gpus)[0] == 0
