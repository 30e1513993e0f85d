"""batch.volcano.sh Jobs through ``vcsched simulate``: expanded, scheduled, run, restarted, refused."""

import json

from .conftest import node, queue


def job(name, replicas=2, cpu="1", queue_name="default", min_available=None, annotations="", policies="",
        extra="", tasks=None):
    ma = f"\n  minAvailable: {min_available}" if min_available is not None else ""
    ann = f"\n        annotations: {{{annotations}}}" if annotations else ""
    pol = f"\n  policies: {policies}" if policies else ""
    tasks = tasks or f"""
  - name: worker
    replicas: {replicas}
    template:
      metadata:{ann or ' {}'}
      spec:
        containers: [{{name: main, image: busybox, resources: {{requests: {{cpu: "{cpu}"}}}}}}]"""
    return f"""
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: {name}}}
spec:
  queue: {queue_name}{ma}{pol}{extra}
  tasks:{tasks}
"""


def test_gang_of_jobs_across_queues(simulate):
    # 4 CPUs; a and b each get 2 (equal weights); c's gang of 3 cannot start
    text = node("n1", cpu="4") + queue("a") + queue("b") + job("ja", 2, queue_name="a") + \
        job("jb", 2, queue_name="b") + job("jc", 3, queue_name="b")
    code, out = simulate(text)
    assert code == 0
    jobs = out["jobs"]
    assert jobs["default/ja"]["phase"] == "Running" and jobs["default/ja"]["pods"]["running"] == 2
    assert jobs["default/jb"]["phase"] == "Running"
    assert jobs["default/jc"]["phase"] == "Pending" and jobs["default/jc"]["pods"]["running"] == 0
    pod = out["pods"]["default/ja-worker-0"]
    assert pod["annotations"]["volcano.sh/task-spec"] == "worker"
    assert pod["annotations"]["scheduling.k8s.io/group-name"].startswith("ja-")
    assert out["podgroups"][f"default/{pod['annotations']['scheduling.k8s.io/group-name']}"]["phase"] == "Running"


def test_failing_task_restarts_up_to_max_retry_then_fails(simulate):
    text = node("n1") + job("j1", 2, annotations='vcsched.io/sim-fail-after: 10s, vcsched.io/sim-exit-code: "3"',
                            policies="[{event: PodFailed, action: RestartJob}]", extra="\n  maxRetry: 2")
    code, out = simulate(text)
    assert code == 0
    j = out["jobs"]["default/j1"]
    assert j["phase"] == "Failed" and j["retryCount"] == 2
    # the last retry retains the failed pods
    assert j["pods"]["failed"] == 2
    assert out["pods"]["default/j1-worker-0"]["annotations"]["volcano.sh/job-retry-count"] == "1"


def test_exit_code_policy_restarts_only_the_pod(simulate):
    text = node("n1") + job("j1", 2, annotations='vcsched.io/sim-fail-after: 5s, vcsched.io/sim-exit-code: "3"',
                            policies="[{exitCode: 3, action: RestartPod}]", extra="\n  maxRetry: 1")
    code, out = simulate(text)
    assert code == 0
    assert out["jobs"]["default/j1"]["retryCount"] >= 1


def test_completed_job(simulate):
    text = node("n1") + job("j1", 2, annotations="vcsched.io/sim-duration: 30s")
    code, out = simulate(text)
    assert code == 0
    j = out["jobs"]["default/j1"]
    assert j["phase"] == "Completed" and j["pods"]["succeeded"] == 2
    assert out["cycles"] <= 20
    assert out["nodes"]["n1"]["used"]["cpu"] == "0"


def test_ttl_deletes_the_finished_job(simulate):
    text = node("n1") + job("j1", 1, annotations="vcsched.io/sim-duration: 5s", extra="\n  ttlSecondsAfterFinished: 60")
    code, out = simulate(text)
    assert code == 0
    assert "default/j1" not in out["jobs"] and "default/j1-worker-0" not in out["pods"]


def test_job_waits_for_its_podgroup_to_be_inqueue(simulate):
    code, out = simulate(node("n1", cpu="2") + job("big", 3), "--cycles", "1")
    assert code == 0
    assert out["jobs"]["default/big"]["phase"] == "Pending" and out["pods"] == {}


# -- bad input: the validating webhook refuses at admission (exit 2, file, document, field) -------------------


def refused(simulate, text):
    code, err = simulate(node("n1") + text)
    assert code == 2, err
    assert "Traceback" not in err
    return err.strip()


def test_duplicate_task_names(simulate):
    t = """
  - {name: a, replicas: 1, template: {spec: {containers: [{name: c, image: x}]}}}"""
    err = refused(simulate, job("j1", tasks=t + t))
    assert err.endswith("document 1 (Job default/j1): spec.tasks[1].name: duplicated task name a;")


def test_min_available_above_replicas(simulate):
    err = refused(simulate, job("j1", 2, min_available=3))
    assert "spec.minAvailable: job 'minAvailable' should not be greater than total replicas in tasks;" in err


def test_unknown_policy_event_and_action(simulate):
    err = refused(simulate, job("j1", policies="[{event: Nope, action: RestartJob}]"))
    assert 'spec.policies: 1 error occurred: * spec.policies: Invalid value: "Nope": invalid policy event' in err
    err = refused(simulate, job("j1", policies="[{event: PodFailed, action: Explode}]"))
    assert 'Invalid value: "Explode": invalid policy action' in err


def test_depends_on_cycle(simulate):
    t = """
  - {name: a, replicas: 1, dependsOn: {name: [b]}, template: {spec: {containers: [{name: c, image: x}]}}}
  - {name: b, replicas: 1, dependsOn: {name: [a]}, template: {spec: {containers: [{name: c, image: x}]}}}"""
    err = refused(simulate, job("j1", tasks=t))
    assert "spec.tasks.dependsOn: job has dependencies between tasks, but doesn't form a directed acyclic " \
           "graph(DAG); (cycle " in err


def test_missing_queue(simulate):
    err = refused(simulate, job("j1", queue_name="nope"))
    assert err.endswith('(Job default/j1): spec.queue: unable to find job queue: '
                        'queue.scheduling.volcano.sh "nope" not found;')


def test_name_too_long_for_pod_naming(simulate):
    name = "j" * 56
    err = refused(simulate, job(name))
    assert f"spec.tasks[0].name: create pod with name {name}-worker-0 validate failed " \
           "[name part must be no more than 63 characters];" in err


def test_bad_sim_annotation(simulate):
    err = refused(simulate, job("j1", annotations="vcsched.io/sim-duration: soon"))
    assert "spec.tasks[0].template.metadata.annotations[vcsched.io/sim-duration]" in err


def test_the_jobs_example_runs_to_its_documented_end(capsys):
    from pathlib import Path

    from vcsched.cli import main

    example = Path(__file__).resolve().parents[2] / "conf" / "examples" / "jobs.yaml"
    assert main(["simulate", "-f", str(example), "-o", "json"]) == 0
    jobs = json.loads(capsys.readouterr().out)["jobs"]
    assert (jobs["default/train"]["phase"], jobs["default/train"]["pods"]["succeeded"]) == ("Completed", 3)
    assert (jobs["default/flaky"]["phase"], jobs["default/flaky"]["retryCount"]) == ("Failed", 2)
