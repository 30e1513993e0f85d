"""batch.volcano.sh Jobs: admission (defaulting, validation) and what the job controller creates.

Pure functions over plain manifests (spec/jobs.md §2, §4, §5):

- ``mutate_job``: the mutating webhook's defaults (mutate_job.go · createPatch);
- ``validate_job``: the validating webhook's checks, with Volcano's messages
  (admit_job.go · validateJobCreate, util.go · validatePolicies, topoSort);
- ``build_podgroup`` / ``calc_min_resources``: the job's PodGroup
  (job_controller_actions.go · createOrUpdatePodGroup, calcPGMinResources);
- ``build_pod``: one task replica (job_controller_util.go · createJobPod);
- ``dependency_graph`` / ``dependencies_ready``: task ``dependsOn`` (networkx).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import networkx as nx

from ..api.types import GROUP_NAME_ANNOTATION
from . import quota

JOB_API_VERSION = "batch.volcano.sh/v1alpha1"
PODGROUP_API_VERSION = "scheduling.volcano.sh/v1beta1"

JOB_NAME_KEY = "volcano.sh/job-name"
JOB_NAMESPACE_KEY = "volcano.sh/job-namespace"
TASK_SPEC_KEY = "volcano.sh/task-spec"
TASK_INDEX_KEY = "volcano.sh/task-index"
QUEUE_NAME_KEY = "volcano.sh/queue-name"
JOB_VERSION_KEY = "volcano.sh/job-version"
JOB_RETRY_COUNT_KEY = "volcano.sh/job-retry-count"
TEMPLATE_UID_KEY = "volcano.sh/template-uid"
PARTITION_ID_KEY = "volcano.sh/partition-id"
OUT_OF_SYNC_KEY = "volcano.sh/controller-out-of-sync"
NUMA_POLICY_KEY = "volcano.sh/numa-topology-policy"
_JOB_LABELS_TO_POD = ("volcano.sh/preemptable", "volcano.sh/cooldown-time")
_JOB_ANNOTATIONS_TO_POD = ("volcano.sh/preemptable", "volcano.sh/cooldown-time", "volcano.sh/revocable-zone")

DEFAULT_SCHEDULER_NAME = "volcano"
DEFAULT_MAX_RETRY = 3

# bus/v1alpha1 events and actions a user may write in a policy, in their definition order.
# Volcano prints them from a Go map (random order); we print this fixed order.
USER_EVENTS = ("*", "PodFailed", "PodEvicted", "PodPending", "Unknown", "TaskCompleted", "TaskFailed", "JobUpdated")
USER_ACTIONS = ("AbortJob", "RestartJob", "RestartTask", "RestartPod", "RestartPartition", "TerminateJob",
                "CompleteJob", "ResumeJob")
JOB_PLUGINS = ("ssh", "env", "svc", "tensorflow", "mpi", "pytorch", "hcclrank", "ray")


# -- naming ---------------------------------------------------------------------------------


def podgroup_name(job: Mapping[str, Any]) -> str:
    """``<job name>-<job UID>`` (helpers.GeneratePodgroupName)."""
    meta = job["metadata"]
    return f"{meta['name']}-{meta.get('uid', '')}"


def make_pod_name(job_name: str, task_name: str, index: int) -> str:
    return f"{job_name}-{task_name}-{index}"


def task_min_available(task: Mapping[str, Any]) -> int:
    """A task's minimum: minAvailable, else minPartitions × partitionSize, else replicas."""
    if task.get("minAvailable") is not None:
        return int(task["minAvailable"])
    pp = task.get("partitionPolicy") or {}
    if pp.get("minPartitions") and pp.get("partitionSize"):
        return int(pp["minPartitions"]) * int(pp["partitionSize"])
    return int(task.get("replicas") or 0)


def total_replicas(job: Mapping[str, Any]) -> int:
    return sum(int(t.get("replicas") or 0) for t in job["spec"].get("tasks") or [])


# -- the mutating webhook ----------------------------------------------------------------------


