"""Queue trees under the capacity plugin, end to end: a team's deserved share lent and reclaimed, the
tree in simulate's output, and the queue webhook's hierarchy checks (issue 17)."""

from pathlib import Path

import pytest

from vcsched.cli import main

from .conftest import node, pod, podgroup

EXAMPLE = Path(__file__).resolve().parents[2] / "conf" / "examples" / "queue-tree.yaml"


def example_before_team_a() -> str:
    """The example's conf, node and queues, with eight of team-b's jobs pending and nothing of team-a's."""
    docs = EXAMPLE.read_text(encoding="utf-8").split("\n---\n")
    kept = [d for d in docs if "kind: Pod" not in d and "kind: PodGroup" not in d]
    jobs = "".join(podgroup(f"b-{i}", 1, queue="b-batch") + pod(f"b-{i}", cpu="1", group=f"b-{i}") for i in range(8))
    return "\n---\n".join(kept) + jobs


def placed(out, prefix: str) -> list[str]:
    return sorted(k for k, p in out["pods"].items() if k.startswith(f"default/{prefix}") and p["node"])


def test_an_idle_team_lends_its_deserved_share_but_not_its_guarantee(simulate):
    code, out = simulate(example_before_team_a())
    assert code == 0
    # team-b deserves 4 but borrows team-a's idle deserved share: 8 CPU less team-a's guarantee of 2
    assert len(placed(out, "b-")) == 6
    assert out["queues"]["b-batch"]["allocated"]["cpu"] == "6"
    assert out["queues"]["team-b"]["allocated"]["cpu"] == "6"
    assert out["queues"]["eng"]["allocated"]["cpu"] == "6"
    assert [k for k, p in out["pods"].items() if p["node"] is None] == ["default/b-6", "default/b-7"]


def test_the_team_takes_its_share_back_cycle_by_cycle(simulate):
    text = EXAMPLE.read_text(encoding="utf-8")
    # cycle 1: a-0 and a-1 bind on the free CPUs; reclaim evicts two of team-b's pods (b-batch is over its
    # deserved 4) and pipelines a-2 and a-3 onto what they release
    code, out = simulate(text, "--cycles", "1")
    assert code == 0
    assert placed(out, "a-") == ["default/a-0", "default/a-1"]
    assert sorted(out["evicted"]) == ["default/b-4", "default/b-5"]
    assert "once resource is released" in out["pods"]["default/a-2"]["reason"]
    # cycle 2: the pipelined pods bind; each team at its deserved share, nothing more is evicted
    code, out = simulate(text, "--cycles", "2")
    assert placed(out, "a-") == [f"default/a-{i}" for i in range(4)]
    code, out = simulate(text)
    assert code == 0
    assert len(out["evicted"]) == 2
    assert out["queues"]["team-a"]["allocated"]["cpu"] == "4"
    assert out["queues"]["team-b"]["allocated"]["cpu"] == "4"
    assert out["queues"]["eng"]["allocated"]["cpu"] == "8"


def test_simulate_reports_each_queue_in_the_tree(simulate):
    code, out = simulate(EXAMPLE.read_text(encoding="utf-8"))
    assert code == 0
    q = out["queues"]
    assert q["team-a"]["parent"] == "eng" and q["a-train"]["parent"] == "team-a" and q["eng"]["parent"] == "root"
    assert q["root"]["parent"] is None and q["default"]["parent"] == "root"
    assert q["team-a"]["guarantee"] == {"cpu": "2"}
    assert q["eng"]["capability"] == {"cpu": "8"}
    # deserved as capacity computed it: root's is the sum of its children's
    assert q["a-train"]["deserved"]["cpu"] == "4"
    assert q["root"]["deserved"]["cpu"] == "8"


def test_the_table_draws_the_tree(capsys):
    assert main(["simulate", "-f", str(EXAMPLE), "-o", "table"]) == 0
    text = capsys.readouterr().out
    lines = text[text.index("Queues:"):].splitlines()
    names = [line.split()[0] for line in lines[2:9]]
    assert names == ["root", "default", "eng", "team-a", "a-train", "team-b", "b-batch"]
    assert lines[5].startswith("    team-a ") and lines[6].startswith("      a-train ")


def queue(name: str, parent: str | None = None, spec: str = "") -> str:
    fields = ", ".join(f for f in (f"parent: {parent}" if parent else "", spec) if f)
    return f"""
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {{name: {name}}}
spec: {{{fields}}}
"""


@pytest.mark.parametrize("queues, expected", [
    (queue("a", "a"), "(Queue a): spec.parent: queue a cannot use itself as parent"),
    (queue("a", "nowhere"),
     '(Queue a): spec.parent: failed to get parent queue of queue a: queues.scheduling.volcano.sh "nowhere" not found'),
    (queue("a", "b") + queue("b", "a"), "(Queue a): spec.parent: cycle detected in queue hierarchy for queue a"),
    ("".join(queue(f"q{i}", f"q{i - 1}" if i else None) for i in range(6)),
     "(Queue q5): spec.parent: queue q5 exceeds the maximum allowed depth of 5"),
    (queue("p", spec="capability: {cpu: '4'}") + queue("c", "p", "capability: {cpu: '6'}"),
     "(Queue c): spec.capability: queue c capability[cpu]=6 exceeds its ancestor's capability=4"),
    (queue("p", spec="capability: {memory: 1Gi}") + queue("c", "p", "capability: {memory: 2Gi}"),
     "(Queue c): spec.capability: queue c capability[memory]=2Gi exceeds its ancestor's capability=1Gi"),
    (queue("p", spec="deserved: {cpu: '4'}") + queue("c1", "p", "deserved: {cpu: '3'}")
     + queue("c2", "p", "deserved: {cpu: '2'}"),
     "(Queue c2): spec.deserved: parent queue p validation failed: sum of children's deserved "
     "(cpu 5000.00, memory 0.00) exceeds parent's deserved limit (cpu 4000.00, memory 0.00)"),
    (queue("p") + queue("c", "p", "deserved: {cpu: '1'}, guarantee: {resource: {cpu: '1'}}"),
     "(Queue c): spec.guarantee: parent queue p validation failed: sum of children's guarantee"),
])
def test_the_queue_webhook_refuses_a_broken_tree(simulate, queues, expected):
    code, err = simulate(node("n1") + queues)
    assert code == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    assert expected in err


def test_children_may_come_before_their_parent_in_the_input(simulate):
    code, out = simulate(node("n1") + queue("c", "p", "capability: {cpu: '2'}") + queue("p", spec="capability: {cpu: '4'}")
                         + podgroup("pg", 1, queue="c") + pod("x", group="pg"))
    assert code == 0
    assert out["queues"]["c"]["parent"] == "p"
