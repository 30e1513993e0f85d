"""Look-ahead for the ``fragmentation`` policy (vcsched's own): place the session's pending tasks on
paper first, largest first, then steer each task to its planned node and cards when the allocate
action reaches it (``deviceshare.FragmentationLookahead``, default on).

Volcano's allocate places jobs one at a time in job order (priority, then creation), and a placement
policy only ranks nodes for the task at hand; yet the session's batch is known when it opens.  At
session open the policy plans it: every pending task it can model (no device request, or a vGPU
request without UUID lists, podgroup spread, exclusivity rules or a sharing mode; with or without a
device topology policy, ``required`` or ``preferred``),
in order of job priority, then those naming GPU models before the others, then GPU demand (cards ×
share per card, largest first), then CPU, then job order.  Each goes to the node where the policy's
own score (fragmentation.py: the growth of F) is best on the planned cluster, the first such node in
node order, and inside the node to the cards the
allocation itself would rank first (``VGPUDevices._frag_order``).  When the allocate action reaches a
planned task, it scores 100 on its planned node and its other candidates keep the policy's score ×
``OFF_PLAN`` (< 100), so the planned node wins while it is feasible; there its planned cards come
first.  Any subset of the planned placements is feasible (every resource is additive), so the tasks
find their planned nodes whatever order they come in.  The plan ignores what it does not model (other
plugins' predicates, pod limits): a task whose planned node turned infeasible is placed by the score.

**Device topology** (issue 24, topology.py): a pod with a topology policy is planned as the allocation
places it.  A multi-card container on a node with NVLink groups / HCCS domains gets ``topology.choose``
over the cards in the policy's order (the tightest domain that holds it; ``required`` never split,
``preferred`` split only where no domain of the node can hold it) and the node score adds
``topology.placement_score``, so the plan puts it, largest first, on the node whose domain it fills
best and, when some node's domain can hold it, inside one.  A one-card container takes the card whose
growth of F plus ``topology.single_score`` is best: off an untouched domain the session's biggest
pending topology request (``pending_cards``) needs, when the node has another card.  The allocation
follows the plan: the planned node scores 100 (the others at most 99, the policy's score, up to 200
for a topology pod, brought to 0..100), and the planned cards come first
(``topology.planned_choice`` for a multi-card container, the card order for a one-card one).

Largest first is what best-fit decreasing gains over arrival order: whole cards are taken while whole
cards are left, and a batch's shares pair up before a late arrival finds only slivers.

**Holding back** (``deviceshare.FragmentationHoldBack``, default on): a task the plan found no room
for, because tasks planned before it took the room, would take room planned for them.  The policy
keeps it pending this session (its predicate fails on every node, the reason says why) when every
task planned before it is of its queue (the room goes to that queue's larger tasks, never to another
queue's) and its job needs no other task to start (minAvailable ≤ 1: a gang is never broken up).  It
is tried again next session.  A task planned before it has an equal or higher priority.

Speed: each task is scored once per node state (request, CPU and memory levels before and after, GPU
states: the policy's own memo key), so nodes in the same state cost one dictionary look-up.  A planned
task's node scores are its own, so it does not share the node search's work with tasks of its shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from vcsched.api.types import TaskStatus

from . import topology
from .fragmentation import PCT_UNSET, FragmentationScorer, remember
from .topology import CardTopology

if TYPE_CHECKING:
    from vcsched.framework.session import Session

# a planned task's score on the nodes other than its planned one, as a factor of the policy's score
OFF_PLAN = 0.99
HELD_REASON = ("held back by the fragmentation policy's look-ahead: the GPUs this task fits are planned "
               "for larger tasks of its queue this session (deviceshare.FragmentationHoldBack)")
# a card in the plan: [type, memory, number, used_num, used_core, used_mem, index]
# the plan's ranking of a placement that keeps each multi-card container of a topology pod inside one
# domain, above any that splits one: a preferred pod is split only where no node has a domain for it
WHOLE = 1000.0
TYPE, MEMORY, NUMBER, USED_NUM, USED_CORE, USED_MEM, INDEX = range(7)


@dataclass(slots=True)
class SessionPlan:
    """Where the session's planned tasks go (task uid → node name, card indices), and who waits."""

    placed: dict[str, tuple[str, frozenset[int]]] = field(default_factory=dict)
    unplaced: set[str] = field(default_factory=set)  # modelled, but the plan found no room
    held: set[str] = field(default_factory=set)  # of those, kept pending this session (hold-back)
    # the policy's highest node score of a planned task, where it is above 100 (a device-topology
    # request: the fragmentation score plus up to 100 per container for its cards' placement)
    ceiling: dict[str, float] = field(default_factory=dict)

    def node_of(self, uid: str) -> str | None:
        hit = self.placed.get(uid)
        return hit[0] if hit is not None else None

    def cards(self, uid: str, node: str) -> frozenset[int] | None:
        """The card indices planned for the task on this node (None: not planned here)."""
        hit = self.placed.get(uid)
        return hit[1] if hit is not None and hit[0] == node else None

    def adjust(self, uid: str, node: str, score: float) -> float:
        """The policy's node score for a task, steered by the plan: 100 on the planned node, elsewhere
        the policy's score brought to 0..100 (its ceiling) × OFF_PLAN."""
        hit = self.placed.get(uid)
        if hit is None:
            return score
        if hit[0] == node:
            return 100.0
        top = self.ceiling.get(uid)
        return score * OFF_PLAN if top is None else score * OFF_PLAN * 100.0 / top


