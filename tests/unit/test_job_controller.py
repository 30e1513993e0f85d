"""The job controller's pure functions: admission, PodGroup and pods, policies, every phase transition."""

import pytest

from vcsched.controllers import job as jc
from vcsched.controllers import job_state as js

OPEN = {"default": {"metadata": {"name": "default"}, "status": {"state": "Open"}}}


def make_job(name="j1", tasks=None, **spec):
    tasks = tasks if tasks is not None else [{"name": "worker", "replicas": 2, "template": {"spec": {
        "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}}]
    job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
           "metadata": {"name": name, "namespace": "ns", "uid": "u1"}, "spec": {"tasks": tasks, **spec}}
    return jc.mutate_job(job)


def message(job, queues=OPEN):
    return jc.volcano_message(jc.validate_job(job, queues))


# -- admission -----------------------------------------------------------------------------------


def test_mutate_defaults_as_the_webhook():
    job = jc.mutate_job({"metadata": {"name": "j"}, "spec": {"tasks": [{"replicas": 2}, {"name": "ps", "replicas": 1}]}})
    spec = job["spec"]
    assert [t["name"] for t in spec["tasks"]] == ["default0", "ps"]
    assert [t["minAvailable"] for t in spec["tasks"]] == [2, 1]
    assert (spec["minAvailable"], spec["maxRetry"], spec["queue"], spec["schedulerName"]) == (3, 3, "default", "volcano")


def test_valid_job_has_no_problems():
    assert jc.validate_job(make_job(), OPEN) == []


def test_duplicate_task_names():
    t = {"name": "a", "replicas": 1, "template": {}}
    assert message(make_job(tasks=[t, dict(t)])) == "duplicated task name a;"


def test_min_available_above_replicas():
    job = make_job(tasks=[{"name": "a", "replicas": 1, "minAvailable": 2, "template": {}}])
    assert message(job).startswith("'minAvailable' is greater than 'replicas' in task: a, job: j1;")
    job = make_job(minAvailable=5)
    assert message(job) == "job 'minAvailable' should not be greater than total replicas in tasks;"


def test_unknown_policy_event_and_action():
    job = make_job(policies=[{"event": "Nope", "action": "RestartJob"}])
    assert message(job).startswith('1 error occurred:\n\t* spec.policies: Invalid value: "Nope": invalid policy event')
    assert "valid events are [* PodFailed" in message(job)
    job = make_job(policies=[{"event": "PodFailed", "action": "Explode"}])
    assert 'Invalid value: "Explode": invalid policy action' in message(job)


def test_depends_on_cycle_is_refused_with_the_cycle_named():
    base = {"replicas": 1, "template": {}}
    job = make_job(tasks=[{**base, "name": "a", "dependsOn": {"name": ["b"]}},
                          {**base, "name": "b", "dependsOn": {"name": ["a"]}}])
    problems = jc.validate_job(job, OPEN)
    assert jc.volcano_message(problems) == ("job has dependencies between tasks, but doesn't form a directed "
                                            "acyclic graph(DAG);")
    assert problems[0].hint in ("cycle a -> b -> a", "cycle b -> a -> b")


def test_missing_and_closed_queue():
    assert message(make_job(queue="q1")) == 'unable to find job queue: queue.scheduling.volcano.sh "q1" not found;'
    closed = {"q1": {"metadata": {"name": "q1"}, "status": {"state": "Closed"}}}
    assert message(make_job(queue="q1"), closed) == ("can only submit job to queue with state `Open`, queue `q1` "
                                                     "status is `Closed`;")


def test_name_too_long_for_pod_naming():
    job = make_job(name="j" * 55)
    assert message(job) == (f"create pod with name {'j' * 55}-worker-0 validate failed "
                            "[name part must be no more than 63 characters];")


# -- what the controller creates -----------------------------------------------------------------------


def test_podgroup_and_min_resources():
    tasks = [{"name": "ps", "replicas": 1, "minAvailable": 1, "template": {"spec": {"containers": [
        {"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}},
             {"name": "worker", "replicas": 4, "minAvailable": 2, "template": {"spec": {"containers": [
                 {"name": "c", "resources": {"requests": {"cpu": "2", "memory": "4Gi"}}}]}}}]
    pg = jc.build_podgroup(make_job(tasks=tasks, minAvailable=3, priorityClassName="high"))
    assert pg["metadata"]["name"] == "j1-u1"
    assert pg["spec"]["minMember"] == 3 and pg["spec"]["minTaskMember"] == {"ps": 1, "worker": 2}
    assert pg["spec"]["priorityClassName"] == "high" and pg["spec"]["queue"] == "default"
    res = pg["spec"]["minResources"]
    assert (res["cpu"], res["requests.cpu"], res["pods"], res["count/pods"]) == ("5", "5", "3", "3")
    assert res["memory"] == str(9 * 2**30)
    res2 = jc.build_podgroup(make_job(tasks=tasks, minAvailable=2))["spec"]["minResources"]
    assert (res2["cpu"], res2["pods"]) == ("3", "2")


def test_pod_naming_labels_annotations_env():
    job = make_job(plugins={"env": []})
    job["status"] = {"version": 2, "retryCount": 1}
    pod = jc.build_pod(job, job["spec"]["tasks"][0], 1)
    from vcsched.controllers import job_plugins

    job_plugins.on_pod_create(job, job["spec"]["plugins"], pod)
    assert pod["metadata"]["name"] == "j1-worker-1"
    ann = pod["metadata"]["annotations"]
    assert ann["scheduling.k8s.io/group-name"] == "j1-u1"
    assert (ann["volcano.sh/job-version"], ann["volcano.sh/job-retry-count"]) == ("2", "1")
    assert ann["volcano.sh/template-uid"] == "j1-worker" and ann["volcano.sh/task-index"] == "1"
    assert pod["metadata"]["labels"]["volcano.sh/job-namespace"] == "ns"
    assert pod["spec"]["schedulerName"] == "volcano"
    assert {"name": "VC_TASK_INDEX", "value": "1"} in pod["spec"]["containers"][0]["env"]


def test_svc_plugin_config_map():
    job = make_job(name="tf", tasks=[{"name": "ps", "replicas": 1, "template": {}},
                                      {"name": "worker-x", "replicas": 2, "template": {}}])
    from vcsched.controllers.job_plugins import svc_config_map_data

    assert svc_config_map_data(job) == {
        "ps.host": "tf-ps-0.tf", "VC_PS_HOSTS": "tf-ps-0.tf", "VC_PS_NUM": "1",
        "worker_x.host": "tf-worker-x-0.tf\ntf-worker-x-1.tf",
        "VC_WORKER_X_HOSTS": "tf-worker-x-0.tf,tf-worker-x-1.tf", "VC_WORKER_X_NUM": "2"}


def test_ssh_plugin_secret():
    job = make_job(plugins={"ssh": []})
    out = js.Outcome(status={})
    from vcsched.controllers import job_plugins

    job_plugins.on_job_add(job, job["spec"]["plugins"], out.status, out)
    secret = out.apply_objects[0]
    assert secret["metadata"]["name"] == "j1-ssh"
    assert secret["stringData"]["id_rsa"].startswith("-----BEGIN RSA PRIVATE KEY-----")
    assert "Host j1-worker-1\n  HostName j1-worker-1.j1\n  Port 22\n" in secret["stringData"]["config"]
    assert out.status["controlledResources"] == {"plugin-ssh": "ssh"}


# -- reconcile: the handshake and the state machine -----------------------------------------------------

NOW = "2026-01-01T01:00:00Z"


def observed(job, pods=(), pg_phase=None, phase=None, **status):
    job = dict(job)
    if phase is not None:
        job["status"] = {"state": {"phase": phase}, "minAvailable": job["spec"]["minAvailable"], **status}
    pods = {p["metadata"]["name"]: p for p in pods}
    pg = None
    if pg_phase is not None:
        pg = jc.build_podgroup(job)
        pg["status"] = {"phase": pg_phase}
    return js.Observed(job=job, pods=pods, podgroup=pg, now=NOW)


def pod(job, i, phase, task="worker", exit_code=None):
    p = jc.build_pod(job, next(t for t in job["spec"]["tasks"] if t["name"] == task), i)
    p["metadata"]["uid"] = f"uid-{i}"
    p["status"] = {"phase": phase}
    if exit_code is not None:
        p["status"]["containerStatuses"] = [{"state": {"terminated": {"exitCode": exit_code}}}]
    return p


def test_new_job_gets_pending_and_a_podgroup_but_no_pods():
    out = js.reconcile(observed(make_job()), js.Request())
    assert out.phase == "Pending" and out.write_status
    assert out.create_podgroup["metadata"]["name"] == "j1-u1"
    assert out.create_pods == []
    assert out.status["conditions"] == [{"status": "Pending", "lastTransitionTime": NOW}]


def test_pods_only_once_the_podgroup_is_inqueue():
    job = make_job()
    assert js.reconcile(observed(job, pg_phase="Pending", phase="Pending"), js.Request()).create_pods == []
    out = js.reconcile(observed(job, pg_phase="Inqueue", phase="Pending"), js.Request())
    assert [p["metadata"]["name"] for p in out.create_pods] == ["j1-worker-0", "j1-worker-1"]
    assert out.status["pending"] == 2 and out.phase == "Pending"


def test_pending_to_running_to_completed():
    job = make_job()
    out = js.reconcile(observed(job, [pod(job, 0, "Running"), pod(job, 1, "Running")], "Inqueue", "Pending"),
                       js.Request(event="PodRunning"))
    assert out.phase == "Running"
    done = [pod(job, 0, "Succeeded"), pod(job, 1, "Succeeded")]
    out = js.reconcile(observed(job, done, "Running", "Running"), js.Request(event="TaskCompleted", task="worker"))
    assert out.phase == "Completed"


def test_running_to_failed_when_all_finished_below_min():
    job = make_job()
    out = js.reconcile(observed(job, [pod(job, 0, "Succeeded"), pod(job, 1, "Failed", exit_code=1)], "Running",
                                "Running"), js.Request(event="OutOfSync"))
    assert out.phase == "Failed"


def test_min_success_completes():
    job = make_job(minSuccess=1)
    out = js.reconcile(observed(job, [pod(job, 0, "Succeeded"), pod(job, 1, "Running")], "Running", "Running"),
                       js.Request())
    assert out.phase == "Completed"


@pytest.mark.parametrize("event,action", [("PodFailed", "RestartJob"), ("PodEvicted", "RestartJob"),
                                          ("Unknown", "RestartJob"), ("TaskFailed", "RestartJob"),
                                          ("TaskCompleted", "CompleteJob"), ("*", "AbortJob"),
                                          ("PodFailed", "TerminateJob")])
def test_policy_event_gives_action(event, action):
    job = make_job(policies=[{"event": event, "action": action}])
    ev = "PodFailed" if event == "*" else event
    assert js.apply_policies(job, js.Request(event=ev, task="worker")) == (action, 0.0)


def test_internal_events_and_old_versions_sync():
    job = make_job(policies=[{"event": "*", "action": "AbortJob"}])
    for ev in ("OutOfSync", "CommandIssued", "PodRunning"):
        assert js.apply_policies(job, js.Request(event=ev))[0] == "SyncJob"
    job["status"] = {"version": 2}
    assert js.apply_policies(job, js.Request(event="PodFailed", job_version=1))[0] == "SyncJob"


def test_command_action_wins_and_task_policies_come_first():
    job = make_job(policies=[{"event": "PodFailed", "action": "AbortJob"}])
    job["spec"]["tasks"][0]["policies"] = [{"event": "PodFailed", "action": "RestartTask"}]
    assert js.apply_policies(job, js.Request(event="PodFailed", task="worker"))[0] == "RestartTask"
    assert js.apply_policies(job, js.Request(event="CommandIssued", action="ResumeJob"))[0] == "ResumeJob"


def test_exit_code_policy_and_pod_pending_needs_timeout():
    job = make_job(policies=[{"exitCode": 3, "action": "RestartPod"}, {"event": "PodPending", "action": "AbortJob"}])
    assert js.apply_policies(job, js.Request(event="PodFailed", exit_code=3))[0] == "RestartPod"
    assert js.apply_policies(job, js.Request(event="PodPending"))[0] == "SyncJob"
    job = make_job(policies=[{"event": "PodPending", "action": "AbortJob", "timeout": "1m"}])
    assert js.apply_policies(job, js.Request(event="PodPending")) == ("AbortJob", 60.0)


def test_delayed_action_is_armed_with_volcanos_event():
    job = make_job(policies=[{"event": "PodPending", "action": "AbortJob", "timeout": "90s"}])
    out = js.reconcile(observed(job, phase="Pending"), js.Request(event="PodPending", pod_name="p"))
    assert out.delayed.action == "AbortJob" and out.delayed.delay == 90
    assert out.events == [js.JobEvent("Normal", "ExecuteAction", "Execute action AbortJob after 1m30s")]
    assert out.delete_pods == [] and not out.write_status


def test_restart_job_kills_everything_and_deletes_the_podgroup():
    job = make_job(policies=[{"event": "PodFailed", "action": "RestartJob"}])
    pods = [pod(job, 0, "Failed", exit_code=1), pod(job, 1, "Running")]
    out = js.reconcile(observed(job, pods, "Running", "Running"), js.Request(event="PodFailed", task="worker"))
    assert out.phase == "Restarting" and out.status["retryCount"] == 1 and out.status["version"] == 1
    assert sorted(out.delete_pods) == ["j1-worker-0", "j1-worker-1"] and out.delete_podgroup
    assert out.status["terminating"] == 2
    assert js.JobEvent("Normal", "ExecuteAction", "Start to execute action RestartJob ") in out.events


def test_last_retry_keeps_failed_pods():
    job = make_job()
    pods = [pod(job, 0, "Failed"), pod(job, 1, "Running")]
    out = js.reconcile(observed(job, pods, "Running", "Running", retryCount=2), js.Request(action="RestartJob"))
    assert out.delete_pods == ["j1-worker-1"]


def test_restart_task_and_pod_are_targeted():
    job = make_job()
    pods = [pod(job, 0, "Failed"), pod(job, 1, "Running")]
    out = js.reconcile(observed(job, pods, "Running", "Running"),
                       js.Request(action="RestartPod", task="worker", pod_name="j1-worker-0"))
    assert out.delete_pods == ["j1-worker-0"] and not out.delete_podgroup and out.phase == "Restarting"
    assert "version" not in out.status or out.status["version"] == 0
    out = js.reconcile(observed(job, pods, "Running", "Running"), js.Request(action="RestartTask", task="worker"))
    assert sorted(out.delete_pods) == ["j1-worker-0", "j1-worker-1"]


def test_restarting_to_pending_or_failed():
    job = make_job()
    out = js.reconcile(observed(job, [], "Inqueue", "Restarting", retryCount=1, terminating=0), js.Request())
    assert out.phase == "Pending"
    out = js.reconcile(observed(job, [], "Inqueue", "Restarting", retryCount=3), js.Request())
    assert out.phase == "Failed"
    out = js.reconcile(observed(job, [], None, "Restarting", retryCount=1, terminating=2), js.Request())
    assert out.phase == "Restarting"


@pytest.mark.parametrize("action,mid,end", [("AbortJob", "Aborting", "Aborted"),
                                            ("TerminateJob", "Terminating", "Terminated"),
                                            ("CompleteJob", "Completing", "Completed")])
def test_soft_kills_drain_then_finish(action, mid, end):
    job = make_job()
    pods = [pod(job, 0, "Succeeded"), pod(job, 1, "Running")]
    out = js.reconcile(observed(job, pods, "Running", "Running"), js.Request(action=action))
    assert out.phase == mid and out.delete_pods == ["j1-worker-1"]
    out = js.reconcile(observed(job, [pods[0]], None, mid), js.Request())
    assert out.phase == end


def test_resume_from_aborted_restarts():
    job = make_job()
    out = js.reconcile(observed(job, [], None, "Aborted"), js.Request(event="CommandIssued", action="ResumeJob"))
    assert out.phase == "Restarting" and out.status["retryCount"] == 1
    assert out.events[0].reason == "CommandIssued"


def test_finished_job_stays_and_counts_drop():
    job = make_job()
    out = js.reconcile(observed(job, [pod(job, 0, "Succeeded")], "Running", "Completed", succeeded=1), js.Request())
    assert out.phase == "Completed" and out.status["succeeded"] == 0 and out.delete_podgroup


def test_running_back_to_pending_when_too_many_pending():
    job = make_job()
    out = js.reconcile(observed(job, [pod(job, 0, "Pending"), pod(job, 1, "Pending")], "Inqueue", "Running"),
                       js.Request())
    assert out.phase == "Pending"


def test_depends_on_defers_pod_creation():
    base = {"replicas": 1, "template": {}}
    job = make_job(tasks=[{**base, "name": "a"}, {**base, "name": "b", "dependsOn": {"name": ["a"]}}])
    out = js.reconcile(observed(job, [], "Inqueue", "Pending"), js.Request())
    assert [p["metadata"]["name"] for p in out.create_pods] == ["j1-a-0"]
    out = js.reconcile(observed(job, [pod(job, 0, "Succeeded", task="a")], "Inqueue", "Pending"), js.Request())
    assert [p["metadata"]["name"] for p in out.create_pods] == ["j1-b-0"]


def test_pod_events_from_pod_changes():
    job = make_job()
    p0, p1 = pod(job, 0, "Running"), pod(job, 1, "Succeeded")
    failed = pod(job, 0, "Failed", exit_code=7)
    req = js.request_for_pod_update(job, p0, failed, {"j1-worker-0": failed, "j1-worker-1": p1})
    assert (req.event, req.exit_code, req.task) == ("PodFailed", 7, "worker")
    done = pod(job, 0, "Succeeded")
    req = js.request_for_pod_update(job, p0, done, {"j1-worker-0": done, "j1-worker-1": p1})
    assert req.event == "TaskCompleted"
    assert js.request_for_pod_delete(p0).event == "PodEvicted"
    assert js.request_for_pod_update(job, pod(job, 0, "Pending"), p0, {}).event == "PodRunning"


def test_ttl_deadline():
    job = make_job(ttlSecondsAfterFinished=30)
    job["status"] = {"state": {"phase": "Completed", "lastTransitionTime": "t"}}
    assert js.ttl_deadline(job, lambda t: 100.0) == 130.0
    job["status"]["state"]["phase"] = "Running"
    assert js.ttl_deadline(job, lambda t: 100.0) is None


def test_durations():
    assert js.parse_duration("1m30s") == 90 and js.format_duration(90) == "1m30s"
    assert js.format_duration(3600) == "1h0m0s"
    with pytest.raises(js.DurationError):
        js.parse_duration("soon")
