"""What the queue plugins share (proportion, capacity, overcommit): Volcano's Resource arithmetic with
its key-set quirks, and the job helpers of job_info.go and plugins/util."""

from __future__ import annotations

from vcsched.api.job_info import JobInfo
from vcsched.api.resource import PODS, Resource, is_scalar_resource_name
from vcsched.api.types import ALLOCATED_STATUS

# -- Volcano's Resource arithmetic, key sets included ----------------------------------


def plain(r: Resource) -> Resource:
    """A copy without ``max_task_num``, which Volcano's ``Add`` never carries."""
    return Resource(r.milli_cpu, r.memory, dict(r.scalars))


def same(a: Resource, b: Resource) -> bool:
    """``equality.Semantic.DeepEqual`` on the fields that can differ here."""
    return a.milli_cpu == b.milli_cpu and a.memory == b.memory and a.scalars == b.scalars


def resource_max(l: Resource, r: Resource) -> Resource:
    """``helpers.Max``: per-dimension max; scalars the union of the non-negative values."""
    res = Resource(max(l.milli_cpu, r.milli_cpu), max(l.memory, r.memory))
    s = res.scalars
    for name, v in l.scalars.items():
        if v >= 0:
            s[name] = v
    for name, v in r.scalars.items():
        if v >= 0:
            s[name] = max(v, s.get(name, 0.0))
    return res


# -- job helpers shared with overcommit (job_info.go, plugins/util) -----------------------


def allocated_task_num(job: JobInfo) -> int:
    """``CalculateAllocatedTaskNum``: tasks in an allocated status."""
    return sum(1 for t in job.tasks.values() if t.status & ALLOCATED_STATUS)


def get_inqueue_resource(job: JobInfo, allocated: Resource) -> Resource:
    """``GetInqueueResource``: per minResources dimension, what allocated does not cover yet."""
    min_res = job.podgroup.min_resources
    inqueue = Resource()
    inqueue.milli_cpu = max(min_res.milli_cpu - allocated.milli_cpu, 0.0)
    inqueue.memory = max(min_res.memory - allocated.memory, 0.0)
    for name, quant in min_res.scalars.items():
        if name == PODS:
            reserved = quant - allocated.scalars.get(PODS, 0.0)
            if reserved > 0:
                inqueue.scalars[PODS] = reserved
            continue
        if not is_scalar_resource_name(name):
            continue  # ephemeral-storage is not a "scalar resource name"
        if name not in allocated.scalars:
            inqueue.scalars[name] = quant
        else:
            reserved = quant - allocated.scalars[name]
            if reserved > 0:
                inqueue.scalars[name] = reserved
    return inqueue


def sch_gated_resources(job: JobInfo) -> Resource:
    """``GetSchGatedPodResources``: tasks held by a scheduling gate other than Volcano's own."""
    res = Resource()
    for t in job.tasks.values():
        if t.scheduling_gated:
            res.add(t.resreq)
    return res


def deduct_sch_gated_resources(job: JobInfo, res: Resource) -> Resource:
    """``DeductSchGatedResources``: res less the gated tasks' requests, floored at 0."""
    gated = sch_gated_resources(job)
    if gated.is_empty():
        return res
    result = res.clone()
    result.milli_cpu = max(result.milli_cpu - gated.milli_cpu, 0.0)
    result.memory = max(result.memory - gated.memory, 0.0)
    for name, v in res.scalars.items():
        g = gated.scalars.get(name)
        if g is not None:
            result.scalars[name] = max(v - g, 0.0)
    return result


def elastic_resources(job: JobInfo) -> Resource:
    """``GetElasticResources``: allocated beyond minResources (everything, without minResources)."""
    pg = job.podgroup
    min_res = pg.min_resources if pg is not None and pg.min_resources is not None else Resource()
    return job.allocated.exceeded_part(min_res)


def format_resource_names(prefix: str, verb: str, names: list[str]) -> str:
    """``FormatResourceNames``: ``prefix: verb a, verb b``."""
    if not names:
        return prefix
    return f"{prefix}: " + ", ".join(f"{verb} {n}" for n in names)
