"""``vcsched run``'s flags; the runtime (and the Kubernetes client) is imported only when it runs."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser("run", help="schedule pods on a Kubernetes cluster")
    p.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster, then $KUBECONFIG or ~/.kube/config)")
    p.add_argument("--scheduler-conf", help="a volcano-scheduler.conf file; overrides the ConfigMap")
    p.add_argument("--scheduler-name", default="volcano", help="schedulerName to serve (default volcano)")
    p.add_argument("--schedule-period", default="1s",
                   help="the longest pause between sessions (default 1s); a change that can alter a decision "
                        "starts one sooner (--cycle-coalesce)")
    p.add_argument("--cycle-coalesce", default="1ms",
                   help="a session starts this long after the first change that can alter a decision (a new "
                        "pending pod, a pod finished, a node or queue changed), so a burst is one session; "
                        "'off': sessions only every --schedule-period, as Volcano (default 1ms)")
    p.add_argument("--listen", default=":8080", help="address for /metrics, /healthz and /readyz (default :8080)")
    p.add_argument("--leader-elect", action="store_true", help="run sessions only while holding the Lease")
    p.add_argument("--lease-name", default="vcsched")
    p.add_argument("--lease-namespace", default="volcano-system")
    p.add_argument("--configmap-name", default="volcano-scheduler-configmap")
    p.add_argument("--configmap-namespace", default="volcano-system")
    # Volcano's hypernode controller finds its ConfigMap from its pod's namespace and Helm release name
    release = os.environ.get("HELM_RELEASE_NAME") or "volcano"
    p.add_argument("--controller-configmap-name", default=f"{release}-controller-configmap",
                   help="the controllers' ConfigMap (key volcano-controller.conf: networkTopologyDiscovery, "
                        "HyperNodes from node labels); default $HELM_RELEASE_NAME-controller-configmap, "
                        "volcano-controller-configmap without it")
    p.add_argument("--controller-configmap-namespace",
                   default=os.environ.get("KUBE_POD_NAMESPACE") or "volcano-system", help="its namespace (default $KUBE_POD_NAMESPACE, else volcano-system)")
    p.add_argument("--default-queue", default="default",
                   help="queue of PodGroups that name none; created at start with root when absent (default default)")
    p.add_argument("--components", default="scheduler,controllers",
                   help="what this process runs: scheduler, controllers, or both (default scheduler,controllers)")
    p.add_argument("--inherit-owner-annotations", nargs="?", const="true", default="true", choices=("true", "false"),
                   help="PodGroups of bare pods inherit their owners' annotations, group-min-member "
                        "included (Volcano's flag; default true)")
    # the feasible-node search, with Volcano's flags and defaults
    p.add_argument("--minimum-feasible-nodes", type=int, default=100,
                   help="the minimum number of feasible nodes to find and score (default 100)")
    p.add_argument("--minimum-percentage-nodes-to-find", type=int, default=5,
                   help="the minimum percentage of nodes to find and score (default 5)")
    p.add_argument("--percentage-nodes-to-find", type=int, default=0,
                   help="the percentage of nodes to find and score; <= 0: from the cluster size (default 0)")
    p.set_defaults(run=run_command, log_level="info")


def _duration(flag: str, text: str) -> float:
    """A flag's Go duration (``1s``, ``500ms``, ``0``) in seconds; a negative one means nothing here."""
    from ..api.duration import parse_go_duration

    try:
        seconds = parse_go_duration(text)
    except ValueError as e:
        raise ValueError(f"{flag}: {e}") from None
    if seconds < 0:
        raise ValueError(f"{flag}: expected a duration of at least 0, got {text!r}")
    return seconds


def checked_flags(args: Any) -> tuple[float, float | None, tuple[str, ...]]:
    """What ``run_command`` reads from its flags before it starts: the schedule period, the coalescing
    window (None: off) and the components; ValueError naming the flag.  (The chart's tests run the
    chart's arguments through it.)"""
    from .components import parse_components
    from .runtime import parse_listen

    period = _duration("--schedule-period", args.schedule_period)
    coalesce = None if args.cycle_coalesce == "off" else _duration("--cycle-coalesce", args.cycle_coalesce)
    parse_listen(args.listen)
    return period, coalesce, parse_components(args.components)


def run_command(args: Any) -> int:
    """``vcsched run``: exit 0 on SIGTERM/SIGINT (binds and writes in flight get up to 10 s, the Lease is
    given up; a second signal exits at once, 1), 1 when leadership is lost, the root/default queue
    cannot be created or a component stops unexpectedly, 2 on bad flags or conf."""
    from ..framework.session import NodesToFind
    from .controllers import ControllerOptions
    from .runtime import RunOptions

    try:
        period, coalesce, components = checked_flags(args)
    except ValueError as e:
        print(f"vcsched run: {e}", file=sys.stderr)
        return 2
    options = RunOptions(scheduler_name=args.scheduler_name, schedule_period=period, cycle_coalesce=coalesce,
                         predict_groups="controllers" in components,
                         inherit_owner_annotations=args.inherit_owner_annotations == "true",
                         listen=args.listen,
                         scheduler_conf=args.scheduler_conf, configmap_name=args.configmap_name,
                         configmap_namespace=args.configmap_namespace, leader_elect=args.leader_elect,
                         lease_name=args.lease_name, lease_namespace=args.lease_namespace,
                         default_queue=args.default_queue,
                         nodes_to_find=NodesToFind(args.minimum_feasible_nodes, args.minimum_percentage_nodes_to_find,
                                                   args.percentage_nodes_to_find))

    async def main() -> int:
        from .api import KubeClient, load_configuration
        from .runtime import ConfError2, Runtime

        try:
            cfg = await load_configuration(args.kubeconfig)
        except Exception as e:  # the client's ConfigException, or a missing/bad file
            print(f"vcsched run: no usable cluster configuration: {e}", file=sys.stderr)
            return 2
        from .components import run_components
        from .leader import LeaderElector

        client = KubeClient(cfg)
        controller_client = KubeClient(cfg, user_agent="vcsched-controllers") if "controllers" in components else None
        try:
            runtime = elector = None
            if "scheduler" in components:
                try:
                    runtime = Runtime(client, options)
                except ConfError2 as e:
                    print(f"vcsched run: {e}", file=sys.stderr)
                    return 2
            elif args.leader_elect:  # the controllers alone: their own Lease
                import socket
                import uuid

                elector = LeaderElector(client, args.lease_namespace, f"{args.lease_name}-controllers",
                                        f"{socket.gethostname()}_{uuid.uuid4()}")
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()

            def on_signal() -> None:
                if stop.is_set():  # the second signal: at once, whatever is in flight
                    print("vcsched run: second signal; exiting now", file=sys.stderr)
                    os._exit(1)
                stop.set()

            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, on_signal)
            ctl_options = ControllerOptions(scheduler_names=(args.scheduler_name,),
                                            inherit_owner_annotations=args.inherit_owner_annotations == "true",
                                            discovery_namespace=args.controller_configmap_namespace,
                                            discovery_configmap=args.controller_configmap_name)
            started.append(True)
            return await run_components(client, controller_client, runtime, stop, ctl_options, elector,
                                        listen=args.listen)
        finally:
            await client.close()
            if controller_client is not None:
                await controller_client.close()

    started: list[bool] = []
    code = asyncio.run(main())
    if started:
        # Everything is closed and the executor's threads joined: the process ends here rather than
        # through the interpreter's teardown, which frees every module and object one by one (2-3 s
        # with 2,000 pods on a slow machine, after the 10 s of shutdown grace had been spent)
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code
