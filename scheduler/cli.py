"""The ``vcsched`` command: ``simulate``, ``bench`` and ``run``."""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Callable
from datetime import datetime, timezone

import structlog
from tqdm import tqdm

from .cache import Cache
from .conf import DEFAULT_SCHEDULER_CONF, ConfError, SchedulerConfiguration, parse_conf
from .plugins.deviceshare import device_builder
from .scheduler import Scheduler
from .sim.cluster import SimCluster
from .sim.diagnosis import diagnoses, summary
from .sim.fields import RFC3339
from .sim.jobs import SimJobs
from .sim.manifests import ManifestError, load_manifests
from .sim.node_usage import SimNodeUsage
from .sim.output import render, result

EXIT_BAD_INPUT = 2
MAX_CYCLES = 20
SCHEDULE_PERIOD = 1.0  # seconds of simulated time per cycle (Volcano's default --schedule-period)
INPUT_AGE = 3600.0  # objects without a creationTimestamp were made this long before the clock's start
CONF_MAP = "volcano-scheduler-configmap"
CONF_KEY = "volcano-scheduler.conf"


class BadInput(Exception):
    """User input the API server or Volcano would refuse: exit 2, one line."""


def at_least(minimum: int) -> Callable[[str], int]:
    """An argparse type: a whole number of at least ``minimum`` (argparse names the flag and exits 2)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected at least {minimum}, got {value}")
        return value

    return parse


def positive_number(text: str) -> float:
    """An argparse type: a number above 0 (a rate, a duration, a timeout)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number above 0, got {text}")
    return value


class _Stderr:
    """``sys.stderr`` as it is when a line is written: whoever replaced it since (a test's capture that
    is closed by now, an embedding program) does not break the logging of later runs."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def configure_logging(verbose: bool, level: str = "warning") -> None:
    renderer = structlog.dev.ConsoleRenderer(colors=False) if sys.stderr.isatty() else structlog.processors.JSONRenderer()
    structlog.configure(
        processors=[structlog.processors.add_log_level, structlog.processors.TimeStamper(fmt="iso"), renderer],
        wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG if verbose else getattr(logging, level.upper())),
        logger_factory=structlog.PrintLoggerFactory(file=_Stderr()),
    )


def load_conf(conf_path: str | None, cluster: SimCluster) -> SchedulerConfiguration:
    """``--conf``, else the ConfigMap in the input, else the built-in default."""
    if conf_path:
        try:
            with open(conf_path, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise BadInput(f"{conf_path}: {e.strerror}") from None
        where = conf_path
    else:
        cm = next((c for k, c in cluster.config_maps.items() if k.endswith("/" + CONF_MAP)), None)
        if cm is not None and CONF_KEY in (cm.get("data") or {}):
            text = cm["data"][CONF_KEY]
            where = f"ConfigMap {cm['metadata'].get('namespace')}/{CONF_MAP}: data[{CONF_KEY}]"
        else:
            text, where = DEFAULT_SCHEDULER_CONF, "built-in default"
    try:
        return parse_conf(text)
    except ConfError as e:
        raise BadInput(f"{where}: {e}") from None


def parse_now(text: str | None) -> float:
    """``--now``: an RFC 3339 date-time as Unix seconds; the real time when not given."""
    if text is None:
        return time.time()
    if RFC3339.match(text.strip()):
        try:
            start = datetime.fromisoformat(text.strip().upper().replace("Z", "+00:00")).timestamp()
            # the input's creation times and a day of cycles must be dates too
            datetime.fromtimestamp(start - INPUT_AGE, timezone.utc)
            datetime.fromtimestamp(start + 86400, timezone.utc)
            return start
        except (ValueError, OverflowError, OSError):
            pass
    raise BadInput(f"--now: must be an RFC 3339 date-time such as 2026-01-01T01:00:00Z, got {text!r}")


def live_cluster(kubeconfig: str | None) -> str:
    """The live cluster's objects as YAML (imported here: the API client is not needed otherwise)."""
    from .sim.live import LiveClusterError, read_cluster

    try:
        return read_cluster(kubeconfig)
    except LiveClusterError as e:
        raise BadInput(str(e)) from None


