"""Which cards of a node talk fast: connected domains and pair link quality (issue 24).

A multi-card pod trains at very different speeds on two GPUs joined by NVLink or two NPUs in one HCCS
domain than on cards that meet over PCIe or across sockets.  This module gives each node's device
ledger (vGPU, gpushare, HAMi Ascend) a ``CardTopology``: the node's connected domains (card positions)
and a pair link score, read from what the node publishes:

- **HAMi's pair scores**, ``hami.io/node-nvidia-score``, as HAMi's NVIDIA device plugin writes them with
  ``ENABLE_TOPOLOGY_SCORE=true`` (HAMi pkg/device/nvidia/calculate_score.go ``DeviceScore``,
  pkg/device/devices.go ``DecodePairScores``): a JSON list ``[{"uuid": "GPU-0", "score": {"GPU-1": 200,
  ...}}, ...]``.  A pair scores 10-60 by its PCIe path (cross socket 10 … same board 60) plus 100 per
  NVLink; the domains are the groups of cards joined by NVLink (a pair score >= 100).  vGPU nodes only:
  the scores are keyed by the UUIDs ``volcano.sh/node-vgpu-register`` lists.
- **Ascend HCCS** from what the HAMi ascend-device-plugin publishes in ``hami.io/node-register-<CW>``:
  the ``custominfo.NetworkID`` of each NPU when every NPU has one (HAMi's scheduler groups by it), else
  the server layout of the chip model as Huawei documents it and the MindCluster scheduler plugins
  (ascend-for-volcano ``module910x8``, ``module910bx8``, ``module910bx16``) encode it: Ascend910A 8 NPUs
  as 2 x 4 (0-3, 4-7); Ascend910B* 8 NPUs one domain, 16 NPUs 2 x 8 (0-7, 8-15); Ascend910C one HCCS
  domain whose NPUs pair into modules of two (index // 2, HAMi's ``computeBestCombination910C``).
- **vcsched's node annotation** ``vcsched.io/device-topology`` for anything else (any kind, gpushare's
  card ids being its indices "0", "1", …): a JSON object with ``domains`` (a list of card-id lists)
  and/or ``links`` (card id → {card id: score}, HAMi's scale: >= 100 a fast link).  It overrides the
  others for the cards it names.

Malformed or inconsistent topology (not JSON, unknown card ids, a card in two domains, an asymmetric
matrix, a negative score) is a warning naming the node and the field, and that kind on that node has
no topology: scheduling goes on as without it.  No topology, no change: Volcano's device order and
scores stay exactly Volcano's unless a pod (or the configuration) asks for topology.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from math import comb
from typing import Any

import structlog

log = structlog.get_logger("vcsched.deviceshare")

NODE_ANNOTATION = "vcsched.io/device-topology"
HAMI_SCORE = "hami.io/node-nvidia-score"
# the pod side: HAMi's policy annotation (a comma list; "topology-aware" asks for the best combination)
HAMI_POLICY = "hami.io/gpu-scheduler-policy"
HAMI_TOPOLOGY_AWARE = "topology-aware"
POD_ANNOTATION = "vcsched.io/device-topology-policy"
REQUIRED = "required"
PREFERRED = "preferred"
# HAMi's own rule (pkg/device/nvidia/device.go): the set with the highest total pair score, one card the
# worst connected; no node score (deviceshare.TopologyPolicy only: the bench's HAMi-style policy)
PAIRSCORE = "pairscore"
# Volcano's networkTopology words, accepted as the same
POLICY_WORDS = {REQUIRED: REQUIRED, PREFERRED: PREFERRED, "hard": REQUIRED, "soft": PREFERRED}
FAST_LINK = 100  # HAMi: one NVLink adds 100; PCIe paths score 10-60
IN_DOMAIN = 100  # the link score of two cards of one domain when only domains are known
ACROSS = 10  # and of two cards of different domains (HAMi's cross-socket PCIe)
# a node score for a topology pod on a node without published topology: below any set inside a domain
# (80 and more), above any split set (45 at most)
NO_TOPOLOGY_SCORE = 50.0
SEARCH_LIMIT = 3000  # card sets tried exhaustively for the best weakest link; beyond, greedy


@dataclass(slots=True, frozen=True)
class CardTopology:
    """One device kind's cards on one node: domains (positions in the ledger) and pair links."""

    ids: tuple[str, ...]  # card ids, by ledger position
    domains: tuple[tuple[int, ...], ...]
    domain_of: tuple[int, ...]  # position → domain index, -1 when in none
    links: tuple[tuple[int, ...], ...] | None  # pair scores; None: IN_DOMAIN / ACROSS
    source: str  # where it came from, for output and docs

    def link(self, a: int, b: int) -> int:
        if self.links is not None:
            return self.links[a][b]
        da = self.domain_of[a]
        return IN_DOMAIN if da >= 0 and da == self.domain_of[b] else ACROSS

    def domain_name(self, d: int) -> str:
        return f"d{d}"

    def weakest(self, cards: Sequence[int]) -> int | None:
        """The weakest pair link among ``cards``; None for fewer than two."""
        best = None
        for i in range(len(cards)):
            for j in range(i + 1, len(cards)):
                v = self.link(cards[i], cards[j])
                if best is None or v < best:
                    best = v
        return best

    def top_link(self) -> int:
        if self.links is None:
            return IN_DOMAIN
        return max((v for row in self.links for v in row), default=IN_DOMAIN) or IN_DOMAIN

    def describe(self, cards: Sequence[int]) -> str:
        """The domain a set of cards lies in (``d0``), or the domains it spans (``d0+d1``)."""
        doms = sorted({self.domain_of[c] for c in cards})
        return "+".join(self.domain_name(d) if d >= 0 else "-" for d in doms)