class PlanNode:
    """A node as the plan sees it: idle CPU and memory, and its GPUs (none for a node without vGPU);
    ``topo``: its cards' topology (topology.py), ``layout``: a key of its topology and of which card is
    in which state, ``domains``: the same up to the order of the domains and of the cards inside each
    (what a one-card request's score depends on); both None without topology.  ``states`` (shared by
    the plan's nodes) numbers the GPU states, so that the memo's keys are small: ``gid`` the GPU states,
    ``lid`` with the layout, ``did`` with the domains."""

    __slots__ = ("name", "milli_cpu", "memory", "cards", "gpus", "topo", "topo_key", "layout", "domains",
                 "states", "gid", "lid", "did")

    def __init__(self, name: str, milli_cpu: float, memory: float, cards: list[list[Any]],
                 topo: CardTopology | None = None, topo_key: int = -1, states: dict | None = None) -> None:
        self.name = name
        self.milli_cpu = milli_cpu
        self.memory = memory
        self.cards = cards
        self.topo = topo
        self.topo_key = topo_key
        self.states = states if states is not None else {}
        self.refresh()

    def key(self) -> tuple:
        """The GPU states as ``VGPUDevices.gpu_key`` has them (sorted)."""
        return tuple(sorted(tuple(c[:INDEX]) for c in self.cards))

    def refresh(self) -> None:
        states = self.states
        gpus = self.gpus = self.key()
        self.gid = states.setdefault(gpus, len(states))
        topo = self.topo
        if topo is None:
            self.layout = self.domains = None
            self.lid = self.did = self.gid
            return
        cards = self.cards
        self.layout = (self.topo_key, tuple((c[USED_NUM], c[USED_CORE], c[USED_MEM]) for c in cards))
        self.domains = (self.topo_key, tuple(sorted(tuple(sorted(tuple(cards[p][:INDEX]) for p in dom))
                                                    for dom in topo.domains)))
        self.lid = states.setdefault((gpus, self.layout), len(states))
        self.did = states.setdefault((gpus, self.domains), len(states))

    def copy(self) -> "PlanNode":
        return PlanNode(self.name, self.milli_cpu, self.memory, [list(c) for c in self.cards], self.topo,
                        self.topo_key, self.states)


def _memreq(card: list[Any], c) -> int:
    return card[MEMORY] * c.pct // 100 if c.pct != PCT_UNSET else c.memreq


