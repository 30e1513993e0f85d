"""A ``vcsched bench`` cluster driven session by session, for tests that compare decisions."""

from __future__ import annotations

import argparse
import random

from vcsched.bench import build_cluster
from vcsched.cache import Cache
from vcsched.conf import SchedulerConfiguration
from vcsched.framework.effects import Bind, Effect
from vcsched.plugins.deviceshare import device_builder
from vcsched.scheduler import Scheduler

DEVICE_PREFIXES = ("volcano.sh/", "nvidia.com/", "huawei.com/")


def drop_devices(pods: list[dict], every: int = 3) -> None:
    """Every ``every``-th pod (the last of each run of ``every``) asks for no device: its requests and
    limits of device resources dropped.  A job's pods share one resources mapping, so the pod gets its own."""
    for i, pod in enumerate(pods):
        if i % every == every - 1:
            for c in pod["spec"]["containers"]:
                c["resources"] = {part: {name: q for name, q in quantities.items()
                                         if not name.startswith(DEVICE_PREFIXES)}
                                  for part, quantities in (c.get("resources") or {}).items()}


def run_cycles(args: argparse.Namespace, conf: SchedulerConfiguration, cycles: int = 2,
               tie_break: random.Random | None = None) -> list[Effect]:
    """``build_cluster(args)`` in a cache, ``cycles`` sessions; each Bind is applied as the cluster
    would (the pod Running on its node, with the Binding's annotations). Every effect, in order.
    ``tie_break``: the scheduler's ``SchedulerState.tie_break``."""
    node_objs, pgs, pod_objs = build_cluster(args)
    cache = Cache(devices=device_builder(conf, {}))
    cache.add_queue({"metadata": {"name": "default"}, "spec": {"weight": 1}, "status": {"state": "Open"}})
    for obj in node_objs:
        cache.add_node(obj)
    for obj in pgs:
        cache.add_podgroup(obj)
    by_name = {}
    for obj in pod_objs:
        cache.add_pod(obj)
        by_name[obj["metadata"]["name"]] = obj
    scheduler = Scheduler(cache, conf)
    scheduler.state.tie_break = tie_break
    out: list[Effect] = []
    for c in range(cycles):
        effects = scheduler.run_once(now=float(c), uid=f"s{c}")
        out.extend(effects)
        for e in effects:
            if isinstance(e, Bind):
                pod = by_name[e.name]
                pod["spec"]["nodeName"] = e.node
                pod["status"]["phase"] = "Running"
                pod["metadata"].setdefault("annotations", {}).update(e.annotations)
                cache.update_pod(pod)
    return out