def run_simulation(args: argparse.Namespace, command: str) -> tuple[dict, set[str]] | int:
    """The input read, scheduled cycle after cycle: the contract's document and the pods the input had
    on a node already; or the exit code of bad input."""
    names = tuple(args.scheduler_name or ["volcano"])
    kubeconfig = getattr(args, "kubeconfig", None)
    live = command == "explain" or kubeconfig is not None
    try:
        # simulated time starts at --now; the input was made an hour before, a second per object
        start = parse_now(args.now)
        created = start - INPUT_AGE
        if not args.filename and not live:
            raise BadInput("-f: give manifests (-f FILE, or - for stdin), or --kubeconfig for a live cluster")
        # a live cluster's state comes first, as one more input, read only (sim/live.py)
        preloaded = [(f"cluster ({kubeconfig or 'default kubeconfig'})", live_cluster(kubeconfig))] if live else []
        manifests = load_manifests(args.filename or [], stdin=sys.stdin,
                                   created=datetime.fromtimestamp(created, timezone.utc), preloaded=preloaded)
        cluster = SimCluster.from_manifests(manifests, names, created)
        conf = load_conf(args.conf, cluster)
    except (ManifestError, BadInput) as e:
        print(f"vcsched {command}: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    bound = {key for key, p in cluster.pods.items() if (p.get("spec") or {}).get("nodeName")}
    cache = Cache(names, devices=device_builder(conf, cluster.config_maps))
    cluster.feed(cache)
    scheduler = Scheduler(cache, conf)
    cycles = 0
    limit = args.cycles if args.cycles is not None else MAX_CYCLES
    # simulated time: one cycle per schedule period; controllers settle between cycles (sim/jobs.py)
    clock = start
    cluster.sync_policies(cache, clock)  # the disruption and quota controllers' first sync (sim/policies.py)
    jobs = SimJobs(cluster, cache)
    jobs.settle(clock, clock)
    cluster.sync_policies(cache, clock)
    # on a terminal, the cycles as they run (tqdm stays silent when stderr is piped)
    progress = tqdm(total=limit, unit="cycle", disable=None, leave=False)
    load = SimNodeUsage(cluster.nodes, cluster.pods)  # the nodes' measured load (sim/node_usage.py)
    while cycles < limit:
        load.feed(cluster.pods, cache, clock)
        effects = scheduler.run_once(now=clock, uid=f"session-{cycles + 1}")
        cycles += 1
        progress.update(1)
        changed = cluster.apply(effects, cache, now=clock)
        cycle_time, clock = clock, clock + SCHEDULE_PERIOD
        changed |= jobs.settle(clock, cycle_time)
        due = jobs.next_timer()
        if not changed and due is not None:
            # nothing happened but a simulated timer is pending: skip the idle periods up to it
            clock = max(clock, due)
            changed = jobs.settle(clock, cycle_time)
        changed |= cluster.sync_policies(cache, clock)
        if args.cycles is None and not changed:
            break
    progress.close()
    last = scheduler.last_session if cycles else None
    stats = last.stats.queues if last is not None else None
    return result(cluster, cache, cycles, stats, diagnoses(last, cache),
                  numa=scheduler.state.plugins.get("numa-aware"),
                  placements=scheduler.state.hypernode_decisions), bound


def simulate(args: argparse.Namespace) -> int:
    done = run_simulation(args, "simulate")
    if isinstance(done, int):
        return done
    doc, _ = done
    fmt = args.output or ("table" if sys.stdout.isatty() else "json")
    sys.stdout.write(render(doc, fmt) + ("" if fmt == "table" else "\n"))
    return 0


def explain(args: argparse.Namespace) -> int:
    """``vcsched explain NS/POD``: one dry session over the live cluster (read only), then why the pod
    waits, with numbers, or where it would go."""
    args.cycles = 1
    key = args.pod if "/" in args.pod else f"default/{args.pod}"
    namespace, _, name = key.partition("/")
    if not namespace or not name or "/" in name:  # before a session over the whole cluster
        print(f"vcsched explain: NAMESPACE/POD: expected a namespace and a pod name, got {args.pod!r}",
              file=sys.stderr)
        return EXIT_BAD_INPUT
    done = run_simulation(args, "explain")
    if isinstance(done, int):
        return done
    doc, bound = done
    pod = doc["pods"].get(key)
    if pod is None:
        print(f"vcsched explain: no pod {key} in the cluster or the manifests", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.output == "json":
        sys.stdout.write(json.dumps({key: pod}, sort_keys=True, indent=2) + "\n")
        return 0
    if pod["node"]:
        lines = [f"{key}: {'on' if key in bound else 'would be placed on'} {pod['node']}"]
    else:
        lines = [f"{key}: pending", f"  {pod['reason'] or 'not looked at by the session'}"]
        lines += [f"    {line}" for line in summary(pod.get("diagnosis") or {})]
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="vcsched", description="A Volcano-compatible batch scheduler.")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logs on stderr")
    sub = parser.add_subparsers(dest="command", required=True)

    sim = sub.add_parser("simulate", help="schedule manifests on an embedded in-memory cluster")
    sim.add_argument("-f", "--filename", action="append", help="manifest file, or - for stdin")
    sim.add_argument("--kubeconfig", help="start from this live cluster's state (read only), the -f manifests added")
    sim.add_argument("--conf", help="a volcano-scheduler.conf file")
    sim.add_argument("--cycles", type=at_least(0), help="run exactly N scheduling cycles")
    sim.add_argument("-o", "--output", choices=("table", "json", "yaml"))
    sim.add_argument("--scheduler-name", action="append", help="schedulerName to serve (default volcano)")
    sim.add_argument("--now", metavar="RFC3339",
                     help="when the simulated clock starts (tdm windows, sla waiting times); default: the real time")
    sim.set_defaults(run=simulate)

    exp = sub.add_parser("explain", help="why a pod of a live cluster waits, with numbers (read only)")
    exp.add_argument("pod", metavar="NAMESPACE/POD")
    exp.add_argument("--kubeconfig", help="the cluster (default: in-cluster, $KUBECONFIG, ~/.kube/config)")
    exp.add_argument("-f", "--filename", action="append", help="more manifests on top of the cluster's state")
    exp.add_argument("--conf", help="a volcano-scheduler.conf file (default: the cluster's ConfigMap)")
    exp.add_argument("--scheduler-name", action="append", help="schedulerName to serve (default volcano)")
    exp.add_argument("--now", metavar="RFC3339", help="the session's clock (default: the real time)")
    exp.add_argument("-o", "--output", choices=("table", "json"), default="table")
    exp.set_defaults(run=explain)

    from .bench import add_parser as add_bench

    add_bench(sub)
    from .kube.command import add_parser as add_run

    add_run(sub)
    args = parser.parse_args(argv)
    configure_logging(args.verbose, getattr(args, "log_level", "warning"))
    try:
        return args.run(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as e:  # an internal error: say so on one line, exit 1
        structlog.get_logger("vcsched").exception("internal error")
        print(f"vcsched: internal error: {type(e).__name__}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