@dataclass(slots=True, frozen=True)
class Choice:
    """A card set for one container: positions, the domain (-1: split), its weakest link."""

    cards: tuple[int, ...]
    domain: int
    weakest: int | None


# -- the pod's policy --------------------------------------------------------------------------------


def pod_policy(annotations: Mapping[str, str], default: str) -> str:
    """``required``, ``preferred`` or "" (Volcano's placement): vcsched's annotation, else HAMi's
    ``topology-aware`` (preferred: HAMi takes the best combination and never leaves the pod pending),
    else the configured default (``deviceshare.TopologyPolicy``)."""
    raw = annotations.get(POD_ANNOTATION)
    if raw is not None:
        word = POLICY_WORDS.get(raw.strip().lower())
        if word is not None:
            return word
    hami = annotations.get(HAMI_POLICY)
    if hami and any(p.strip() == HAMI_TOPOLOGY_AWARE for p in hami.split(",")):
        return PREFERRED
    return default


def bad_pod_policy(annotations: Mapping[str, str]) -> str | None:
    raw = annotations.get(POD_ANNOTATION)
    if raw is None or raw.strip().lower() in POLICY_WORDS:
        return None
    return raw


# -- choosing cards ------------------------------------------------------------------------------------


def choose(topo: CardTopology, candidates: Sequence[int], n: int, policy: str) -> Choice | None:
    """The card set for ``n`` cards among ``candidates`` (positions that fit, in the kind's order).

    One domain when one can hold it: the domain left tightest (fewest free cards after), which keeps
    the roomier domains whole for bigger requests; inside it the set with the best weakest link.  Else,
    unless ``required``, the set with the best weakest link over the node (greedy from the largest
    domains when the sets are too many to try).  None when nothing fits.  ``pairscore``: HAMi's rule.
    """
    if n <= 0 or len(candidates) < n:
        return None
    if policy == PAIRSCORE:
        return _pair_score(topo, candidates, n)
    required = policy == REQUIRED
    by_domain: dict[int, list[int]] = {}
    loose: list[int] = []
    for c in candidates:
        d = topo.domain_of[c]
        if d >= 0:
            by_domain.setdefault(d, []).append(c)
        else:
            loose.append(c)
    best: tuple | None = None
    for d, cards in by_domain.items():
        if len(cards) < n:
            continue
        subset, weak = _best_subset(topo, cards, n)
        key = (len(cards) - n, -(weak if weak is not None else 1 << 30), d)
        if best is None or key < best[0]:
            best = (key, Choice(tuple(subset), d, weak))
    if best is not None:
        return best[1]
    if n == 1 and loose:
        return Choice((loose[0],), -1, None)
    if required:
        return None
    pool = list(candidates)
    if comb(len(pool), n) <= SEARCH_LIMIT:
        subset, weak = _best_subset(topo, pool, n)
    else:
        subset = []
        for cards in sorted(by_domain.values(), key=len, reverse=True) + [loose]:
            for c in cards:
                if len(subset) < n:
                    subset.append(c)
        weak = topo.weakest(subset)
    return Choice(tuple(subset), -1, weak)