def mutate_job(job: Mapping[str, Any], scheduler_name: str = DEFAULT_SCHEDULER_NAME) -> dict[str, Any]:
    """The defaults the mutating webhook applies on CREATE, on a copy (spec/jobs.md §4.1)."""
    out = copy.deepcopy(dict(job))
    spec = out.setdefault("spec", {})
    if not spec.get("queue"):
        spec["queue"] = "default"
    if not spec.get("schedulerName"):
        spec["schedulerName"] = scheduler_name
    if not spec.get("maxRetry"):
        spec["maxRetry"] = DEFAULT_MAX_RETRY
    tasks = spec.get("tasks") or []
    for i, task in enumerate(tasks):
        if not task.get("name"):
            task["name"] = f"default{i}"
        pod_spec = (task.get("template") or {}).get("spec") or {}
        if pod_spec.get("hostNetwork") and not pod_spec.get("dnsPolicy"):
            pod_spec["dnsPolicy"] = "ClusterFirstWithHostNet"
        if task.get("minAvailable") is None:
            pp = task.get("partitionPolicy") or {}
            if pp.get("minPartitions"):
                task["minAvailable"] = int(pp["minPartitions"]) * int(pp.get("partitionSize") or 0)
            else:
                task["minAvailable"] = int(task.get("replicas") or 0)
        if not task.get("maxRetry"):
            task["maxRetry"] = DEFAULT_MAX_RETRY
    if not spec.get("minAvailable"):
        spec["minAvailable"] = sum(int(t.get("minAvailable") or 0) for t in tasks)
    plugins = spec.get("plugins")
    if plugins is not None:
        if any(p in plugins for p in ("tensorflow", "mpi", "pytorch", "ray")) and "svc" not in plugins:
            plugins["svc"] = []
        if "mpi" in plugins and "ssh" not in plugins:
            plugins["ssh"] = []
    return out


# -- the validating webhook --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Problem:
    """One refusal of the validating webhook: the field it concerns and Volcano's message fragment."""

    field: str
    message: str
    hint: str = ""  # extra detail we add for a person (never part of Volcano's message)


def volcano_message(problems: list[Problem]) -> str:
    """The webhook's whole refusal: the fragments concatenated, trimmed (AdmitJobs)."""
    return "".join(p.message for p in problems).strip()


_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_QUALIFIED_NAME_MSG = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
                       "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used "
                       "for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")


def qualified_name_errors(name: str) -> list[str]:
    """apimachinery validation.IsQualifiedName for a name without a prefix."""
    if not name:
        return ["name part must be non-empty"]
    errs = []
    if len(name) > 63:
        errs.append("name part must be no more than 63 characters")
    if not _QUALIFIED_NAME.match(name):
        errs.append(_QUALIFIED_NAME_MSG)
    return errs


def _go_list(items: list[str] | tuple[str, ...]) -> str:
    return "[" + " ".join(items) + "]"


def _multierror(errors: list[str]) -> str:
    """hashicorp/go-multierror's text."""
    if len(errors) == 1:
        return f"1 error occurred:\n\t* {errors[0]}\n\n"
    points = "\n\t".join(f"* {e}" for e in errors)
    return f"{len(errors)} errors occurred:\n\t{points}\n\n"


def _policy_events(policy: Mapping[str, Any]) -> list[str]:
    events = list(policy.get("events") or [])
    if policy.get("event"):
        events.append(policy["event"])
    seen: list[str] = []
    for e in events:
        if e not in seen:
            seen.append(e)
    return seen


