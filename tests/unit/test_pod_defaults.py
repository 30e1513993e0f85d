"""api/pod_defaults.py: each rule of the API server's pod defaulting we apply (issue 16)."""

import copy

from vcsched.api.pod_defaults import default_pod


def pod(**spec) -> dict:
    return {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}], **spec}}


def test_requests_come_from_limits_in_containers_and_init_containers_but_given_ones_stay():
    p = pod(initContainers=[{"name": "i", "resources": {"limits": {"volcano.sh/gpu-memory": "8000"}}}])
    p["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "2", "memory": "1Gi"}, "requests": {"cpu": "1"}}
    default_pod(p)
    assert p["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "1", "memory": "1Gi"}
    assert p["spec"]["initContainers"][0]["resources"]["requests"] == {"volcano.sh/gpu-memory": "8000"}


def test_spec_defaults_and_status_phase():
    p = default_pod(pod())
    s = p["spec"]
    assert (s["schedulerName"], s["restartPolicy"], s["dnsPolicy"], s["terminationGracePeriodSeconds"],
            s["enableServiceLinks"]) == ("default-scheduler", "Always", "ClusterFirst", 30, True)
    assert p["status"] == {"phase": "Pending"}
    given = pod(schedulerName="volcano", restartPolicy="OnFailure", terminationGracePeriodSeconds=0)
    s = default_pod(given)["spec"]
    assert (s["schedulerName"], s["restartPolicy"], s["terminationGracePeriodSeconds"]) == ("volcano", "OnFailure", 0)


def test_ports_get_tcp_and_under_host_network_their_host_port():
    p = pod()
    p["spec"]["containers"][0]["ports"] = [{"containerPort": 80}, {"containerPort": 53, "protocol": "UDP"}]
    plain = default_pod(copy.deepcopy(p))
    assert plain["spec"]["containers"][0]["ports"] == [{"containerPort": 80, "protocol": "TCP"},
                                                       {"containerPort": 53, "protocol": "UDP"}]
    p["spec"]["hostNetwork"] = True
    host = default_pod(p)
    assert [q["hostPort"] for q in host["spec"]["containers"][0]["ports"]] == [80, 53]


def test_default_toleration_seconds_unless_already_tolerated():
    p = default_pod(pod())
    assert p["spec"]["tolerations"] == [
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
    ]
    own = {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5}
    p = default_pod(pod(tolerations=[own]))
    assert [t["key"] for t in p["spec"]["tolerations"]] == ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"]
    assert p["spec"]["tolerations"][0]["tolerationSeconds"] == 5
    everything = {"operator": "Exists"}  # no key, no effect: tolerates both
    assert default_pod(pod(tolerations=[everything]))["spec"]["tolerations"] == [everything]
    no_schedule_only = {"operator": "Exists", "effect": "NoSchedule"}
    assert len(default_pod(pod(tolerations=[no_schedule_only]))["spec"]["tolerations"]) == 3
