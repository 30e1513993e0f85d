"""Pods as the API server stores them: what simulate's controllers create is defaulted like what a
user submits (requests from limits, init containers' device requests), issue 16."""

from pathlib import Path

from vcsched.cache import Cache
from vcsched.conf import DEFAULT_SCHEDULER_CONF, parse_conf
from vcsched.scheduler import Scheduler
from vcsched.sim.cluster import SIM_EPOCH, SimCluster
from vcsched.sim.jobs import SimJobs
from vcsched.sim.manifests import load_manifests

from .conftest import node, pod

EXAMPLES = Path(__file__).parent.parent / "data" / "volcano-examples"


def gpu_node(name: str, gpus: int = 1) -> str:
    return node(name, cpu="16", memory="64Gi", resources={"nvidia.com/gpu": str(gpus)})


def test_volcano_mindspore_gpu_example_places_workers_only_where_gpus_are(simulate):
    """Volcano's example/MindSpore-example/mindspore_gpu/mindspore-gpu.yaml, unchanged: its workers set only
    ``limits: {nvidia.com/gpu: 1}``.  One GPU on the GPU node: the gang of 3 cannot all fit, nothing runs."""
    example = (EXAMPLES / "mindspore-gpu.yaml").read_text()
    code, out = simulate(gpu_node("gpu", gpus=1) + node("cpu", cpu="16", memory="64Gi") + example)
    assert code == 0
    workers = {k: p for k, p in out["pods"].items() if "mpiworker" in k}
    assert len(workers) == 2
    assert all(p["node"] != "cpu" for p in workers.values())
    assert out["jobs"]["default/mindspore-gpu"]["phase"] == "Pending"
    # two GPUs: the whole gang runs, both workers on the GPU node
    code, out = simulate(gpu_node("gpu", gpus=2) + node("cpu", cpu="16", memory="64Gi") + example)
    assert out["jobs"]["default/mindspore-gpu"]["phase"] == "Running"
    assert {p["node"] for k, p in out["pods"].items() if "mpiworker" in k} == {"gpu"}
    assert out["queues"]["default"]["allocated"]["nvidia.com/gpu"] == "2"


VJ_TEST = """
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: vj-test
spec:
  schedulerName: volcano
  minAvailable: 1
  tasks:
    - replicas: 1
      name: "test"
      topologyPolicy: best-effort
      template:
        spec:
          containers:
            - image: alpine
              command: ["/bin/sh", "-c", "sleep 1000"]
              imagePullPolicy: IfNotPresent
              name: running
              resources:
                limits:
                  cpu: 20
                  memory: "100Mi"
          restartPolicy: OnFailure
"""


def test_numa_guide_vj_test_needs_20_free_cpus(simulate):
    """The NUMA user guide's vj-test (limits cpu: 20): not on a 16-CPU node, on the 32-CPU one."""
    code, out = simulate(node("small", cpu="16", memory="64Gi") + VJ_TEST)
    assert code == 0 and out["pods"]["default/vj-test-test-0"]["node"] is None
    code, out = simulate(node("small", cpu="16", memory="64Gi") + node("big", cpu="32", memory="64Gi") + VJ_TEST)
    assert out["pods"]["default/vj-test-test-0"]["node"] == "big"
    assert out["queues"]["default"]["allocated"]["cpu"] == "20"


def _simulated(text: str, tmp_path) -> tuple[SimCluster, SimJobs]:
    """``text`` through a few cycles of simulate's loop; the cluster as the simulated API server holds it."""
    path = tmp_path / "in.yaml"
    path.write_text(text)
    cluster = SimCluster.from_manifests(load_manifests([str(path)]))
    cache = Cache()
    cluster.feed(cache)
    scheduler = Scheduler(cache, parse_conf(DEFAULT_SCHEDULER_CONF))
    jobs = SimJobs(cluster, cache)
    now = SIM_EPOCH + 3600
    jobs.settle(now, now)
    for cycle in range(3):  # the PodGroup goes Inqueue; then the job controller makes the pods
        cluster.apply(scheduler.run_once(now=now, uid=f"s{cycle}"), cache)
        jobs.settle(now, now)
    return cluster, jobs


PRIORITY_JOB = """
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: j}
spec:
  priorityClassName: high
  tasks:
  - name: t
    replicas: 1
    template:
      spec:
        hostNetwork: true
        containers:
        - name: main
          image: busybox
          ports: [{containerPort: 8080}]
          resources: {limits: {cpu: "1", nvidia.com/gpu: "1"}}
"""


def test_job_pods_are_defaulted_and_admitted_as_the_api_server_does(tmp_path):
    cluster, _ = _simulated(PRIORITY_JOB, tmp_path)
    pod = cluster.pods["default/j-t-0"]
    spec = pod["spec"]
    assert spec["priority"] == 1000 and spec["preemptionPolicy"] == "PreemptLowerPriority"  # Priority admission
    c = spec["containers"][0]
    assert c["resources"]["requests"] == {"cpu": "1", "nvidia.com/gpu": "1"}  # requests from limits
    assert c["ports"] == [{"containerPort": 8080, "protocol": "TCP", "hostPort": 8080}]  # hostNetwork
    assert {t["key"] for t in spec["tolerations"]} == {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}
    assert pod["status"]["phase"] == "Pending"


def test_a_job_pod_the_api_server_refuses_is_not_created(tmp_path):
    """A template naming a PriorityClass that does not exist: Volcano's FailedCreate event, no pod."""
    text = PRIORITY_JOB.replace("metadata: {name: high}\nvalue: 1000", "metadata: {name: other}\nvalue: 5")
    cluster, jobs = _simulated(text, tmp_path)
    assert "default/j-t-0" not in cluster.pods
    events = jobs.records["default/j"].events
    assert any(e.reason == "FailedCreate" and "no PriorityClass with name high was found" in e.message for e in events)


def test_match_label_keys_join_the_affinity_selector(simulate):
    """The API server adds ``version In [v2]`` to web-v2's anti-affinity selector (matchLabelKeys), so
    web-v1, of another version, does not keep it off n1; mismatchLabelKeys adds NotIn the same way."""
    def web(name: str, version: str, extra: str = "", node_name: str | None = None) -> str:
        return pod(name, node_name=node_name, phase="Running" if node_name else None,
                   meta_extra=f"  labels: {{app: web, version: {version}}}", spec_extra=extra)

    anti = """  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - labelSelector: {matchLabels: {app: web}}
        topologyKey: kubernetes.io/hostname
        %s: [version]"""
    code, out = simulate(node("n1") + web("web-v1", "v1", node_name="n1") + web("web-v2", "v2", anti % "matchLabelKeys"))
    assert code == 0
    assert out["pods"]["default/web-v2"]["node"] == "n1"
    # mismatchLabelKeys: pods of another version only (app=web, version NotIn [v2]): web-v1 is one
    code, out = simulate(node("n1") + web("web-v1", "v1", node_name="n1") + web("web-v2", "v2", anti % "mismatchLabelKeys"))
    assert code == 0
    assert out["pods"]["default/web-v2"]["node"] is None
