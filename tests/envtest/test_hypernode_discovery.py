"""HyperNode discovery from node labels on the real API server (issue 18 item 4): ``vcsched run``'s
controllers, as the chart's ClusterRole allows, read Volcano's controller ConfigMap
(volcano-system/volcano-controller-configmap, key volcano-controller.conf) and keep HyperNodes labelled
volcano.sh/network-topology-source=label equal to what the nodes' labels describe, as Volcano's
hypernode controller does (its label source: discovery/label/label.go)."""

from __future__ import annotations

import asyncio

import pytest

from .conftest import Kube, VcschedRunner, forbidden_lines

pytestmark = pytest.mark.asyncio

HYPERNODES = "/apis/topology.volcano.sh/v1alpha1/hypernodes"
CM_PATH = "/api/v1/namespaces/volcano-system/configmaps/volcano-controller-configmap"
SOURCE = "volcano.sh/network-topology-source"
TOR, SPINE = "example.com/tor", "example.com/spine"

CONF = f"""networkTopologyDiscovery:
  - source: label
    enabled: true
    config:
      networkTopologyTypes:
        fabric:
          - nodeLabel: {SPINE}
          - nodeLabel: {TOR}
          - nodeLabel: kubernetes.io/hostname
"""


async def controller_conf(kube: Kube, text: str) -> None:
    if await kube.get(CM_PATH) is None:
        await kube.create({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "volcano-controller-configmap", "namespace": "volcano-system"},
                           "data": {"volcano-controller.conf": text}})
    else:
        await kube.patch(CM_PATH, {"data": {"volcano-controller.conf": text}})


async def fabric(kube: Kube) -> dict[tuple[int, str], tuple[list[str], str]]:
    """The discovered HyperNodes: (tier, label value) → (members by node or label value, name)."""
    found = await kube.list(HYPERNODES, labelSelector=f"{SOURCE}=label")
    value = {}
    for hn in found:
        labels = dict(hn["metadata"]["labels"])
        del labels[SOURCE]
        ((key, v),) = labels.items()
        assert hn["spec"]["tierName"] == key
        value[hn["metadata"]["name"]] = v
    return {(hn["spec"]["tier"], value[hn["metadata"]["name"]]):
            (sorted(value.get(n, n) for n in (m["selector"]["exactMatch"]["name"] for m in hn["spec"]["members"])),
             hn["metadata"]["name"])
            for hn in found}


def shaped(want: dict[tuple[int, str], list[str]]):
    async def probe(kube: Kube):
        got = await fabric(kube)
        return got if {k: v[0] for k, v in got.items()} == want else None
    return probe


async def relabel(kube: Kube, node: str, **labels: str | None) -> None:
    await kube.patch(f"/api/v1/nodes/{node}", {"metadata": {"labels": labels}})


async def test_hypernodes_follow_the_node_labels_and_leave_hand_made_ones_alone(kube: Kube, vcsched: VcschedRunner):
    by_hand = await kube.create({"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode",
                                 "metadata": {"name": "by-hand"},
                                 "spec": {"tier": 1, "members": [{"type": "Node",
                                                                  "selector": {"exactMatch": {"name": "n4"}}}]}})
    for i, tor in enumerate(["t0", "t0", "t1", "t1"]):
        await kube.node(f"n{i}", labels={TOR: tor, SPINE: "sp0"})
    await kube.node("n4")  # no topology labels: in no discovered HyperNode
    await controller_conf(kube, CONF)
    p = vcsched.start()

    # labelled nodes → two tors under one spine, named hypernode-fabric-tier<N>-<random>
    first = await kube.eventually(lambda: shaped({(1, "t0"): ["n0", "n1"], (1, "t1"): ["n2", "n3"],
                                                  (2, "sp0"): ["t0", "t1"]})(kube), "the fabric discovered")
    for (tier, _), (_, name) in first.items():
        assert name.startswith(f"hypernode-fabric-tier{tier}-")

    # relabelling a node moves it; the HyperNodes keep their names
    await relabel(kube, "n1", **{TOR: "t1"})
    moved = await kube.eventually(lambda: shaped({(1, "t0"): ["n0"], (1, "t1"): ["n1", "n2", "n3"],
                                                  (2, "sp0"): ["t0", "t1"]})(kube), "n1 moved to t1")
    assert {k: v[1] for k, v in moved.items()} == {k: v[1] for k, v in first.items()}

    # the last node of t0 leaves it: t0 goes, t2 comes; a node losing its tor label leaves the fabric
    await relabel(kube, "n0", **{TOR: "t2", SPINE: "sp1"})
    await relabel(kube, "n3", **{TOR: None})
    await kube.eventually(lambda: shaped({(1, "t1"): ["n1", "n2"], (1, "t2"): ["n0"], (2, "sp0"): ["t1"],
                                          (2, "sp1"): ["t2"]})(kube), "t0 deleted, t2 and sp1 made")

    # one of ours deleted by someone is made again
    current = await fabric(kube)
    await kube.delete(f"{HYPERNODES}/{current[(2, 'sp1')][1]}")
    await kube.eventually(lambda: _named_anew(kube, current[(2, "sp1")][1]), "sp1 made again")

    # a configuration that cannot be used: a Warning Event and a log line; the last one runs on
    await controller_conf(kube, "invalid yaml: :")
    (event, *_) = await kube.eventually(lambda: kube.events("volcano-system", reason="HyperNodeDiscoveryFailed",
                                                            kind="ConfigMap"), "a Warning Event on the ConfigMap")
    assert event["type"] == "Warning" and event["message"].startswith("failed to parse config: ")
    assert event["involvedObject"]["name"] == "volcano-controller-configmap"
    (record, *_) = await kube.eventually(lambda: p.logged("network topology discovery configuration refused"),
                                         "the refusal logged")
    assert record["level"] == "warning" and record["configmap"] == "volcano-system/volcano-controller-configmap"
    await relabel(kube, "n2", **{TOR: "t2"})
    await kube.eventually(lambda: shaped({(1, "t1"): ["n1"], (1, "t2"): ["n0", "n2"], (2, "sp0"): ["t1", "t2"],
                                          (2, "sp1"): ["t2"]})(kube), "discovery runs on with the last good conf")

    # ufm (hardware) named in a warning; the label source, disabled, leaves its HyperNodes
    await controller_conf(kube, CONF.replace("  - source: label\n    enabled: true",
                                             "  - source: ufm\n    enabled: true\n  - source: label\n"
                                             "    enabled: false"))
    (unsupported, *_) = await kube.eventually(
        lambda: kube.events("volcano-system", reason="HyperNodeDiscoverySourceUnsupported"), "ufm named")
    assert "source ufm is not supported" in unsupported["message"]
    await kube.eventually(lambda: p.logged("label discovery stopped; the HyperNodes it made stay"), "stopped")
    before = await fabric(kube)
    await relabel(kube, "n1", **{TOR: "t9"})
    await kube.node("n5", labels={TOR: "t5", SPINE: "sp0"})
    await asyncio.sleep(1.0)  # twenty times the discovery's gathering delay: long enough to have acted
    assert await fabric(kube) == before

    hand = await kube.get(f"{HYPERNODES}/by-hand")
    assert hand is not None and hand["metadata"]["resourceVersion"] == by_hand["metadata"]["resourceVersion"]
    assert p.alive()
    assert forbidden_lines(p) == []


async def _named_anew(kube: Kube, old: str) -> bool:
    got = await fabric(kube)
    return (2, "sp1") in got and got[(2, "sp1")][1] != old and got[(2, "sp1")][0] == ["t2"]