def validate_policies(policies: list[Mapping[str, Any]], path: str) -> str:
    """util.go · validatePolicies: '' or the multierror text (each check stops at its first error)."""
    errors: list[str] = []
    events_seen: set[str] = set()
    exit_codes: set[int] = set()
    for policy in policies:
        has_events = bool(policy.get("event") or policy.get("events"))
        exit_code = policy.get("exitCode")
        if has_events and exit_code is not None:
            errors.append("must not specify event and exitCode simultaneously")
            break
        if not has_events and exit_code is None:
            errors.append("either event and exitCode should be specified")
            break
        if has_events:
            stop = False
            for event in _policy_events(policy):
                if event not in USER_EVENTS:
                    errors.append(f'{path}: Invalid value: "{event}": invalid policy event')
                    stop = True
                    break
                if policy.get("action") not in USER_ACTIONS:
                    errors.append(f'{path}: Invalid value: "{policy.get("action") or ""}": invalid policy action')
                    stop = True
                    break
                if event in events_seen:
                    errors.append(f"duplicate event {event}  across different policy")
                    stop = True
                    break
                events_seen.add(event)
            if stop:
                break
        else:
            if int(exit_code) == 0:
                errors.append("0 is not a valid error code")
                break
            if int(exit_code) in exit_codes:
                errors.append(f"duplicate exitCode {exit_code}")
                break
            exit_codes.add(int(exit_code))
    if "*" in events_seen and len(events_seen) > 1:
        errors.append("if there's * here, no other policy should be here")
    return _multierror(errors) if errors else ""


def dependency_graph(job: Mapping[str, Any]) -> nx.DiGraph:
    """Edges dependency → dependent task, over the task names (unknown names become nodes too)."""
    graph = nx.DiGraph()
    for task in job["spec"].get("tasks") or []:
        graph.add_node(task["name"])
        for dep in ((task.get("dependsOn") or {}).get("name") or []):
            graph.add_edge(dep, task["name"])
    return graph


def dependency_problem(job: Mapping[str, Any]) -> str:
    """'' when the tasks' dependsOn form a DAG over the job's tasks, else what is wrong, for a person."""
    tasks = {t["name"] for t in job["spec"].get("tasks") or []}
    graph = dependency_graph(job)
    unknown = sorted(n for n in graph.nodes if n not in tasks)
    if unknown:
        # Volcano's topoSort never reaches a task that depends on an unknown name, so it is "not a DAG" too
        return f"dependsOn names unknown task(s) {', '.join(unknown)}"
    try:
        cycle = nx.find_cycle(graph)
    except nx.NetworkXNoCycle:
        return ""
    names = [u for u, _ in cycle] + [cycle[0][0]]
    return "cycle " + " -> ".join(names)


def validate_job(job: Mapping[str, Any], queues: Mapping[str, Mapping[str, Any]] | None) -> list[Problem]:
    """validateJobCreate on a mutated job: every problem, in Volcano's order, with its message.

    ``queues`` maps queue name → Queue manifest (for the queue's existence, state and children);
    None leaves the queue checks out (``validate_job_queue`` makes them alone).
    Pod template validation (the API server's own rules) is left to the caller.
    """
    spec = job["spec"]
    name = job["metadata"]["name"]
    tasks = spec.get("tasks") or []
    if not tasks:
        return [Problem("spec.tasks", "No task specified in job spec")]
    problems: list[Problem] = []
    nt = spec.get("networkTopology") or {}
    if nt.get("highestTierAllowed") is not None and nt.get("highestTierName"):
        problems.append(Problem("spec.networkTopology", "must not specify 'highestTierAllowed' and "
                                "'highestTierName' in networkTopology simultaneously"))
    names: set[str] = set()
    replicas_total = 0
    has_dependencies = False
    for i, task in enumerate(tasks):
        path = f"spec.tasks[{i}]"
        if task.get("dependsOn") is not None:
            has_dependencies = True
        replicas = int(task.get("replicas") or 0)
        if task.get("minAvailable") is not None and int(task["minAvailable"]) > replicas:
            problems.append(Problem(f"{path}.minAvailable", f" 'minAvailable' is greater than 'replicas' in task: "
                                    f"{task['name']}, job: {name};"))
        replicas_total += replicas
        if task["name"] in names:
            problems.append(Problem(f"{path}.name", f" duplicated task name {task['name']};"))
            break  # Volcano stops looking at tasks here
        names.add(task["name"])
        err = validate_policies(task.get("policies") or [], "spec.tasks.policies")
        if err:
            problems.append(Problem(f"{path}.policies", err + f" valid events are {_go_list(USER_EVENTS)}, "
                                    f"valid actions are {_go_list(USER_ACTIONS)};"))
        pod_name = make_pod_name(name, task["name"], i)
        errs = qualified_name_errors(pod_name)
        if errs:
            problems.append(Problem(f"{path}.name", f"create pod with name {pod_name} validate failed "
                                    f"{_go_list(errs)};"))
        policy = task.get("topologyPolicy")
        if policy and policy != "none":
            for j, c in enumerate(((task.get("template") or {}).get("spec") or {}).get("containers") or []):
                cpu = ((c.get("resources") or {}).get("requests") or {}).get("cpu")
                if cpu is not None and quota.parse_quantity(cpu).denominator != 1:
                    problems.append(Problem(f"{path}.template.spec.containers[{j}].resources.requests.cpu",
                                            f"the cpu request isn't an integer in spec.task[{i}] container[{j}]."))
        problems.extend(_partition_problems(task, path, name))
    errs = qualified_name_errors(name)
    if errs:
        problems.append(Problem("metadata.name", f"create job with name {name} validate failed {_go_list(errs)}"))
    if replicas_total < int(spec.get("minAvailable") or 0):
        problems.append(Problem("spec.minAvailable",
                                " job 'minAvailable' should not be greater than total replicas in tasks;"))
    err = validate_policies(spec.get("policies") or [], "spec.policies")
    if err:
        problems.append(Problem("spec.policies", err + f" valid events are {_go_list(USER_EVENTS)}, "
                                f"valid actions are {_go_list(USER_ACTIONS)};"))
    for plugin in spec.get("plugins") or {}:
        if plugin not in JOB_PLUGINS:
            problems.append(Problem(f"spec.plugins.{plugin}", f" unable to find job plugin: {plugin};"))
    problems.extend(_volume_problems(spec.get("volumes") or []))
    if queues is not None:
        problems.extend(validate_job_queue(job, queues))
    if has_dependencies:
        hint = dependency_problem(job)
        if hint:
            problems.append(Problem("spec.tasks.dependsOn", " job has dependencies between tasks, but doesn't "
                                    "form a directed acyclic graph(DAG);", hint))
    return problems


