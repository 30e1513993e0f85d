import json
import textwrap

import pytest

from vcsched.api.quantity import parse_quantity
from vcsched.cli import main
from vcsched.framework.node_search import NodeSearch


# the simulated clock's start unless a test gives its own ``--now``: runs are reproducible, and the
# input's objects without creationTimestamp date from 2026-01-01T00:00:00Z, a second apart
SIM_NOW = "2026-01-01T01:00:00Z"


@pytest.fixture
def simulate(tmp_path, capsys, request, monkeypatch):
    """Run ``vcsched simulate -o json`` on YAML text; return (exit code, parsed output or stderr).
    A run that exits 0 must leave no node holding more than it has (``overcommitted_nodes``), unless
    the test is marked ``overcommitted_input``, and must give the same output again with every task
    searched node by node: the shape indexes (framework/shape_index.py) that tasks of one shape share
    are a faster way to the same placements, never a different one."""
    overcommit_allowed = request.node.get_closest_marker("overcommitted_input") is not None

    def run(manifests: str, *args: str, conf: str | None = None):
        path = tmp_path / "cluster.yaml"
        path.write_text(textwrap.dedent(manifests))
        argv = ["simulate", "-f", str(path), "-o", "json", *args]
        if not any(a == "--now" or a.startswith("--now=") for a in args):
            argv += ["--now", SIM_NOW]
        if conf is not None:
            conf_path = tmp_path / "scheduler.conf"
            conf_path.write_text(textwrap.dedent(conf))
            argv += ["--conf", str(conf_path)]
        code = main(argv)
        out, err = capsys.readouterr()
        if code == 0:
            with monkeypatch.context() as m:
                m.setattr(NodeSearch, "shareable", lambda self, task: False)
                assert main(argv) == 0
            assert capsys.readouterr().out == out, "the node-by-node search gives another output"
            result = json.loads(out)
            assert overcommit_allowed or not overcommitted_nodes(result), overcommitted_nodes(result)
            return code, result
        return code, err

    return run


def overcommitted_nodes(out: dict) -> list[tuple]:
    """What a simulate output's nodes hold beyond what they have: (node, resource, used, allocatable) where
    a resource's use exceeds its allocatable, (node, device, "memory" or "slots", used, total) where a
    device's does.  The scheduler never places onto a node more than it has, so a run whose input did
    not start that way ends with none."""
    over: list[tuple] = []
    for name, node in (out.get("nodes") or {}).items():
        allocatable = node.get("allocatable") or {}
        for resource, used in (node.get("used") or {}).items():
            if parse_quantity(used) > parse_quantity(allocatable.get(resource, "0")):
                over.append((name, resource, used, allocatable.get(resource)))
        for d in node.get("devices") or ():
            for used, total, what in (("memory_used", "memory_total", "memory"), ("slots_used", "slots_total", "slots")):
                if d.get(total) and d.get(used, 0) > d[total]:
                    over.append((name, d["id"], what, d[used], d[total]))
    return over


def node(name: str, cpu: str = "4", memory: str = "8Gi", pods: int = 110, extra: str = "",
         resources: dict[str, str] | None = None) -> str:
    """A Ready node; ``resources``: more allocatable resources (extended ones, say)."""
    more = "".join(f", {k}: \"{v}\"" for k, v in (resources or {}).items())
    return f"""
---
apiVersion: v1
kind: Node
metadata:
  name: {name}
  labels: {{kubernetes.io/hostname: {name}}}
{extra}
status:
  allocatable: {{cpu: "{cpu}", memory: {memory}, pods: "{pods}"{more}}}
"""


def pod(name: str, cpu: str = "1", memory: str = "1Gi", group: str | None = None, queue: str | None = None,
        ns: str = "default", spec_extra: str = "", node_name: str | None = None, phase: str | None = None,
        meta_extra: str = "") -> str:
    annotations = {}
    if group:
        annotations["scheduling.k8s.io/group-name"] = group
    if queue:
        annotations["scheduling.volcano.sh/queue-name"] = queue
    ann = ", ".join(f"{k}: {v}" for k, v in annotations.items())
    requests = f"{{cpu: \"{cpu}\", memory: {memory}}}" if cpu else "{}"
    return f"""
---
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: {ns}
  annotations: {{{ann}}}
{meta_extra}
spec:
  schedulerName: volcano
  {f'nodeName: {node_name}' if node_name else ''}
  containers:
  - name: main
    image: busybox
    resources: {{requests: {requests}}}
{spec_extra}
{f'status: {{phase: {phase}}}' if phase else ''}
"""


def podgroup(name: str, min_member: int, queue: str = "default", ns: str = "default", extra: str = "") -> str:
    return f"""
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata:
  name: {name}
  namespace: {ns}
spec:
  minMember: {min_member}
  queue: {queue}
{extra}
"""


def queue(name: str, weight: int = 1, extra: str = "") -> str:
    return f"""
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: {name}
spec:
  weight: {weight}
{extra}
"""