def planned_choice(topo: CardTopology, candidates: Sequence[int], planned: Collection[int], n: int,
                   policy: str) -> Choice | None:
    """The cards the fragmentation policy's look-ahead planned for the pod (lookahead.py), as a Choice:
    the first ``n`` planned cards among ``candidates``, in their order; None when fewer than ``n`` of them
    are still candidates, or ``required`` and they span domains (then ``choose`` decides)."""
    cards = [c for c in candidates if c in planned][:n]
    if len(cards) < n:
        return None
    doms = {topo.domain_of[c] for c in cards}
    d = next(iter(doms)) if len(doms) == 1 else -1
    if d < 0 and n > 1 and policy == REQUIRED:
        return None
    return Choice(tuple(cards), d, topo.weakest(cards))


def _pair_score(topo: CardTopology, candidates: Sequence[int], n: int) -> Choice:
    """HAMi's ``computeWorstSingleCard`` / ``computeBestCombination``: one card, the one with the lowest
    total score to the other candidates; several, the combination with the highest total pair score
    (the first found on ties; HAMi tries them all, beyond SEARCH_LIMIT sets a greedy stands in)."""
    if n == 1:
        worst = min(candidates, key=lambda a: sum(topo.link(a, b) for b in candidates if b != a))
        return Choice((worst,), topo.domain_of[worst], None)
    if comb(len(candidates), n) <= SEARCH_LIMIT:
        best, best_total = None, -1
        for sub in combinations(candidates, n):
            total = sum(topo.link(sub[i], sub[j]) for i in range(n) for j in range(i + 1, n))
            if total > best_total:
                best, best_total = sub, total
        cards = list(best)
    else:
        cards = _greedy(topo, list(candidates), n)
    doms = {topo.domain_of[c] for c in cards}
    d = doms.pop() if len(doms) == 1 else -1
    return Choice(tuple(cards), d, topo.weakest(cards))


def _best_subset(topo: CardTopology, cards: list[int], n: int) -> tuple[list[int], int | None]:
    """The ``n`` of ``cards`` with the best weakest link (then the best total; first in order on ties)."""
    if n == 1 or len(cards) == n or (topo.links is None and len({topo.domain_of[c] for c in cards}) == 1):
        sub = cards[:n]
        return sub, topo.weakest(sub)
    if comb(len(cards), n) > SEARCH_LIMIT:
        sub = _greedy(topo, cards, n)
        return sub, topo.weakest(sub)
    best_key = None
    best: list[int] = cards[:n]
    for sub in combinations(cards, n):
        weak = topo.weakest(sub)
        total = sum(topo.link(sub[i], sub[j]) for i in range(n) for j in range(i + 1, n))
        key = (weak, total)
        if best_key is None or key > best_key:
            best_key, best = key, list(sub)
    return best, best_key[0] if best_key else None


def _greedy(topo: CardTopology, cards: list[int], n: int) -> list[int]:
    """Grow a set from each start card by its strongest link to the set; the best weakest link wins."""
    best, best_weak = cards[:n], topo.weakest(cards[:n])
    for start in cards:
        sub = [start]
        rest = [c for c in cards if c != start]
        while len(sub) < n:
            c = max(rest, key=lambda x: min(topo.link(x, s) for s in sub))
            sub.append(c)
            rest.remove(c)
        w = topo.weakest(sub)
        if best_weak is None or (w is not None and w > best_weak):
            best, best_weak = sub, w
    return best


def domains_line(topo: CardTopology, candidates: Sequence[int], n: int) -> str:
    """For a required request no domain holds: each domain's free cards (``d0 6 free (A,B,…), d1 2 free``)."""
    free: dict[int, list[str]] = {d: [] for d in range(len(topo.domains))}
    for c in sorted(candidates):
        d = topo.domain_of[c]
        if d >= 0:
            free[d].append(topo.ids[c])
    parts = []
    for d, ids in free.items():
        shown = ",".join(ids[:8]) + (",…" if len(ids) > 8 else "")
        parts.append(f"{topo.domain_name(d)} {len(ids)} of {len(topo.domains[d])} free"
                     + (f" ({shown})" if ids else ""))
    return (f"device topology required: no domain has {n} free cards ({'; '.join(parts)})")


# -- the node score -------------------------------------------------------------------------------------


KEEP = 20.0  # the node score part for keeping a domain a pending bigger request needs


