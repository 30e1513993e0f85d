"""The scheduler ConfigMap: hot reload, and a broken edit refused with the last good conf kept."""

from __future__ import annotations

import pytest

from .conftest import cluster, conf_map, eventually, pod, podgroup


ALLOCATE = """
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: predicates
  - name: proportion
"""
ENQUEUE_ONLY = ALLOCATE.replace('"enqueue, allocate"', '"enqueue"')


@pytest.mark.asyncio
async def test_scheduler_conf_file_overrides_the_configmap(api, start, tmp_path):
    cluster(api)
    api.put(conf_map(ALLOCATE))
    api.put(podgroup("pg1"))
    api.put(pod("p1", "pg1"))
    path = tmp_path / "scheduler.conf"
    path.write_text(ENQUEUE_ONLY)
    rt = await start(scheduler_conf=str(path))
    await eventually(lambda: rt.sessions >= 3, "a few sessions")
    assert rt.scheduler.conf.actions == ["enqueue"] and not api.bindings
    assert not any(r.resource is not None and r.resource.plural == "configmaps" for r in api.requests)


def test_a_broken_conf_file_is_refused_at_start(tmp_path):
    from kubernetes.aio import client as kclient

    from vcsched.kube.api import KubeClient
    from vcsched.kube.runtime import ConfError2, RunOptions, Runtime

    path = tmp_path / "scheduler.conf"
    path.write_text('actions: "allocate"\ntiers: [{plugins: [{name: nosuch}]}]')
    with pytest.raises(ConfError2, match="scheduler.conf"):
        Runtime(KubeClient(kclient.Configuration(host="http://127.0.0.1:1")), RunOptions(scheduler_conf=str(path)))