# Kubernetes' tested limit on the pods of one cluster (kubernetes.io/docs/setup/best-practices/cluster-large/)
MAX_JOB_REPLICAS = 150_000


def replica_problems(job: Mapping[str, Any]) -> list[Problem]:
    """vcsched's own check, not Volcano's webhook's: a job asking for more pods than a cluster is tested to
    hold (its replicas are int32s the API server takes up to 2^31 - 1) is refused, where making its pods
    one by one would exhaust the controller's memory before the cluster's."""
    total = 0
    for i, task in enumerate(job["spec"].get("tasks") or ()):
        total += int(task.get("replicas") or 0)
        if total > MAX_JOB_REPLICAS:
            return [Problem(f"spec.tasks[{i}].replicas",
                            f" the job asks for more than {MAX_JOB_REPLICAS:,} pods, the most a Kubernetes cluster "
                            f"is tested to hold ({total:,} with task {task.get('name')});")]
    return []


def validate_job_queue(job: Mapping[str, Any], queues: Mapping[str, Mapping[str, Any]]) -> list[Problem]:
    """The webhook's queue checks: the queue exists, is Open, is not root and is a leaf."""
    problems: list[Problem] = []
    queue_name = job["spec"].get("queue") or "default"
    queue = queues.get(queue_name)
    if queue is None:
        problems.append(Problem("spec.queue", f' unable to find job queue: queue.scheduling.volcano.sh '
                                f'"{queue_name}" not found;'))
    else:
        state = (queue.get("status") or {}).get("state") or ""
        if state != "Open":
            problems.append(Problem("spec.queue", f" can only submit job to queue with state `Open`, "
                                    f"queue `{queue_name}` status is `{state}`;"))
        if queue_name == "root":
            problems.append(Problem("spec.queue", " can not submit job to root queue;"))
        else:
            children = [q for q in queues.values() if (q.get("spec") or {}).get("parent") == queue_name]
            if children:
                problems.append(Problem("spec.queue", f" can only submit job to leaf queue, queue `{queue_name}` "
                                        f"has {len(children)} child queues;"))
    return problems