def _usable(card: list[Any], c, req, type_ok: Callable[[Any, str], bool]) -> bool:
    """Can one vGPU of container request ``c`` go on the card (``VGPUDevices._fit``'s checks)?"""
    if card[NUMBER] <= card[USED_NUM] or card[MEMORY] - card[USED_MEM] < _memreq(card, c):
        return False
    if card[USED_CORE] + c.cores > 100:
        return False
    if (c.cores == 100 and card[USED_NUM] > 0) or (card[USED_CORE] == 100 and c.cores == 0):
        return False
    return type_ok(req, card[TYPE])


def _take(card: list[Any], c) -> None:
    card[USED_NUM] += 1
    card[USED_CORE] += c.cores
    card[USED_MEM] += _memreq(card, c)


def place(scorer: FragmentationScorer, node: PlanNode, req, cpu: float, mem: float,
          type_ok: Callable[[Any, str], bool], pending: int = 0
          ) -> tuple[float, tuple[tuple[int, ...], ...]] | None:
    """(the policy's node score, per container the positions of its cards) of a task on the node, or
    None when its vGPUs do not fit (CPU and memory are the caller's check).

    Each container's cards are ranked once by F after one vGPU lands there (index order on ties), as
    ``VGPUDevices._frag_order`` ranks them.  A request without device topology takes them in that order,
    as ``VGPUDevices._fit`` does under the policy.  A device-topology request (``required`` /
    ``preferred``) on a node with topology is placed as ``VGPUDevices._fit_topology`` would place it:
    a multi-card container gets ``topology.choose`` over the ranked cards (one domain when one can hold
    it, the tightest; required: never split) and scores ``topology.placement_score``; a one-card
    container takes the card with the best score, its growth of F plus ``topology.single_score``, which
    keeps whole the untouched domains a pending bigger request (``pending`` cards) needs.  The allocation
    follows: the planned cards come first.  On a node without topology a multi-card container scores
    ``topology.no_topology_score``, as there.
    """
    model = scorer.model
    cpu_after, mem_after = node.milli_cpu - cpu, node.memory - mem
    f_before, t_before = model.node_frag(node.milli_cpu, node.memory, node.gpus)
    if req is None:
        f, t = model.node_frag(cpu_after, mem_after, node.gpus)
        return scorer.growth_score(f - f_before + t_before - t), ()
    policy = req.topology
    topo = node.topo if policy else None
    cards = [list(c) for c in node.cards]
    picks = []
    tscore = 0.0
    for c in req.containers:
        if c.nums > len(cards):
            return None
        states = [tuple(x[:INDEX]) for x in cards]
        ranked = []
        for i, x in enumerate(cards):
            if not _usable(x, c, req, type_ok):
                continue
            after = list(states)
            after[i] = (x[TYPE], x[MEMORY], x[NUMBER], x[USED_NUM] + 1, x[USED_CORE] + c.cores,
                        x[USED_MEM] + _memreq(x, c))
            f, t = model.node_frag(cpu_after, mem_after, tuple(sorted(after)))
            ranked.append((f, x[INDEX], i, t))
        ranked.sort()
        taken: list[int] = []
        if policy and c.nums > 1 and topo is not None:
            positions = [x[1] for x in ranked]
            choice = topology.choose(topo, positions, c.nums, policy)
            if choice is None:
                return None
            tscore += topology.placement_score(topo, choice, positions, c.nums, pending, policy)
            chosen = set(choice.cards)
            order = [i for _, index, i, _ in ranked if index in chosen]
        elif policy and c.nums == 1:
            untouched = [x[INDEX] for x in cards if x[USED_NUM] == 0]
            best = None
            for f, index, i, t in ranked:
                keep = topology.single_score(topo, index, untouched, pending, policy)
                value = scorer.growth_score(f - f_before + t_before - t) + keep
                if best is None or value > best[0]:
                    best = (value, i, keep)
            order = [best[1]] if best is not None else []
            tscore += best[2] if best is not None else 0.0
        else:
            if policy and c.nums > 1:
                tscore += topology.no_topology_score(policy)
            order = [i for _, _, i, _ in ranked]
        for i in order:
            if len(taken) == c.nums:
                break
            if _usable(cards[i], c, req, type_ok):
                _take(cards[i], c)
                taken.append(i)
        if len(taken) < c.nums:
            return None
        picks.append(tuple(taken))
    f, t = model.node_frag(cpu_after, mem_after, tuple(sorted(tuple(x[:INDEX]) for x in cards)))
    return scorer.growth_score(f - f_before + t_before - t) + tscore, tuple(picks)