def single_score(topo: CardTopology | None, card: int, untouched: Sequence[int], pending: int,
                 policy: str) -> float:
    """A one-card container: its card is chosen by the kind's own order (binpack, fragmentation…); the
    node score only keeps whole the domains a pending bigger request needs: KEEP unless ``card`` takes
    an untouched card of a domain that holds ``pending`` untouched cards and would not after."""
    if policy == PAIRSCORE:
        return 0.0
    if topo is None or pending <= 1 or card not in untouched:
        return KEEP
    d = topo.domain_of[card]
    if d < 0:
        return KEEP
    free = sum(1 for c in untouched if topo.domain_of[c] == d)
    return 0.0 if free >= pending > free - 1 else KEEP


def no_topology_score(policy: str) -> float:
    """The node score of a topology pod on a node without topology (none for ``pairscore``)."""
    return 0.0 if policy == PAIRSCORE else NO_TOPOLOGY_SCORE


def placement_score(topo: CardTopology, choice: Choice, candidates: Sequence[int], n: int,
                    pending: int, policy: str = PREFERRED) -> float:
    """0..100 for one container's card set on this node: 50 for its links (all of it inside one
    domain, else in proportion to its weakest link, at most half), 30 for how tightly it fills its
    domain, 20 unless it takes room a pending bigger request (``pending`` cards, 0: none) needs
    (a domain that could hold it and no longer can).  ``pairscore`` (HAMi's rule) scores no node."""
    if policy == PAIRSCORE:
        return 0.0
    if choice.domain >= 0 or n == 1:
        quality = 1.0
    else:
        quality = 0.5 * (choice.weakest or 0) / topo.top_link()
    if choice.domain >= 0:
        free = sum(1 for c in candidates if topo.domain_of[c] == choice.domain)
        fit = n / free if free else 1.0
    else:
        fit = 0.0
    keep = 1.0
    if pending > n:
        free_by: dict[int, int] = {}
        for c in candidates:
            d = topo.domain_of[c]
            if d >= 0:
                free_by[d] = free_by.get(d, 0) + 1
        taken: dict[int, int] = {}
        for c in choice.cards:
            d = topo.domain_of[c]
            if d >= 0:
                taken[d] = taken.get(d, 0) + 1
        if any(free_by.get(d, 0) >= pending > free_by.get(d, 0) - k for d, k in taken.items()):
            keep = 0.0
    return 50.0 * quality + 30.0 * fit + 20.0 * keep


# -- reading what nodes publish ---------------------------------------------------------------------------


class TopologyError(ValueError):
    """A malformed or inconsistent topology: ``field`` names the annotation and the place in it."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem


def _from_links(ids: Sequence[str], scores: Mapping[str, Mapping[str, int]], field: str,
                source: str) -> CardTopology:
    """A topology from pair scores (card id → card id → score): domains are the cards joined by fast links."""
    pos = {c: i for i, c in enumerate(ids)}
    n = len(ids)
    matrix = [[0] * n for _ in range(n)]
    for a, row in scores.items():
        if a not in pos:
            raise TopologyError(f"{field}[{a}]", f"unknown card id {a!r}")
        for b, v in row.items():
            if b not in pos:
                raise TopologyError(f"{field}[{a}][{b}]", f"unknown card id {b!r}")
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise TopologyError(f"{field}[{a}][{b}]", f"not a score (a whole number >= 0): {v!r}")
            if a != b:
                matrix[pos[a]][pos[b]] = v
    for i in range(n):
        for j in range(i + 1, n):
            if matrix[i][j] != matrix[j][i]:
                raise TopologyError(f"{field}[{ids[i]}][{ids[j]}]",
                                    f"asymmetric: {matrix[i][j]} one way, {matrix[j][i]} the other")
    # domains: connected groups of fast links, of two cards or more
    seen = [False] * n
    domains = []
    for i in range(n):
        if seen[i]:
            continue
        group, stack = [], [i]
        seen[i] = True
        while stack:
            a = stack.pop()
            group.append(a)
            for b in range(n):
                if not seen[b] and matrix[a][b] >= FAST_LINK:
                    seen[b] = True
                    stack.append(b)
        if len(group) > 1:
            domains.append(tuple(sorted(group)))
    return _topology(ids, domains, tuple(tuple(r) for r in matrix), source)


def _topology(ids: Sequence[str], domains: list[tuple[int, ...]], links, source: str) -> CardTopology:
    domain_of = [-1] * len(ids)
    for d, cards in enumerate(domains):
        for c in cards:
            domain_of[c] = d
    return CardTopology(tuple(ids), tuple(domains), tuple(domain_of), links, source)


def parse_hami_scores(raw: str, ids: Sequence[str]) -> CardTopology:
    """``hami.io/node-nvidia-score`` (``DecodePairScores``) for the node's vGPU cards."""
    try:
        doc = json.loads(raw)
    except ValueError as e:
        raise TopologyError(HAMI_SCORE, f"not JSON: {e}") from None
    if not isinstance(doc, list):
        raise TopologyError(HAMI_SCORE, "not a JSON list of {uuid, score}")
    scores: dict[str, dict[str, int]] = {}
    for i, e in enumerate(doc):
        if not isinstance(e, dict) or not isinstance(e.get("uuid", ""), str):
            raise TopologyError(f"{HAMI_SCORE}[{i}]", "not an object with a string uuid")
        row = e.get("score") or {}
        if not isinstance(row, dict):
            raise TopologyError(f"{HAMI_SCORE}[{i}].score", "not an object")
        uuid = e.get("uuid") or ""
        if uuid in scores:
            raise TopologyError(f"{HAMI_SCORE}[{i}].uuid", f"card {uuid!r} listed twice")
        scores[uuid] = row
    return _from_links(ids, scores, HAMI_SCORE, "hami.io/node-nvidia-score")


