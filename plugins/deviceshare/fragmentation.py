"""The ``fragmentation`` SchedulePolicy for vGPU: Fragmentation Gradient Descent in the spirit of FGD
(Weng et al., USENIX ATC'23, "Beware of Fragmentation").

Fragmentation of a node under a workload distribution M (task shapes m with popularity p_m) is
F_n(M) = Σ p_m · F_n(m), where F_n(m) is the node's free GPU capacity that a task of shape m cannot use:

- m cannot run on the node at all (not enough CPU or memory, fewer usable GPUs than it asks, no GPU
  of an allowed model), or m asks no GPU: all the node's free GPU capacity;
- otherwise the free capacity of the GPUs m cannot use: for a fractional task, GPUs whose free share
  is below its request; for whole-GPU tasks, every partially used GPU.

(As FGD's simulator: ``GetNodePodFrag`` / ``NodeGpuShareFragAmount``.)  A GPU's free share is
min(free cores / 100, free memory / memory).  ``vcsched bench --trace`` reports this measure.

For GPU-sharing classes the policy asks one step more: not what one task of class m cannot use, but
what a stream of them cannot use.  The node's idle CPU and memory feed k_m such tasks, each taking d_m
of a GPU, so F_n(m) = free − min(free capacity m may use, k_m · d_m).  FGD alone sees a node with 8
free GPUs and 12 idle cores as whole for sharing tasks of 11 cores, and lets CPU-only tasks take the
CPU of half-used GPU nodes (on the openb trace 38 GPUs then ended idle on nodes with 1-3 idle cores);
with the stream, every core taken from GPUs that need it costs its share.  When the CPU feeds enough
tasks, the two measures agree.  Whole-GPU classes (and those asking memory in MiB without cores, whose
share depends on the card) keep FGD's measure: a stream of whole-GPU tasks as well left more GPUs
unallocated on every openb replay it changed (26 GPUs on the default trace, 22 shuffled, 32 on
multigpu50 shuffled).

Beyond FGD, a scarcity cost: FGD alone counts the free capacity of a GPU type that bound classes avoid
as fragment for them, so an unbound task "defragments" by filling the scarce types that the tasks
bound to them need (on the trace's gpuspec33 variant it then lost to binpack by 75%).  Each GPU in use
adds ``scarcity(type) × used share`` to F, where ``scarcity`` (below) is how much more the type is
wanted by the distribution than the average GPU (0 for every type when nothing is bound; weight
``FragmentationScarcityWeight``, 0 turns it off).

The policy places a task where F grows least: the node score is 100 × (1 − (ΔF + g) / (S (1 + c))),
where ΔF is the change of F caused by the placement, g the GPU capacity the task takes (ΔF ≥ −g, so
ΔF + g ∈ [0, free capacity × (1 + c)]), S the largest GPU count of a node in the session and c the
largest scarcity; inside the node, each vGPU goes to the GPU whose use grows F least.  The score is
not rounded (binpack/spread are, as in Volcano): whole points would merge placements that differ by
less than S/100 GPUs.  Tasks without vGPU request are scored too: their CPU and memory can leave a
node's GPUs unusable.

The distribution is either given (``deviceshare.FragmentationWorkload``) or learned online: every pod
the scheduler sees once is counted in a bounded, exponentially decaying histogram of shapes kept on
the vGPU device family (it outlives sessions).  Each session uses the top ``FragmentationClasses``
shapes plus the most popular shape of every GPU-model constraint outside them, renormalised; the model is rebuilt only when that distribution has drifted (total variation
> 5%), so the memo of node fragmentation by node state survives across sessions.

The model keeps the workload's long tail (``FragmentationClasses``, default 128; it was 32).  What
outlives a session is the learned distribution, and how a placement is priced against the tasks of
later sessions depends on it: a shape's CPU and memory decide how many of its tasks a node still
feeds (the stream measure above), so a rare CPU-heavy class is what says that a half-used card on a
node with little idle CPU is stranded.  On the Alibaba trace's default list (151 shapes, the top 32
cover 87% of the pods, the top 128 99.7%) the top 32 left out such classes, CPU-only and CPU-heavy
sharing tasks drained the CPU of nodes with free card capacity, and 34 nodes ended with 20-53% free
cards and under 4 idle CPUs while 47% tasks failed (8 nodes with 128 classes): 246.8 GPUs unallocated
at 100% demand against 230.7 with 128 classes (the offline yardstick: 229.5; docs/trace-study.md).

Speed: F is memoised by node state (CPU and memory reduced to the tasks of each class request they
feed, and the sorted GPU usage), a node's F before a placement is cached by node generation, and a task's
verdict and score on a node are memoised by (request, node state).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vcsched.api.node_info import NodeInfo
    from vcsched.api.task_info import TaskInfo
    from vcsched.framework.session import Session

PCT_UNSET = 101
# a GPU in a state key: (type, memory, number, used_num, used_core, used_mem)
GPUState = tuple[str, int, int, int, int, int]
FRAGMENTATION_CLASSES_DEFAULT = 128  # shape classes a session's model uses (see the module docstring)
DRIFT = 0.05  # rebuild the model when the learned distribution moved more than this (total variation)
MEMO_LIMIT = 1 << 18  # entries per memo before it is cleared


@dataclass(slots=True, frozen=True)
class TaskShape:
    """One task class of the workload distribution (per-vGPU request of its first container)."""

    milli_cpu: float
    memory: float  # bytes
    nums: int  # vGPUs in all (0: no GPU)
    cores: int  # percent of one GPU, per vGPU
    pct: int  # memory percentage per vGPU (101: unset, then memreq)
    memreq: int  # MiB per vGPU
    use_types: tuple[str, ...] | None  # upper-cased, as nvidia.com/use-gputype
    nouse_types: tuple[str, ...] | None


def free_share(g: GPUState) -> float:
    _, memory, _, _, used_core, used_mem = g
    if memory <= 0:
        return 0.0
    f = min((100 - used_core) / 100, (memory - used_mem) / memory)
    return f if f > 0 else 0.0


def gpu_share(s: TaskShape) -> float:
    """The share of one GPU a task class takes per vGPU: its cores, else its memory percentage."""
    return (s.cores if s.cores else (s.pct if s.pct != PCT_UNSET else 100)) / 100


def _type_ok(use: tuple[str, ...] | None, nouse: tuple[str, ...] | None, gpu_type: str) -> bool:
    if "NVIDIA" not in gpu_type:
        return False
    upper = gpu_type.upper()
    if use is not None:
        return any(t in upper for t in use)
    if nouse is not None:
        return not any(t in upper for t in nouse)
    return True


class FragmentationModel:
    """F_n(M) for node states under one distribution, memoised by state."""

    __slots__ = ("shapes", "weights", "cpu_only", "gkeys", "classes", "demands", "caps", "memo", "level_memo",
                 "gpu_memo", "_types", "capacity", "scarcity_weight", "scarcity", "max_scarcity")

    def __init__(self, distribution: list[tuple[TaskShape, float]], capacity: dict[str, int] | None = None,
                 scarcity_weight: float = 0.0, streams: int = 0) -> None:
        """``streams``: 0 for FGD's measure (what one task of a class cannot use); else the largest GPU
        count of a node, and F counts what a stream of a class's tasks cannot use (see the module)."""
        total = sum(w for _, w in distribution if w > 0)
        dist = [(s, w / total) for s, w in distribution if w > 0] if total > 0 else []
        self.shapes = {s: w for s, w in dist}
        self.cpu_only = sum(w for s, w in dist if s.nums == 0)
        gpu = [(s, w) for s, w in dist if s.nums > 0]
        # the distinct (CPU, memory) requests of the GPU classes; a node's level for each (``levels``) is
        # how many such tasks its idle CPU and memory hold
        demands: dict[tuple[float, float], int] = {}
        gkeys: dict[tuple, int] = {}
        classes = []
        for s, w in gpu:
            gk = (s.cores, s.pct, s.memreq, s.use_types, s.nouse_types)
            gi = gkeys.setdefault(gk, len(gkeys))
            di = demands.setdefault((s.milli_cpu, s.memory), len(demands))
            # the share of a GPU one task of a GPU-sharing class takes; infinite (FGD's one-task measure)
            # under ``streams=0`` and for classes that take whole GPUs, or whose share ``gpu_share`` cannot
            # tell (memory in MiB without cores: its share depends on the card)
            share = gpu_share(s)
            demand = s.nums * share if streams and share < 1 else math.inf
            classes.append((w, gi, s.nums, di, demand))
        self.demands = list(demands)
        # a level stops counting where the node's GPUs bind first (FGD: 1, the task fits or not)
        smallest = [math.inf] * len(demands)
        for _, _, _, di, demand in classes:
            smallest[di] = min(smallest[di], demand)
        self.caps = [math.ceil(streams / d) if 0 < d < math.inf else 1 for d in smallest]
        self.gkeys = list(gkeys)
        self.classes = classes
        self.weights = [w for _, w in dist]
        # F by (levels, GPU states); levels by idle (CPU, memory); what each class may use by GPU states
        self.memo: dict[tuple, tuple[float, float]] = {}
        self.level_memo: dict[tuple[float, float], tuple[int, ...]] = {}
        self.gpu_memo: dict[tuple[GPUState, ...], tuple[float, float, list[tuple[int, float]]]] = {}
        self._types: dict[tuple[int, str], bool] = {}
        self.capacity = dict(capacity or {})
        self.scarcity_weight = scarcity_weight
        self.scarcity = scarcity(gpu, self.capacity, scarcity_weight)
        self.max_scarcity = max(self.scarcity.values(), default=0.0)

    def distance(self, distribution: list[tuple[TaskShape, float]]) -> float:
        """Total variation distance between this model's distribution and another (normalised) one."""
        total = sum(w for _, w in distribution) or 1.0
        other = {s: w / total for s, w in distribution}
        keys = self.shapes.keys() | other.keys()
        return 0.5 * sum(abs(self.shapes.get(k, 0.0) - other.get(k, 0.0)) for k in keys)

    def levels(self, milli_cpu: float, memory: float) -> tuple[int, ...]:
        """How many tasks of each distinct (CPU, memory) request the idle CPU and memory hold (capped)."""
        hit = self.level_memo.get((milli_cpu, memory))
        if hit is not None:
            return hit
        out = []
        for (c, m), k in zip(self.demands, self.caps):
            if c > 0:
                k = min(k, int(milli_cpu // c))
            if m > 0:
                k = min(k, int(memory // m))
            out.append(k if k > 0 else 0)
        hit = tuple(out)
        remember(self.level_memo, (milli_cpu, memory), hit)
        return hit

    def node_frag(self, milli_cpu: float, memory: float, gpus: tuple[GPUState, ...]) -> tuple[float, float]:
        """(F, free GPU capacity) of a node with this idle CPU/memory and these GPUs (sorted states)."""
        lv = self.levels(milli_cpu, memory)
        key = (lv, gpus)
        hit = self.memo.get(key)
        if hit is not None:
            return hit
        view = self.gpu_memo.get(gpus)
        if view is None:
            view = self._gpu_view(gpus)
            remember(self.gpu_memo, gpus, view)
        hit = self._frag(lv, *view)
        remember(self.memo, key, hit)
        return hit

    def _usable(self, gi: int, g: GPUState) -> bool:
        cores, pct, memreq, use, nouse = self.gkeys[gi]
        gpu_type, memory, number, used_num, used_core, used_mem = g
        if number <= used_num:
            return False
        need = memory * pct // 100 if pct != PCT_UNSET else memreq
        if memory - used_mem < need or used_core + cores > 100:
            return False
        if (cores == 100 and used_num > 0) or (used_core == 100 and cores == 0):
            return False
        k = (gi, gpu_type)
        ok = self._types.get(k)
        if ok is None:
            ok = self._types[k] = _type_ok(use, nouse, gpu_type)
        return ok

    def _gpu_view(self, gpus: tuple[GPUState, ...]) -> tuple[float, float, list[tuple[int, float]]]:
        """What the GPUs offer, whatever the CPU: (free capacity, scarcity cost of the capacity in use,
        per GPU request (n GPUs it may use, free capacity on the others))."""
        frees = [free_share(g) for g in gpus]
        total = sum(frees)
        # the scarcity cost of the capacity in use (0 without a scarcity weight): see ``scarcity``
        reserved = 0.0
        if self.scarcity:
            sc = self.scarcity
            for g, f in zip(gpus, frees):
                reserved += (1.0 - f) * sc.get(g[0], 0.0)
        usable = []
        if total > 0:
            for gi in range(len(self.gkeys)):
                n = 0
                unusable = 0.0
                for g, f in zip(gpus, frees):
                    if self._usable(gi, g):
                        n += 1
                    else:
                        unusable += f
                usable.append((n, unusable))
        return total, reserved, usable

    def _frag(self, lv: tuple[int, ...], total: float, reserved: float,
              usable: list[tuple[int, float]]) -> tuple[float, float]:
        if total <= 0:
            return reserved, 0.0
        frag = self.cpu_only * total
        for w, gi, nums, di, demand in self.classes:
            k = lv[di]
            n, unusable = usable[gi]
            if k == 0 or n < nums:
                frag += w * total
                continue
            # the tasks use the GPUs they may use as far as the idle CPU and memory feed them
            # (FGD: demand is infinite, F is the unusable capacity)
            usable_free = total - unusable
            fed = k * demand
            frag += w * (total - (usable_free if usable_free < fed else fed))
        return frag + reserved, total


def remember(memo: dict, key: Any, value: Any) -> None:
    """memo[key] = value, the memo cleared first when it holds MEMO_LIMIT entries."""
    if len(memo) >= MEMO_LIMIT:
        memo.clear()
    memo[key] = value


def scarcity(classes: list[tuple[TaskShape, float]], capacity: dict[str, int], weight: float) -> dict[str, float]:
    """Per GPU type (register TYPE): how much more its capacity is wanted than the average GPU's.

    Every GPU class m (popularity p_m, demand d_m GPUs) is spread over the types it may use (A_m) in
    proportion to their capacity, so type k expects the demand ρ_k = Σ_{m: k ∈ A_m} p_m d_m / cap(A_m)
    per GPU.  A class that may use any type adds the same to every ρ_k; classes bound to few types
    raise theirs.  The excess (ρ_k − min ρ) / mean ρ, times ``weight``, is the cost of one GPU of type
    k in use, added to F: an unbound task then lands on the type bound tasks need least, and a task
    bound to several types on the least wanted one.  Empty when ``weight`` is 0 or the types are
    equally wanted.
    """
    if weight <= 0 or len(capacity) < 2:
        return {}
    total_cap = sum(capacity.values())
    rho = dict.fromkeys(capacity, 0.0)
    demand = 0.0
    for s, w in classes:
        share = s.cores if s.cores else (s.pct if s.pct != PCT_UNSET else 0)
        d = w * s.nums * share / 100
        allowed = [k for k in capacity if _type_ok(s.use_types, s.nouse_types, k)]
        cap = sum(capacity[k] for k in allowed)
        if d <= 0 or cap <= 0:
            continue
        demand += d
        for k in allowed:
            rho[k] += d / cap
    if demand <= 0:
        return {}
    mean = demand / total_cap
    low = min(rho.values())
    out = {k: weight * (r - low) / mean for k, r in rho.items() if r - low > 1e-9 * mean}
    return out


class WorkloadHistogram:
    """Task shapes the scheduler has seen, each pod once, with exponential decay and a size bound."""

    __slots__ = ("capacity", "half_life", "weights", "_inc", "seen", "seen_capacity")

    def __init__(self, capacity: int = 256, half_life: float = 2000.0, seen_capacity: int = 1 << 17) -> None:
        self.capacity = capacity
        self.half_life = half_life
        self.weights: dict[TaskShape, float] = {}
        self._inc = 1.0
        self.seen: dict[str, None] = {}
        self.seen_capacity = seen_capacity

    def observe(self, uid: str, shape: TaskShape) -> None:
        if uid in self.seen:
            return
        self.seen[uid] = None
        if len(self.seen) > self.seen_capacity:
            del self.seen[next(iter(self.seen))]
        # decay by growing the increment: every earlier count loses 2^(-1/half_life) per observation
        self.weights[shape] = self.weights.get(shape, 0.0) + self._inc
        self._inc *= 2.0 ** (1.0 / self.half_life)
        if self._inc > 1e100:
            self.weights = {s: w / self._inc for s, w in self.weights.items()}
            self._inc = 1.0
        if len(self.weights) > self.capacity:
            del self.weights[min(self.weights, key=self.weights.__getitem__)]

    def distribution(self, classes: int) -> list[tuple[TaskShape, float]]:
        """The ``classes`` most popular shapes, plus the most popular shape of every GPU-model constraint
        not among them (tasks bound to a scarce model stay visible), renormalised."""
        ranked = sorted(self.weights.items(), key=lambda kv: -kv[1])
        top = ranked[:classes]
        constraints = {(s.use_types, s.nouse_types) for s, _ in top}
        for s, w in ranked[classes:]:
            if s.nums and (s.use_types, s.nouse_types) not in constraints:
                constraints.add((s.use_types, s.nouse_types))
                top.append((s, w))
        total = sum(w for _, w in top)
        return [(s, w / total) for s, w in top] if total > 0 else []


@dataclass(slots=True)
class FragContext:
    """One task on one node: the node's idle CPU/memory after the task, its state and F before."""

    milli_cpu: float
    memory: float
    before: tuple[int, int]  # CPU/memory levels before
    gpus: tuple[GPUState, ...]
    f_before: float
    t_before: float


class FragmentationScorer:
    """The policy's per-session view: the model, the score scale, per-node caches and the score memo."""

    __slots__ = ("model", "scale", "span", "nodes", "memo")

    def __init__(self, model: FragmentationModel, scale: int) -> None:
        self.model = model
        self.scale = max(scale, 1)
        # the largest ΔF + g: a node's whole free capacity, plus the scarcity cost of using it
        self.span = self.scale * (1.0 + model.max_scarcity)
        self.nodes: dict[str, tuple[int, tuple[int, int], tuple[GPUState, ...], float, float]] = {}
        self.memo: dict[tuple, Any] = {}

    def before(self, node: "NodeInfo", devices) -> tuple[tuple[int, int], tuple[GPUState, ...], float, float]:
        """(levels, GPU states, F, free) of the node as it is, cached by node generation."""
        hit = self.nodes.get(node.name)
        if hit is not None and hit[0] == node.generation:
            return hit[1], hit[2], hit[3], hit[4]
        idle = node.idle
        gpus = devices.gpu_key() if devices is not None else ()
        f, t = self.model.node_frag(idle.milli_cpu, idle.memory, gpus)
        levels = self.model.levels(idle.milli_cpu, idle.memory)
        self.nodes[node.name] = (node.generation, levels, gpus, f, t)
        return levels, gpus, f, t

    def context(self, task: "TaskInfo", node: "NodeInfo", devices) -> FragContext:
        levels, gpus, f, t = self.before(node, devices)
        idle = node.idle
        if task.uid in node.tasks:  # allocate: the node already counts the task
            cpu, mem = idle.milli_cpu, idle.memory
        else:
            cpu, mem = idle.milli_cpu - task.resreq.milli_cpu, idle.memory - task.resreq.memory
        return FragContext(cpu, mem, levels, gpus, f, t)

    def score(self, ctx: FragContext, gpus_after: tuple[GPUState, ...]) -> float:
        """100 × (1 − (ΔF + g) / (S × (1 + largest scarcity))), clamped to [0, 100]."""
        f, t = self.model.node_frag(ctx.milli_cpu, ctx.memory, gpus_after)
        return self.growth_score(f - ctx.f_before + ctx.t_before - t)

    def growth_score(self, growth: float) -> float:
        """The score of a placement that grows F + used capacity by ``growth`` GPUs (ΔF + g)."""
        g = growth / self.span
        return 100.0 * (1.0 - min(max(g, 0.0), 1.0))

    def key(self, ctx: FragContext, request: Any) -> tuple:
        """Memo key of a task's verdict and score on a node: request, levels before and after, GPU states."""
        return (request, ctx.before, self.model.levels(ctx.milli_cpu, ctx.memory), ctx.gpus)

    def no_device_score(self, task: "TaskInfo", node: "NodeInfo", devices) -> float:
        """A task that asks no vGPU: its CPU and memory may still leave the node's GPUs unusable."""
        if devices is None:
            return 100.0  # no GPU, no fragmentation
        ctx = self.context(task, node, devices)
        k = self.key(ctx, None)
        hit = self.memo.get(k)
        if hit is None:
            hit = self.score(ctx, ctx.gpus)
            self.remember(k, hit)
        return hit

    def remember(self, key: tuple, value: Any) -> None:
        remember(self.memo, key, value)


def shape_of(task: "TaskInfo", request: Any) -> TaskShape:
    """The class of a task: CPU, memory and its vGPU request (None: no GPU)."""
    r = task.resreq
    if request is None:
        return TaskShape(r.milli_cpu, r.memory, 0, 0, 0, 0, None, None)
    first = request.containers[0]
    return TaskShape(r.milli_cpu, r.memory, sum(c.nums for c in request.containers), first.cores, first.pct,
                     first.memreq, request.use_types, request.nouse_types)


def open_session(family, ssn: "Session", given: tuple[tuple[TaskShape, float], ...], classes: int,
                 half_life: float, scarcity_weight: float = 0.0) -> FragmentationScorer:
    """Learn from the session's pods (unless a distribution is given), then the session's scorer.

    The family keeps the histogram and the scorer (model and memo) across sessions; the scorer is
    rebuilt when the distribution drifted, the cluster's largest node or its GPU count per type changed,
    or the scarcity weight did (a reloaded conf).
    """
    hist = family.workload
    hist.half_life = half_life
    if given:
        dist = list(given)
    else:
        for job in ssn.jobs.values():
            for task in job.tasks.values():
                if task.uid not in hist.seen:
                    hist.observe(task.uid, shape_of(task, family.request(task)))
        dist = hist.distribution(classes)
    scale = 1
    capacity: dict[str, int] = {}
    for node in ssn.node_list:
        d = node.devices.get(family.key)
        if d is not None:
            d.node = node
            scale = max(scale, len(d.devices))
            for g in d.devices:
                capacity[g.type] = capacity.get(g.type, 0) + 1
    scorer = family.scorer
    if (scorer is None or scorer.scale != scale or scorer.model.capacity != capacity
            or scorer.model.scarcity_weight != scarcity_weight or scorer.model.distance(dist) > DRIFT):
        scorer = FragmentationScorer(FragmentationModel(dist, capacity, scarcity_weight, streams=scale), scale)
    else:
        scorer.nodes = {}  # node objects are the session's; states are re-read once per session
    family.scorer = scorer
    return scorer