def _partition_problems(task: Mapping[str, Any], path: str, job_name: str) -> list[Problem]:
    pp = task.get("partitionPolicy")
    if pp is None:
        return []
    out = []
    total, size, minp = (int(pp.get(k) or 0) for k in ("totalPartitions", "partitionSize", "minPartitions"))
    tn = task["name"]
    if total <= 0:
        out.append(Problem(f"{path}.partitionPolicy.totalPartitions",
                           f" 'TotalPartitions' must be greater than 0 in task: {tn}, job: {job_name};"))
    if size <= 0:
        out.append(Problem(f"{path}.partitionPolicy.partitionSize",
                           f" 'PartitionSize' must be greater than 0 in task: {tn}, job: {job_name};"))
    if int(task.get("replicas") or 0) != total * size:
        out.append(Problem(f"{path}.replicas", f" 'Replicas' are not equal to TotalPartitions*PartitionSize "
                           f"in task: {tn}, job: {job_name};"))
    if minp > 0 and task.get("minAvailable") is not None and int(task["minAvailable"]) != minp * size:
        out.append(Problem(f"{path}.minAvailable", f" 'MinAvailable' is not equal to MinPartitions*PartitionSize "
                           f"in task: {tn}, job: {job_name};"))
    return out


def _volume_problems(volumes: list[Mapping[str, Any]]) -> list[Problem]:
    out: list[Problem] = []
    mounts: set[str] = set()
    for i, v in enumerate(volumes):
        path = f"spec.volumes[{i}]"
        mount = v.get("mountPath") or ""
        if not mount:
            out.append(Problem(f"{path}.mountPath", " mountPath is required;"))
            break
        if mount in mounts:
            out.append(Problem(f"{path}.mountPath", f" duplicated mountPath: {mount};"))
            break
        mounts.add(mount)
        if v.get("volumeClaim") is None and not v.get("volumeClaimName"):
            out.append(Problem(path, " either VolumeClaim or VolumeClaimName must be specified;"))
            break
        if v.get("volumeClaim") is not None and v.get("volumeClaimName"):
            out.append(Problem(path, "conflict: If you want to use an existing PVC, just specify VolumeClaimName."
                               "If you want to create a new PVC, you do not need to specify VolumeClaimName"))
            break
    return out


# -- the PodGroup ------------------------------------------------------------------------------


def _task_priority(task: Mapping[str, Any], priority_classes: Mapping[str, Mapping[str, Any]]) -> int:
    name = ((task.get("template") or {}).get("spec") or {}).get("priorityClassName")
    pc = priority_classes.get(name) if name else None
    return int(pc.get("value") or 0) if pc else 0


def calc_min_resources(job: Mapping[str, Any],
                       priority_classes: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, str]:
    """calcPGMinResources: the quota usage of the first ``minAvailable`` pods, by task priority."""
    spec = job["spec"]
    tasks = sorted(spec.get("tasks") or [], key=lambda t: -_task_priority(t, priority_classes or {}))
    min_available = int(spec.get("minAvailable") or 0)
    total_min = sum(int(t["minAvailable"]) if t.get("minAvailable") is not None else int(t.get("replicas") or 0)
                    for t in tasks)
    usage: dict[str, Fraction] = {}
    remaining = min_available
    per_pod = [quota.pod_usage(((t.get("template") or {}).get("spec")) or {}) for t in tasks]
    if min_available < total_min:
        for task, pod in zip(tasks, per_pod):
            if remaining <= 0:
                break
            n = min(remaining, int(task.get("replicas") or 0))
            quota.add(usage, quota.scale(pod, n))
            remaining -= n
    else:
        for task, pod in zip(tasks, per_pod):
            if remaining <= 0:
                break
            n = min(task_min_available(task), remaining)
            quota.add(usage, quota.scale(pod, n))
            remaining -= n
        for task, pod in zip(tasks, per_pod):
            if remaining <= 0:
                break
            n = min(int(task.get("replicas") or 0) - task_min_available(task), remaining)
            if n > 0:
                quota.add(usage, quota.scale(pod, n))
                remaining -= n
    return quota.format_usage(usage)


