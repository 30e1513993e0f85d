"""A component that dies on the real API server: ``vcsched run`` stops, exit 1, rather than run half alive
(in process: a controller's death cannot be provoked from outside the process)."""

from __future__ import annotations

import asyncio

import pytest

from vcsched.kube import components
from vcsched.kube.api import KubeClient, load_configuration
from vcsched.kube.runtime import RunOptions, Runtime

from .conftest import Kube

pytestmark = pytest.mark.asyncio


async def test_controllers_that_die_stop_the_scheduler_beside_them(kube: Kube, monkeypatch):
    cfg = await load_configuration(str(kube.cp.admin.kubeconfig))
    client, controller_client = KubeClient(cfg), KubeClient(cfg, user_agent="vcsched-controllers")
    runtime = Runtime(client, RunOptions(listen="127.0.0.1:0", schedule_period=0.1))
    started = asyncio.Event()

    async def dies(*args, **kwargs) -> None:
        started.set()
        await runtime.synced.wait()  # the scheduler beside them is up and scheduling
        raise RuntimeError("a controller bug")

    monkeypatch.setattr(components, "run_controllers", dies)
    try:
        code = await asyncio.wait_for(
            components.run_components(client, controller_client, runtime, asyncio.Event()), 60)
    finally:
        await client.close()
        await controller_client.close()
    assert started.is_set() and code == 1
    assert runtime.synced.is_set()  # the scheduler was running beside them, and stopped with them