def parse_vcsched(raw: str, ids: Sequence[str]) -> CardTopology:
    """``vcsched.io/device-topology``: ``{"domains": [[id, …], …], "links": {id: {id: score}}}``."""
    try:
        doc = json.loads(raw)
    except ValueError as e:
        raise TopologyError(NODE_ANNOTATION, f"not JSON: {e}") from None
    if not isinstance(doc, dict) or not ({"domains", "links"} & doc.keys()):
        raise TopologyError(NODE_ANNOTATION, 'expected an object with "domains" and/or "links"')
    extra = sorted(set(doc) - {"domains", "links"})
    if extra:
        raise TopologyError(f"{NODE_ANNOTATION}.{extra[0]}", "unknown field")
    pos = {c: i for i, c in enumerate(ids)}
    domains: list[tuple[int, ...]] = []
    raw_domains = doc.get("domains")
    if raw_domains is not None:
        if not isinstance(raw_domains, list):
            raise TopologyError(f"{NODE_ANNOTATION}.domains", "not a list of card-id lists")
        owner: dict[str, int] = {}
        for d, cards in enumerate(raw_domains):
            if not isinstance(cards, list) or not cards:
                raise TopologyError(f"{NODE_ANNOTATION}.domains[{d}]", "not a non-empty list of card ids")
            group = []
            for k, c in enumerate(cards):
                where = f"{NODE_ANNOTATION}.domains[{d}][{k}]"
                if not isinstance(c, str):
                    raise TopologyError(where, f"not a card id (a string): {c!r}")
                if c not in pos:
                    raise TopologyError(where, f"unknown card id {c!r}")
                if c in owner:
                    raise TopologyError(where, f"card {c!r} is in two domains ({owner[c]} and {d})")
                owner[c] = d
                group.append(pos[c])
            domains.append(tuple(sorted(group)))
    links = doc.get("links")
    if links is not None:
        if not isinstance(links, dict) or not all(isinstance(r, dict) for r in links.values()):
            raise TopologyError(f"{NODE_ANNOTATION}.links", "not an object of card id → {card id: score}")
        topo = _from_links(ids, links, f"{NODE_ANNOTATION}.links", NODE_ANNOTATION)
        if raw_domains is None:
            return topo
        return _topology(ids, domains, topo.links, NODE_ANNOTATION)
    return _topology(ids, domains, None, NODE_ANNOTATION)


