"""Mutated manifests for ``vcsched simulate``: it must answer 0 or 2 (bad input named), never 1.

    python -m tests.scenarios.fuzz_manifests --runs 1000 --seed 1

prints how many runs crashed (exit 1) and the first few crashing inputs; test_fuzz.py runs it.
Each run takes one seed input (the examples in conf/examples, Volcano's MindSpore example, a
deviceshare cluster, a full node for preempt's dry run) and applies one to three mutations: a key
removed, a value replaced by one of another type or an absurd quantity, a list item duplicated, a
mapping where a list belongs, or the text cut short.  ``sweep_sizes`` sets every integer of every seed,
one at a time, to an int32's largest, which the API server takes, with a deadline.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import io
import random
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from vcsched.cli import main

ROOT = Path(__file__).resolve().parents[2]
SEEDS = sorted((ROOT / "conf" / "examples").glob("*.yaml")) + [
    ROOT / "tests" / "data" / "volcano-examples" / "mindspore-gpu.yaml"]

DEVICES = """
apiVersion: v1
kind: Node
metadata:
  name: gpu-1
  annotations: {volcano.sh/node-vgpu-register: "GPU-a,10,40960,NVIDIA-A100,true,hami-core:"}
status:
  allocatable: {cpu: "16", memory: 64Gi, pods: "110", volcano.sh/vgpu-number: "10",
                volcano.sh/vgpu-memory: "40960", volcano.sh/vgpu-cores: "100",
                volcano.sh/gpu-memory: "30000", volcano.sh/gpu-number: "3"}
---
apiVersion: v1
kind: Pod
metadata: {name: v, namespace: default}
spec:
  schedulerName: volcano
  initContainers:
  - {name: i, image: x, resources: {limits: {volcano.sh/gpu-memory: "8000"}}}
  containers:
  - {name: c, image: x, resources: {limits: {volcano.sh/vgpu-number: "1", volcano.sh/vgpu-memory: "2000"}}}
"""
DEVICE_CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins:
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: deviceshare
    arguments: {deviceshare.VGPUEnable: true}
"""

# a full node of low-priority pods and high-priority ones waiting: preempt's dry run has work
PREEMPT = """
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: v1
kind: Node
metadata:
  name: n1
  labels: {kubernetes.io/hostname: n1, zone: a}
status:
  allocatable: {cpu: "4", memory: 8Gi, pods: "110"}
---
apiVersion: v1
kind: Pod
metadata: {name: low-0, labels: {app: low}}
spec:
  nodeName: n1
  schedulerName: volcano
  containers: [{name: c, image: x, resources: {requests: {cpu: "3", memory: 1Gi}}}]
status: {phase: Running, startTime: "2026-01-01T00:00:00Z"}
---
apiVersion: v1
kind: Pod
metadata: {name: low-1, labels: {app: low}}
spec:
  nodeName: n1
  schedulerName: volcano
  containers: [{name: c, image: x, resources: {requests: {cpu: "1", memory: 1Gi}}}]
status: {phase: Running}
---
apiVersion: v1
kind: Pod
metadata: {name: high-0}
spec:
  schedulerName: volcano
  priorityClassName: high
  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - labelSelector: {matchLabels: {app: low}}
        topologyKey: zone
  containers: [{name: c, image: x, resources: {requests: {cpu: "2", memory: 1Gi}}}]
"""
PREEMPT_CONF = """
actions: "enqueue, allocate, preempt, reclaim, backfill"
tiers:
- plugins: [{name: priority}, {name: gang, enablePreemptable: false}, {name: conformance}]
- plugins: [{name: drf, enablePreemptable: false}, {name: predicates}, {name: nodeorder}]
configurations:
- name: preempt
  arguments: {enableTopologyAwarePreemption: true, minCandidateNodesAbsolute: 2}
"""

ODD_VALUES: tuple[Any, ...] = (
    None, 0, -1, 2**63, 1e308, -1e-9, True, "", "abc", "-5", "1e999", "99999999999999999999Pi", "NaN",
    "0.0000001m", "1.5.5", [], {}, [1, 2], {"a": 1}, "∞", "\x00", "2026-13-45T99:99:99Z",
)


@dataclass
class Seed:
    name: str
    text: str
    conf: str | None = None


def seeds() -> list[Seed]:
    out = [Seed(p.name, p.read_text(encoding="utf-8")) for p in SEEDS]
    out.append(Seed("devices", DEVICES, DEVICE_CONF))
    out.append(Seed("preempt", PREEMPT, PREEMPT_CONF))
    return out