def job_owner_reference(job: Mapping[str, Any]) -> dict[str, Any]:
    meta = job["metadata"]
    return {"apiVersion": JOB_API_VERSION, "kind": "Job", "name": meta["name"], "uid": meta.get("uid", ""),
            "controller": True, "blockOwnerDeletion": True}


def build_podgroup(job: Mapping[str, Any],
                   priority_classes: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """The PodGroup the job controller creates (§5.1); no status (the scheduler treats empty as Pending)."""
    meta, spec = job["metadata"], job["spec"]
    pg_spec: dict[str, Any] = {
        "minMember": int(spec.get("minAvailable") or 0),
        "minTaskMember": {t["name"]: task_min_available(t) for t in spec.get("tasks") or []},
        "queue": spec.get("queue") or "default",
        "minResources": calc_min_resources(job, priority_classes),
    }
    if spec.get("priorityClassName"):
        pg_spec["priorityClassName"] = spec["priorityClassName"]
    if spec.get("networkTopology"):
        pg_spec["networkTopology"] = copy.deepcopy(spec["networkTopology"])
    policies = [sub_group_policy(t) for t in spec.get("tasks") or [] if t.get("partitionPolicy")]
    if policies:
        pg_spec["subGroupPolicy"] = policies
    return {
        "apiVersion": PODGROUP_API_VERSION,
        "kind": "PodGroup",
        "metadata": {
            "name": podgroup_name(job),
            "namespace": meta.get("namespace") or "default",
            "annotations": dict(meta.get("annotations") or {}),
            "labels": dict(meta.get("labels") or {}),
            "ownerReferences": [job_owner_reference(job)],
        },
        "spec": pg_spec,
    }


def sub_group_policy(task: Mapping[str, Any]) -> dict[str, Any]:
    """``getSubGroupPolicy``: a task's partitionPolicy as a PodGroup subgroup policy: the task's pods,
    grouped by their partition label, ``partitionSize`` pods a group, ``minPartitions`` groups needed."""
    pp = task["partitionPolicy"]
    policy: dict[str, Any] = {
        "name": task["name"],
        "subGroupSize": int(pp.get("partitionSize") or 0),
        "minSubGroups": int(pp.get("minPartitions") or 0),
        "labelSelector": {"matchLabels": {TASK_SPEC_KEY: task["name"]}},
        "matchLabelKeys": [PARTITION_ID_KEY],
    }
    if pp.get("networkTopology") is not None:
        policy["networkTopology"] = copy.deepcopy(pp["networkTopology"])
    return policy


def podgroup_needs_update(existing: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    """shouldUpdateExistingPodGroup: priority class, minMember, minResources, minTaskMember or the
    subgroup policies (updatePgSubGroupPolicy) differ."""
    a, b = existing.get("spec") or {}, desired.get("spec") or {}
    return any(a.get(k) != b.get(k) for k in ("priorityClassName", "minMember", "minResources", "minTaskMember",
                                             "subGroupPolicy"))


# -- pods --------------------------------------------------------------------------------------


def build_pod(job: Mapping[str, Any], task: Mapping[str, Any], index: int) -> dict[str, Any]:
    """createJobPod: a task replica, named, labelled and annotated as Volcano does (§5.2).

    Job plugins' OnPodCreate is applied by the caller (job_plugins.on_pod_create).
    """
    meta, spec, status = job["metadata"], job["spec"], job.get("status") or {}
    template = task.get("template") or {}
    tmeta = template.get("metadata") or {}
    job_name, namespace, queue = meta["name"], meta.get("namespace") or "default", spec.get("queue") or "default"
    task_name = task["name"]
    labels = dict(tmeta.get("labels") or {})
    labels.update({TASK_INDEX_KEY: str(index), JOB_NAME_KEY: job_name, TASK_SPEC_KEY: task_name,
                   JOB_NAMESPACE_KEY: namespace, QUEUE_NAME_KEY: queue})
    job_labels = meta.get("labels") or {}
    for key in _JOB_LABELS_TO_POD:
        if key in job_labels:
            labels[key] = job_labels[key]
    pp = task.get("partitionPolicy") or {}
    if pp.get("partitionSize"):
        labels[PARTITION_ID_KEY] = str(index // int(pp["partitionSize"]))
    annotations = dict(tmeta.get("annotations") or {})
    annotations.update({
        TASK_INDEX_KEY: str(index),
        TASK_SPEC_KEY: task_name,
        GROUP_NAME_ANNOTATION: podgroup_name(job),
        JOB_NAME_KEY: job_name,
        QUEUE_NAME_KEY: queue,
        JOB_VERSION_KEY: str(int(status.get("version") or 0)),
        TEMPLATE_UID_KEY: f"{job_name}-{task_name}",
        JOB_RETRY_COUNT_KEY: str(int(status.get("retryCount") or 0)),
    })
    if task.get("topologyPolicy"):
        annotations[NUMA_POLICY_KEY] = task["topologyPolicy"]
    job_annotations = meta.get("annotations") or {}
    for key in _JOB_ANNOTATIONS_TO_POD:
        if key in job_annotations:
            annotations[key] = job_annotations[key]
    if "volcano.sh/jdb-min-available" in job_annotations:
        annotations["volcano.sh/jdb-min-available"] = job_annotations["volcano.sh/jdb-min-available"]
    elif "volcano.sh/jdb-max-unavailable" in job_annotations:
        annotations["volcano.sh/jdb-max-unavailable"] = job_annotations["volcano.sh/jdb-max-unavailable"]
    pod_spec = copy.deepcopy(template.get("spec") or {})
    if not pod_spec.get("schedulerName"):
        pod_spec["schedulerName"] = spec.get("schedulerName") or DEFAULT_SCHEDULER_NAME
    if not pod_spec.get("priorityClassName") and spec.get("priorityClassName"):
        pod_spec["priorityClassName"] = spec["priorityClassName"]
    for vol in spec.get("volumes") or []:
        claim = vol.get("volumeClaimName")
        if not claim:
            continue
        # Volcano names the volume <job>-<12 random chars>; a stable suffix keeps pods reproducible
        vname = f"{job_name}-{_stable_suffix(claim)}"
        pod_spec.setdefault("volumes", []).append({"name": vname, "persistentVolumeClaim": {"claimName": claim}})
        for c in pod_spec.get("containers") or []:
            c.setdefault("volumeMounts", []).append({"name": vname, "mountPath": vol["mountPath"]})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": make_pod_name(job_name, task_name, index),
            "namespace": namespace,
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [job_owner_reference(job)],
        },
        "spec": pod_spec,
    }


def _stable_suffix(text: str) -> str:
    import hashlib

    digest = hashlib.sha256(text.encode()).hexdigest()
    return "".join(c for c in digest if c.isalnum())[:12]


# -- dependsOn ---------------------------------------------------------------------------------


def _pod_ready_for_dependency(pod: Mapping[str, Any]) -> bool:
    status = pod.get("status") or {}
    phase = status.get("phase")
    if phase == "Succeeded":
        return True
    if phase != "Running":
        return False
    return all(cs.get("ready") for cs in status.get("containerStatuses") or [])


def dependencies_ready(job: Mapping[str, Any], task: Mapping[str, Any],
                       pods_by_name: Mapping[str, Mapping[str, Any]]) -> bool:
    """waitDependsOnTaskMeetCondition: may the task's pods be created yet?"""
    depends = task.get("dependsOn")
    if depends is None:
        return True
    tasks = {t["name"]: t for t in job["spec"].get("tasks") or []}
    job_name = job["metadata"]["name"]

    def ready(name: str) -> bool:
        dep = tasks.get(name)
        if dep is None:
            return False
        count = sum(1 for i in range(int(dep.get("replicas") or 0))
                    if (p := pods_by_name.get(make_pod_name(job_name, name, i))) is not None
                    and _pod_ready_for_dependency(p))
        need = int(dep["minAvailable"]) if dep.get("minAvailable") is not None else int(dep.get("replicas") or 0)
        return count >= need

    names = list(depends.get("name") or [])
    if len(names) > 1 and depends.get("iteration") == "any":
        return any(ready(n) for n in names)
    return all(ready(n) for n in names)