def plannable(req) -> bool:
    """Requests the plan models: none (CPU and memory only), or vGPUs without UUID lists, podgroup
    spread, exclusivity rules or a sharing mode; device topology ``required`` or ``preferred`` (not HAMi's
    ``pairscore``, which scores no node)."""
    if req is None:
        return True
    return not (req.allow or req.deny or req.group or req.rules or req.mode is not None
                or req.topology not in ("", topology.REQUIRED, topology.PREFERRED))


def ceiling(req) -> float | None:
    """The policy's highest node score for a device-topology request (None: 100)."""
    if req is None or not req.topology:
        return None
    return 100.0 * (1 + len(req.containers))


def demand(req) -> float:
    """GPU demand of a request in cards: Σ vGPUs × share per vGPU (cores, else memory percentage)."""
    if req is None:
        return 0.0
    total = 0.0
    for c in req.containers:
        share = c.cores if c.cores else (c.pct if c.pct != PCT_UNSET else 100)
        total += c.nums * share / 100
    return total


def constrained(req) -> bool:
    """Does the request name GPU models (use-gputype / nouse-gputype)?  Such tasks are planned before
    the others of their priority: a task any card suits must not take the cards only they can use."""
    return req is not None and (req.use_types is not None or req.nouse_types is not None)


def plan_order(entry: tuple) -> tuple:
    """The plan's order: (−job priority, GPU models named first, −GPU demand, −CPU, job order)."""
    return entry[:5]


def _single(job) -> bool:
    """Does the job start with one task (minAvailable ≤ 1)?  Only such tasks are held back."""
    return getattr(job, "min_available", 1) <= 1


def _score_on(n: PlanNode, memo: dict, scorer: FragmentationScorer, req, rid: tuple[int, int], cpu: float,
              mem: float, type_ok: Callable[[Any, str], bool], pending: int = 0) -> float:
    """The task's score on the node, -1 where it does not fit; memoised by node state (for a
    device-topology request on a node with topology, by which card is in which state too).  ``rid``:
    (the request's number in the plan, ``_shape_kind``)."""
    if n.milli_cpu < cpu or n.memory < mem or (req is not None and not n.cards):
        return -1.0
    model = scorer.model
    number, kind = rid
    key = (number, model.levels(n.milli_cpu, n.memory), model.levels(n.milli_cpu - cpu, n.memory - mem),
           n.gid if kind == 0 else (n.did if kind == 1 else n.lid))
    hit = memo.get(key)
    if hit is None:
        out = place(scorer, n, req, cpu, mem, type_ok, pending)
        hit = -1.0 if out is None else out[0] + (WHOLE if _multi(req) and _whole(n, out[1]) else 0.0)
        remember(memo, key, hit)
    return hit


def _shape_kind(req) -> int:
    """What a request's score depends on beyond the GPU states: 0 nothing (no device topology), 1 the
    domains' states (one card: the best card's score, whatever their order), 2 which card is in which
    state."""
    if req is None or not req.topology:
        return 0
    return 1 if len(req.containers) == 1 and req.containers[0].nums == 1 else 2


def _multi(req) -> bool:
    """A topology request with a container of two cards or more (ranked by ``_whole`` in the plan)."""
    return req is not None and bool(req.topology) and any(c.nums > 1 for c in req.containers)


def _whole(n: PlanNode, picks: tuple[tuple[int, ...], ...]) -> bool:
    """Does every container of two cards or more lie inside one domain of the node's topology?"""
    topo = n.topo
    if topo is None:
        return False
    for taken in picks:
        if len(taken) > 1:
            doms = {topo.domain_of[n.cards[i][INDEX]] for i in taken}
            if len(doms) > 1 or -1 in doms:
                return False
    return True