def _containers(node: Any, path: tuple = ()) -> list[tuple[tuple, Any]]:
    """Every mapping and list inside ``node``, with its path."""
    found: list[tuple[tuple, Any]] = []
    if isinstance(node, dict):
        found.append((path, node))
        for k, v in node.items():
            found.extend(_containers(v, (*path, k)))
    elif isinstance(node, list):
        found.append((path, node))
        for i, v in enumerate(node):
            found.extend(_containers(v, (*path, i)))
    return found


def mutate_docs(docs: list[Any], rng: random.Random) -> str:
    for _ in range(rng.randint(1, 3)):
        targets = [(p, c) for d in docs for p, c in _containers(d) if c]
        if not targets:
            break
        _, node = rng.choice(targets)
        op = rng.random()
        if isinstance(node, dict):
            key = rng.choice(list(node))
            if op < 0.3:
                del node[key]
            elif op < 0.85:
                node[key] = copy.deepcopy(rng.choice(ODD_VALUES))
            elif isinstance(node[key], list):
                node[key] = {"x": node[key]}  # a mapping where a list belongs
            else:
                node[key] = [node[key]]
        else:
            i = rng.randrange(len(node))
            if op < 0.3:
                del node[i]
            elif op < 0.6:
                node.append(node[i])
            else:
                node[i] = copy.deepcopy(rng.choice(ODD_VALUES))
    return yaml.safe_dump_all(docs, sort_keys=False, allow_unicode=True)


def mutate(seed: Seed, rng: random.Random) -> tuple[str, str | None]:
    """(manifests, conf) after one to three mutations; sometimes the conf is the one mutated."""
    if seed.conf is not None and rng.random() < 0.15:
        conf_docs = [yaml.safe_load(seed.conf)]
        return seed.text, mutate_docs(conf_docs, rng)
    if rng.random() < 0.1:
        return seed.text[: rng.randrange(1, len(seed.text))], seed.conf  # cut short
    docs = [d for d in yaml.safe_load_all(seed.text) if d is not None]
    return mutate_docs(docs, rng), seed.conf


class TooLong(BaseException):
    """A run past its deadline; a BaseException, so that the CLI's report of internal errors lets it by."""


@contextlib.contextmanager
def deadline(seconds: int):
    """Raise TooLong in the block once ``seconds`` have passed (SIGALRM: the main thread, POSIX)."""
    def _alarm(signum, frame):
        raise TooLong

    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def run_once(manifests: str, conf: str | None, workdir: Path) -> tuple[int, str]:
    path = workdir / "in.yaml"
    path.write_text(manifests, encoding="utf-8")
    argv = ["simulate", "-f", str(path), "-o", "json"]
    if conf is not None:
        (workdir / "sched.conf").write_text(conf, encoding="utf-8")
        argv += ["--conf", str(workdir / "sched.conf")]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, err.getvalue()


# an int32's largest: a size the API server takes (replicas, a HyperNode's tier, minMember...) that nothing
# should walk one by one, as a Job's replicas and a HyperNode's tier once were
LARGEST_INT32 = 2**31 - 1


def sweep_sizes(workdir: Path, seconds: int = 20) -> list[tuple[str, str, str]]:
    """Every integer of every seed set to LARGEST_INT32, one at a time: the runs that exit 1 or take
    longer than ``seconds`` (seed name, the input, stderr or "hang")."""
    failures = []
    for s in seeds():
        docs = [d for d in yaml.safe_load_all(s.text) if d is not None]
        for _, container in [c for d in docs for c in _containers(d)]:
            for key in list(container) if isinstance(container, dict) else range(len(container)):
                value = container[key]
                if isinstance(value, bool) or not isinstance(value, int):
                    continue
                container[key] = LARGEST_INT32
                manifests = yaml.safe_dump_all(docs, sort_keys=False, allow_unicode=True)
                container[key] = value
                try:
                    with deadline(seconds):
                        code, err = run_once(manifests, s.conf, workdir)
                except TooLong:
                    code, err = -1, "hang"
                if code not in (0, 2):
                    failures.append((s.name, manifests, err))
    return failures


def fuzz(runs: int, seed: int, workdir: Path) -> list[tuple[str, str, str]]:
    """The crashing runs: (seed name, the input, stderr)."""
    rng = random.Random(seed)
    pool = seeds()
    crashes = []
    for _ in range(runs):
        s = rng.choice(pool)
        manifests, conf = mutate(s, rng)
        code, err = run_once(manifests, conf, workdir)
        if code not in (0, 2):
            crashes.append((s.name, manifests if conf == s.conf else conf or "", err))
    return crashes


def _main() -> int:
    import tempfile

    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        crashes = fuzz(args.runs, args.seed, Path(tmp))
    print(f"{args.runs} runs, {len(crashes)} crashed (exit other than 0 and 2)")
    for name, text, err in crashes[:5]:
        print(f"--- from {name}: {err.strip()}\n{text[:2000]}")
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(_main())
