"""The extender plugin's HTTP client, argument parsing, answer decoding and ``IsInterested``
(plugins/extender.py), against real sockets on loopback; Volcano's extender_test.go cases by name."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from tests.loopback_extender import Answer, LoopbackExtender, unused_port
from vcsched.framework.arguments import ArgumentError, Arguments
from vcsched.plugins import extender_wire as wire
from vcsched.plugins.extender import (
    MAX_BODY_SIZE,
    ExtenderError,
    HttpClient,
    has_managed_resources,
    has_resources_in_list,
    is_interested,
    parse_config,
)

# -- extender_test.go ------------------------------------------------------------------------------


def test_max_body_size_limit2():
    """TestMaxBodySizeLimit2: an answer over 10 MB is refused with "http: request body too large"."""
    padding = "a" * (MAX_BODY_SIZE + 1)
    with LoopbackExtender({"test": lambda b: Answer(body=b'{"padding":"' + padding.encode() + b'"}')}) as ext:
        client = HttpClient(ext.url, None)
        with pytest.raises(ExtenderError, match="http: request body too large"):
            client.post("test", wire.dumps({"task": {}, "node": {}}), True)


def container(requests=None, limits=None) -> dict:
    res = {}
    if requests is not None:
        res["requests"] = requests
    if limits is not None:
        res["limits"] = limits
    return {"resources": res}


def pod_of(containers=(), init=()) -> dict:
    return {"spec": {"containers": list(containers), "initContainers": list(init)}}


@pytest.mark.parametrize("name, managed, pod, expected", [
    ("empty managed resources - should return true", [], pod_of([container({"cpu": "100m"})]), True),
    ("container has managed resource in requests", ["nvidia.com/gpu"],
     pod_of([container({"cpu": "100m", "nvidia.com/gpu": "1"})]), True),
    ("container has managed resource in limits", ["nvidia.com/gpu"],
     pod_of([container(limits={"nvidia.com/gpu": "1"})]), True),
    ("init container has managed resource", ["nvidia.com/gpu"],
     pod_of([container({"cpu": "100m"})], [container({"nvidia.com/gpu": "1"})]), True),
    ("no managed resources in containers", ["nvidia.com/gpu"],
     pod_of([container({"cpu": "100m", "memory": "128Mi"})]), False),
    ("multiple managed resources - one match", ["nvidia.com/gpu", "amd.com/gpu"],
     pod_of([container({"cpu": "100m", "amd.com/gpu": "1"})]), True),
])
def test_is_interested(name, managed, pod, expected):
    """TestIsInterested, each case by its Go name."""
    assert is_interested(frozenset(managed), pod) is expected


@pytest.mark.parametrize("name, managed, containers, expected", [
    ("no containers", ["nvidia.com/gpu"], [], False),
    ("container with managed resource in requests", ["nvidia.com/gpu"], [container({"nvidia.com/gpu": "1"})], True),
    ("container with managed resource in limits", ["nvidia.com/gpu"], [container(limits={"nvidia.com/gpu": "1"})], True),
    ("container with managed resource in both requests and limits", ["nvidia.com/gpu"],
     [container({"nvidia.com/gpu": "1"}, {"nvidia.com/gpu": "1"})], True),
    ("multiple containers - one has managed resource", ["nvidia.com/gpu"],
     [container({"cpu": "100m"}), container({"nvidia.com/gpu": "1"})], True),
    ("container with no managed resources", ["nvidia.com/gpu"], [container({"cpu": "100m", "memory": "128Mi"})], False),
    ("empty resource requirements", ["nvidia.com/gpu"], [container()], False),
    ("multiple managed resources - partial match", ["nvidia.com/gpu", "amd.com/gpu"],
     [container({"nvidia.com/gpu": "1", "intel.com/gpu": "1"})], True),
])
def test_has_managed_resources(name, managed, containers, expected):
    """TestHasManagedResources, each case by its Go name."""
    assert has_managed_resources(frozenset(managed), containers) is expected


@pytest.mark.parametrize("name, managed, resources, expected", [
    ("empty resource list", ["nvidia.com/gpu"], {}, False),
    ("nil resource list", ["nvidia.com/gpu"], None, False),
    ("resource list contains managed resource", ["nvidia.com/gpu"], {"cpu": "100m", "nvidia.com/gpu": "1"}, True),
    ("resource list contains no managed resources", ["nvidia.com/gpu"], {"cpu": "100m", "memory": "128Mi"}, False),
    ("resource list contains multiple managed resources", ["nvidia.com/gpu", "amd.com/gpu"],
     {"cpu": "100m", "nvidia.com/gpu": "1", "amd.com/gpu": "1"}, True),
    ("resource list contains one of multiple managed resources", ["nvidia.com/gpu", "amd.com/gpu"],
     {"cpu": "100m", "amd.com/gpu": "1"}, True),
    ("empty managed resources - should return false", [], {"cpu": "100m", "nvidia.com/gpu": "1"}, False),
])
def test_has_resources_in_list(name, managed, resources, expected):
    """TestHasResourcesInList, each case by its Go name."""
    assert has_resources_in_list(frozenset(managed), resources) is expected


# -- arguments -------------------------------------------------------------------------------------


def args(**values) -> Arguments:
    return Arguments({f"extender.{k}": v for k, v in values.items()}, "tiers[0].plugins[0].arguments")


def test_defaults_and_timeouts():
    cfg = parse_config(args())
    assert cfg.url_prefix == "" and cfg.timeout == 1.0 and not cfg.ignorable and cfg.managed_resources == frozenset()
    assert parse_config(args(urlPrefix="http://x", httpTimeout="100ms")).timeout == pytest.approx(0.1)
    # Go's http.Client: a zero or negative Timeout means no limit
    assert parse_config(args(urlPrefix="http://x", httpTimeout="0s")).timeout is None
    assert parse_config(args(urlPrefix="http://x", httpTimeout="-1s")).timeout is None
    cfg = parse_config(args(urlPrefix="https://x:8443/p", predicateVerb="f", ignorable="true", managedResources=None))
    assert cfg.verb("extender.predicateVerb") == "f" and cfg.verb("extender.prioritizeVerb") == ""
    assert cfg.ignorable and cfg.managed_resources == frozenset()


@pytest.mark.parametrize("values, field", [
    ({"urlPrefix": "127.0.0.1:80", "predicateVerb": "f"}, "extender.urlPrefix"),
    ({"urlPrefix": "http://"}, "extender.urlPrefix"),
    ({"urlPrefix": ["http://x"]}, "extender.urlPrefix"),
    ({"urlPrefix": "http://x", "httpTimeout": "soon"}, "extender.httpTimeout"),
    ({"urlPrefix": "http://x", "jobReadyVerb": True}, "extender.jobReadyVerb"),
    ({"urlPrefix": "http://x", "managedResources": {"nvidia.com/gpu": 1}}, "extender.managedResources"),
])
def test_bad_arguments_name_the_field(values, field):
    with pytest.raises(ArgumentError, match=f"tiers\\[0\\].plugins\\[0\\].arguments.{field}"):
        parse_config(args(**values))


# -- the client ------------------------------------------------------------------------------------


def test_one_connection_serves_many_calls_and_the_prefix_loses_its_trailing_slash():
    with LoopbackExtender({"f": lambda b: {"echo": b}}) as ext:
        client = HttpClient(ext.url + "//", 2.0)
        for i in range(5):
            assert client.post("f", wire.dumps({"i": i}), True) == {"echo": {"i": i}}
        client.close()
    assert ext.connections == 1
    assert [r.path for r in ext.received] == ["/ext/f"] * 5


def test_a_connection_the_server_dropped_is_retried_on_a_new_one():
    with LoopbackExtender({"f": lambda b: {"ok": True}}, drop_after_answer=True) as ext:
        client = HttpClient(ext.url, 2.0)
        for _ in range(3):
            assert client.post("f", b"{}", True) == {"ok": True}
        client.close()
    assert ext.connections == 3 and len(ext.received) == 3


def test_connection_refused_and_hang_up_are_errors():
    client = HttpClient(f"http://127.0.0.1:{unused_port()}/ext", 1.0)
    with pytest.raises(ExtenderError, match=r'^Post "http://127.0.0.1:\d+/ext/f": connect: connection refused'):
        client.post("f", b"{}", True)
    with LoopbackExtender({"f": lambda b: Answer(hang_up=True)}) as ext:
        with pytest.raises(ExtenderError, match=f'Post "{ext.url}/f"'):
            HttpClient(ext.url, 1.0).post("f", b"{}", True)


class DrippingServer:
    """Answers 200 with a 100-byte body announced, then sends a byte every ``every`` seconds."""

    def __init__(self, every: float) -> None:
        self.every = every
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.serve, daemon=True)

    def serve(self) -> None:
        conn, _ = self.sock.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n")
            for _ in range(100):
                if self.stop.wait(self.every):
                    return
                try:
                    conn.sendall(b" ")
                except OSError:
                    return

    def __enter__(self):
        self.thread.start()
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def __exit__(self, *exc):
        self.stop.set()
        self.sock.close()
        self.thread.join(5)


def test_the_timeout_bounds_the_whole_exchange_not_each_read():
    """Go's Client.Timeout: a body that keeps trickling in still ends the call at the deadline (each
    read alone is quicker than the timeout)."""
    with DrippingServer(every=0.05) as url:
        client = HttpClient(url, 0.3)
        started = time.monotonic()
        with pytest.raises(ExtenderError, match="Client.Timeout exceeded"):
            client.post("f", b"{}", True)
        assert time.monotonic() - started < 2.0  # 100 bytes at 50 ms each would take 5 s


def test_non_200_answers():
    with LoopbackExtender({"f": lambda b: Answer(404, b"{}")}) as ext:
        with pytest.raises(ExtenderError, match=f"^failed f with extender at URL {ext.url}/f, code 404$"):
            HttpClient(ext.url, 1.0).post("f", b"{}", True)


# -- decoding --------------------------------------------------------------------------------------


def test_decoding_follows_go():
    # the first JSON value only; keys fold case; an exact key wins; null leaves the zero value
    assert wire.first_value(b' {"a": 1} trailing') == {"a": 1}
    got = wire.fields({"STATUS": "x", "Code": 2, "other": 1}, "PredicateResponse", ("status", "code"))
    assert got == {"status": "x", "code": 2}
    assert wire.fields({"Status": "folded", "status": "exact"}, "PredicateResponse", ("status",)) == {"status": "exact"}
    assert wire.fields({"status": None}, "PredicateResponse", ("status",)) == {}
    assert wire.fields(None, "PredicateResponse", ("status",)) == {}
    with pytest.raises(wire.DecodeError, match="cannot unmarshal string into Go value of type extender.X"):
        wire.fields("x", "X", ("a",))
    with pytest.raises(wire.DecodeError, match="cannot unmarshal number 2.5 into Go struct field X.code of type int"):
        wire.as_int(2.5, "X", "code")
    assert wire.as_int(3.0, "X", "code") == 3
    with pytest.raises(wire.DecodeError, match="of type bool"):
        wire.as_bool(1, "X", "overused")
    assert wire.as_score_map({"n1": 1, "n2": None}, "X", "nodeScore") == {"n1": 1.0, "n2": 0.0}
    assert wire.as_task_uids([{"uid": "a"}, None, {}], "X", "victims") == ["a", None, ""]
    with pytest.raises(wire.DecodeError):
        wire.first_value(b"   ")


def test_resources_and_times_print_as_go_does():
    from vcsched.api.resource import Resource

    assert wire.resource(Resource(1500.0, 2.0 * 1024, {"nvidia.com/gpu": 1000.0})) == {
        "MilliCPU": 1500, "Memory": 2048, "ScalarResources": {"nvidia.com/gpu": 1000}, "MaxTaskNum": 0}
    assert wire.resource(Resource(0.5))["MilliCPU"] == 0.5
    assert wire.go_time(0) is None
    assert wire.go_time(1767225600.7) == "2026-01-01T00:00:00Z"
