"""The topology manager policies of the numa-aware plugin (plugins/numaaware/policy: policy.go,
policy_none.go, policy_best_effort.go, policy_restricted.go, policy_single_numa_node.go).

A hint is ``(mask, preferred)``: ``mask`` the NUMA nodes (a bit mask, bit ``i`` NUMA node ``i``) or
None for "any NUMA node", ``preferred`` whether it is one of the narrowest that fit.  A provider gives,
per resource, a list of hints (None: no preference; an empty list: no NUMA placement fits).  A policy
merges every provider's hints into the best one, as the kubelet's topology manager does, and says
whether the container is admitted:

- ``none``: no hint, always admitted (any topology policy Volcano does not know behaves so too);
- ``best-effort``: the best merged hint, always admitted;
- ``restricted``: the best merged hint, admitted only when it is preferred;
- ``single-numa-node``: the best merged hint of those on one NUMA node, admitted when preferred.
"""

from __future__ import annotations

from itertools import product

Hint = tuple[int | None, bool]
# a provider's answer: resource → hints (None: no preference for that resource); None: no preference at all
ProviderHints = dict[str, list[Hint] | None] | None

NONE = "none"
BEST_EFFORT = "best-effort"
RESTRICTED = "restricted"
SINGLE_NUMA_NODE = "single-numa-node"
POLICIES = (NONE, BEST_EFFORT, RESTRICTED, SINGLE_NUMA_NODE)

_ANY_PREFERRED: Hint = (None, True)
_ANY_NOT_PREFERRED: Hint = (None, False)


def narrower(a: int, b: int) -> bool:
    """``IsNarrowerThan``: fewer NUMA nodes, or as many and the lower-numbered ones."""
    ca, cb = a.bit_count(), b.bit_count()
    return a < b if ca == cb else ca < cb


def filter_providers_hints(providers: list[ProviderHints]) -> list[list[Hint]]:
    """``filterProvidersHints``: one list of hints per provider and resource; no preference becomes a
    preferred any-NUMA hint, no possible placement a non-preferred one."""
    out: list[list[Hint]] = []
    for hints in providers:
        if not hints:
            out.append([_ANY_PREFERRED])
            continue
        for resource_hints in hints.values():
            if resource_hints is None:
                out.append([_ANY_PREFERRED])
            elif not resource_hints:
                out.append([_ANY_NOT_PREFERRED])
            else:
                out.append(resource_hints)
    return out


def merge_filtered_hints(numa_nodes: list[int], filtered: list[list[Hint]]) -> Hint:
    """``mergeFilteredHints``: over every permutation of one hint per list, the AND of their masks (an
    any-NUMA hint counts as all NUMA nodes), preferred when all are; the best is a preferred one over a
    non-preferred one, then the narrowest.  Without any: all NUMA nodes, not preferred."""
    default = 0
    for n in numa_nodes:
        default |= 1 << n
    best_mask, best_preferred = default, False
    for permutation in product(*filtered):
        merged, preferred = default, True
        for mask, pref in permutation:
            if mask is not None:
                merged &= mask
            if not pref:
                preferred = False
        if merged == 0:
            continue
        if preferred and not best_preferred:
            best_mask, best_preferred = merged, True
            continue
        if not preferred and best_preferred:
            continue
        if narrower(merged, best_mask):
            best_mask, best_preferred = merged, preferred
    return best_mask, best_preferred


def filter_single_numa_hints(filtered: list[list[Hint]]) -> list[list[Hint]]:
    """``filterSingleNumaHints``: only preferred hints on one NUMA node (or any-NUMA preferred ones)."""
    return [[h for h in hints if h[1] and (h[0] is None or h[0].bit_count() == 1)] for hints in filtered]


def predicate(policy: str, numa_nodes: list[int], providers: list[ProviderHints]) -> tuple[Hint, bool]:
    """``GetPolicy(node).Predicate``: the best hint and whether the container is admitted, under the
    node's topology manager policy."""
    if policy == BEST_EFFORT:
        return merge_filtered_hints(numa_nodes, filter_providers_hints(providers)), True
    if policy == RESTRICTED:
        best = merge_filtered_hints(numa_nodes, filter_providers_hints(providers))
        return best, best[1]
    if policy == SINGLE_NUMA_NODE:
        best = merge_filtered_hints(numa_nodes, filter_single_numa_hints(filter_providers_hints(providers)))
        return best, best[1]
    return (None, False), True