def ascend_layout(common_word: str, indexes: Sequence[int], networks: Sequence[float | None] | None
                  ) -> CardTopology | None:
    """HCCS domains of a HAMi Ascend kind's NPUs (positions in register order): by NetworkID when
    every NPU has one, else by the chip model's server layout; None when neither says anything."""
    n = len(indexes)
    ids = tuple(str(i) for i in range(n))  # replaced by the caller's ids
    if networks is not None and n and all(x is not None for x in networks):
        groups: dict[float, list[int]] = {}
        for p, net in enumerate(networks):
            groups.setdefault(net, []).append(p)
        return _topology(ids, [tuple(g) for g in groups.values()], None, "custominfo.NetworkID")
    if not common_word.startswith("Ascend910") or n < 2:
        return None
    # the cards' own indices when they are distinct, else their order in the register
    idx = list(indexes) if len(set(indexes)) == n else list(range(n))
    if common_word.startswith("Ascend910C"):
        links = tuple(tuple(0 if a == b else (2 * IN_DOMAIN if idx[a] // 2 == idx[b] // 2 else IN_DOMAIN)
                            for b in range(n)) for a in range(n))
        return _topology(ids, [tuple(range(n))], links, "Ascend910C: one HCCS domain, modules of 2")
    if common_word.startswith("Ascend910B"):
        size = 8
    else:
        size = 4  # Ascend910 / 910A: Atlas 800 (module910x8), 2 x 4
    groups2: dict[int, list[int]] = {}
    for p in range(n):
        groups2.setdefault(idx[p] // size, []).append(p)
    return _topology(ids, [tuple(g) for g in groups2.values()], None, f"{common_word}: HCCS {size} per domain")


def with_ids(topo: CardTopology, ids: Sequence[str]) -> CardTopology:
    return CardTopology(tuple(ids), topo.domains, topo.domain_of, topo.links, topo.source)


def attach(node: Mapping[str, Any], name: str, devices: Mapping[str, Any]) -> None:
    """Give each kind on the node that has card ids (``topology_inputs``) its ``topology``.

    vcsched's annotation goes to the kind whose cards it names; one naming no card of the node is
    a warning (unknown card ids).  A malformed source is a warning naming node and field, and the kind
    has no topology (the next source is not tried: the node said something and it was wrong)."""
    ann = (node.get("metadata") or {}).get("annotations") or {}
    own = ann.get(NODE_ANNOTATION)
    claimed = False
    for d in devices.values():
        inputs = getattr(d, "topology_inputs", None)
        if inputs is None:
            continue
        ids, hami_scores, hccs = inputs()
        d.topology = None
        try:
            if own is not None and _names_any(own, ids):
                claimed = True
                d.topology = parse_vcsched(own, ids)
                continue
            raw = ann.get(HAMI_SCORE) if hami_scores else None
            if raw is not None:
                d.topology = parse_hami_scores(raw, ids)
                continue
        except TopologyError as e:
            log.warning("malformed device topology: the node is treated as having no topology", node=name,
                        field=e.field, problem=e.problem)
            continue
        d.topology = with_ids(hccs, ids) if hccs is not None else None
    if own is not None and not claimed:
        log.warning("malformed device topology: the node is treated as having no topology", node=name,
                    field=NODE_ANNOTATION, problem="it names no card of this node (unknown card ids)")


def _names_any(raw: str, ids: Sequence[str]) -> bool:
    """Does vcsched's annotation concern this kind: it names one of its cards, or it cannot be read
    (then every kind reports it)."""
    try:
        doc = json.loads(raw)
    except ValueError:
        return True
    if not isinstance(doc, dict):
        return True
    known = set(ids)
    named: list[Any] = []
    for cards in doc.get("domains") or []:
        if isinstance(cards, list):
            named.extend(cards)
    links = doc.get("links")
    if isinstance(links, dict):
        named.extend(links.keys())
    named = [c for c in named if isinstance(c, str)]
    return not named or any(c in known for c in named)


# -- what simulate shows -----------------------------------------------------------------------------------


def layout(topo: CardTopology) -> dict[str, Any]:
    """A kind's topology for output: where it came from and each domain's cards."""
    return {"source": topo.source,
            "domains": {topo.domain_name(d): [topo.ids[c] for c in cards] for d, cards in enumerate(topo.domains)}}


def pod_cards(kind: str, devices: Any, uses: Sequence[Any]) -> dict[str, dict[str, Any]]:
    """``ns/name`` → {kind, cards, domain} for each pod holding two cards or more of this kind on the
    node (``uses``: the kind's ``describe()``, one entry a card in ledger order).  ``domain``: the
    domain its cards lie in (``d1``), the domains they span (``d0+d1``), or None without topology."""
    held: dict[str, list[int]] = {}
    for pos, u in enumerate(uses):
        for pod in u.pods:
            held.setdefault(pod, []).append(pos)
    topo = getattr(devices, "topology", None)
    out = {}
    for pod, positions in held.items():
        if len(positions) < 2:
            continue
        out[pod] = {"kind": kind, "cards": [uses[p].id for p in positions],
                    "domain": topo.describe(positions) if topo is not None else None}
    return out
