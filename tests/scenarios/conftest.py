import json
import textwrap

import pytest

from vcsched.cli import main


# the simulated clock's start unless a test gives its own ``--now``: runs are reproducible, and the
# input's objects without creationTimestamp date from 2026-01-01T00:00:00Z, a second apart
SIM_NOW = "2026-01-01T01:00:00Z"


@pytest.fixture
def simulate(tmp_path, capsys):
    """Run ``vcsched simulate -o json`` on YAML text; return (exit code, parsed output or stderr)."""

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
            return code, json.loads(out)
        return code, err

    return run


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