def _fits(nodes: list[PlanNode], memo: dict, scorer: FragmentationScorer, task, req, rid: tuple[int, int],
          type_ok: Callable[[Any, str], bool], pending: int) -> bool:
    cpu, mem = task.resreq.milli_cpu, task.resreq.memory
    return any(_score_on(n, memo, scorer, req, rid, cpu, mem, type_ok, pending) >= 0 for n in nodes)


def plan_session(ssn: "Session", family, scorer: FragmentationScorer, request_of: Callable[[Any], Any],
                 type_ok: Callable[[Any, str], bool], hami_core: str, hold_back: bool = True) -> SessionPlan:
    """Plan the session's pending tasks (module docstring).  ``request_of(task)``: its vGPU request or
    None; ``type_ok(req, type)``: Volcano's GPU type check; ``hami_core``: the one mode planned.
    ``family.pending_cards`` (the most cards one container of a pending topology pod asks) is the
    request whose domains a one-card topology pod keeps whole, as in the node score."""
    pending = getattr(family, "pending_cards", 0)
    nodes: list[PlanNode] = []
    topo_keys: dict[tuple, int] = {}  # a small key per distinct topology (the memo's)
    states: dict[tuple, int] = {}  # a small key per distinct node state (the memo's)
    for node in ssn.node_list:
        d = node.devices.get(family.key)
        idle = node.idle
        if d is None:
            nodes.append(PlanNode(node.name, idle.milli_cpu, idle.memory, [], states=states))
        elif d.mode == hami_core and all(g.mig_template is None for g in d.devices):
            topo = getattr(d, "topology", None)
            k = -1 if topo is None else topo_keys.setdefault((topo.domains, topo.links), len(topo_keys))
            nodes.append(PlanNode(node.name, idle.milli_cpu, idle.memory, [
                [g.type, g.memory, g.number, g.used_num, g.used_core, g.used_mem, g.index] for g in d.devices],
                topo, k, states))
    # the cluster as the session opened: a task is held back only where it would have fit
    initial = [n.copy() for n in nodes]
    order = []
    for job in ssn.jobs.values():
        for task in job.tasks.values():
            if task.node_name or task.status != TaskStatus.Pending:
                continue
            req = request_of(task)
            if not plannable(req):
                continue
            order.append((-job.priority, not constrained(req), -demand(req), -task.resreq.milli_cpu, len(order),
                          task, req, job))
    order.sort(key=plan_order)
    plan = SessionPlan()
    memo: dict[tuple, Any] = {}
    requests: dict[Any, int] = {}  # a small key per distinct request (the memo's)
    queues: set[str] = set()  # the queues of the tasks planned so far
    for *_, task, req, job in order:
        cpu, mem = task.resreq.milli_cpu, task.resreq.memory
        rid = (requests.setdefault(req, len(requests)), _shape_kind(req))
        top = ceiling(req)
        best = None
        best_score = -1.0
        for n in nodes:
            hit = _score_on(n, memo, scorer, req, rid, cpu, mem, type_ok, pending)
            if hit > best_score:
                best, best_score = n, hit
                if hit >= (top or 100.0) + (WHOLE if _multi(req) else 0.0):
                    break
        if best is None:
            plan.unplaced.add(task.uid)
            if (hold_back and req is not None and queues <= {job.queue} and _single(job)
                    and _fits(initial, memo, scorer, task, req, rid, type_ok, pending)):
                plan.held.add(task.uid)
            continue
        queues.add(job.queue)
        _, picks = place(scorer, best, req, cpu, mem, type_ok, pending)
        best.milli_cpu -= cpu
        best.memory -= mem
        indices = set()
        for c, taken in zip(req.containers if req is not None else (), picks):
            for i in taken:
                _take(best.cards[i], c)
                indices.add(best.cards[i][INDEX])
        if indices:
            best.refresh()
        plan.placed[task.uid] = (best.name, frozenset(indices))
        if top is not None:
            plan.ceiling[task.uid] = top
    return plan
