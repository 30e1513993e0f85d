"""A real Kubernetes control plane on loopback: etcd and kube-apiserver from ``$KUBEBUILDER_ASSETS``.

controller-runtime's envtest convention: the folder named by ``KUBEBUILDER_ASSETS`` holds the
unmodified upstream binaries (``etcd``, ``kube-apiserver``, ``kube-scheduler``).  ``ControlPlane``
starts them on free ports with a throwaway PKI (a CA, a serving certificate for 127.0.0.1, a
service-account key pair) and a static token file, installs the chart's CRDs, and writes
kubeconfigs: one for an administrator (``system:masters``) and one per extra user, who has no
rights until a test binds a role to it (least privilege).

What a bare control plane lacks (no kubelet, controller-manager, garbage collector) the tests
play themselves.  The faults it can make: the API server restarted with etcd kept
(``restart_apiserver``) and etcd compacted to its head revision (``compact``), after which every
watch resumed from an older resourceVersion answers 410 Gone.

The real-apiserver tests (tests/envtest) and ``vcsched bench --apiserver`` use it.
"""

from __future__ import annotations

import base64
import ctypes
import datetime
import ipaddress
import json
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from prometheus_client.parser import text_string_to_metric_families
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

ASSETS_ENV = "KUBEBUILDER_ASSETS"
CRD_DIR = Path(__file__).resolve().parent.parent / "charts" / "vcsched" / "crd"


class ControlPlaneError(Exception):
    """The control plane could not be started (the message says which part and what it printed)."""


def assets_dir() -> Path | None:
    """The folder of the control-plane binaries, or None when ``$KUBEBUILDER_ASSETS`` is unset or lacks them."""
    folder = os.environ.get(ASSETS_ENV)
    if not folder:
        return None
    path = Path(folder)
    return path if all((path / b).is_file() for b in ("etcd", "kube-apiserver")) else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass(slots=True)
class User:
    """A user of the static token file; ``groups`` empty means no rights but what RBAC grants the name."""

    name: str
    token: str
    groups: tuple[str, ...] = ()
    kubeconfig: Path | None = None


@dataclass(slots=True)
class _Pki:
    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes
    sa_public_pem: bytes
    sa_private_pem: bytes


def _pki() -> _Pki:
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "envtest-ca")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=2))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    sa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = serialization.Encoding.PEM
    return _Pki(
        ca_pem=ca.public_bytes(pem), cert_pem=cert.public_bytes(pem),
        key_pem=key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()),
        sa_public_pem=sa.public_key().public_bytes(pem, serialization.PublicFormat.SubjectPublicKeyInfo),
        sa_private_pem=sa.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))


@dataclass
class ControlPlane:
    """etcd + kube-apiserver in ``workdir`` (a temporary folder by default); ``start()``, then ``stop()``.

    ``users`` names the extra users of the token file (each gets a kubeconfig, no group, no rights).
    """

    assets: Path
    users: tuple[str, ...] = ()
    workdir: Path | None = None
    install_crds: bool = True
    extra_apiserver_flags: tuple[str, ...] = ()
    url: str = ""
    admin: User = field(init=False)
    accounts: dict[str, User] = field(init=False, default_factory=dict)
    _etcd: subprocess.Popen[bytes] | None = field(init=False, default=None)
    _apiserver: subprocess.Popen[bytes] | None = field(init=False, default=None)
    _ssl: ssl.SSLContext | None = field(init=False, default=None)
    _own_workdir: bool = field(init=False, default=False)

    # -- lifecycle --------------------------------------------------------------------------------

    def start(self, timeout: float = 60.0) -> "ControlPlane":
        if self.workdir is None:
            self.workdir = Path(tempfile.mkdtemp(prefix="vcsched-envtest-"))
            self._own_workdir = True
        self.workdir.mkdir(parents=True, exist_ok=True)
        pki = _pki()
        files = {"ca.crt": pki.ca_pem, "apiserver.crt": pki.cert_pem, "apiserver.key": pki.key_pem,
                 "sa.pub": pki.sa_public_pem, "sa.key": pki.sa_private_pem}
        for name, data in files.items():
            (self.workdir / name).write_bytes(data)
        self.admin = User("admin", secrets.token_hex(16), ("system:masters",))
        self.accounts = {name: User(name, secrets.token_hex(16)) for name in self.users}
        with open(self.workdir / "tokens.csv", "w", encoding="utf-8") as f:
            for i, u in enumerate((self.admin, *self.accounts.values())):
                groups = f',"{",".join(u.groups)}"' if u.groups else ""
                f.write(f"{u.token},{u.name},uid-{i}{groups}\n")
        self._etcd_port, self._etcd_peer = free_port(), free_port()
        self._port = free_port()
        self.url = f"https://127.0.0.1:{self._port}"
        self._ssl = ssl.create_default_context(cadata=pki.ca_pem.decode())
        for u in (self.admin, *self.accounts.values()):
            u.kubeconfig = self.workdir / f"kubeconfig-{u.name}"
            u.kubeconfig.write_text(yaml.safe_dump(self.kubeconfig(u)))
        try:
            self._start_etcd(timeout)
            self._start_apiserver(timeout)
            if self.install_crds:
                self.apply_crds(CRD_DIR, timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        for proc in (self._apiserver, self._etcd):
            _terminate(proc)
        self._apiserver = self._etcd = None
        if self._own_workdir and self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> "ControlPlane":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def restart_apiserver(self, *, between: Any = None, timeout: float = 60.0) -> None:
        """Stop the API server (etcd kept), call ``between()`` if given, start it again with the same flags."""
        _terminate(self._apiserver)
        self._apiserver = None
        if between is not None:
            between()
        self._start_apiserver(timeout)

    def compact(self) -> int:
        """Compact etcd to its head revision (physically); returns that revision.  A watch resumed from
        an older resourceVersion then gets 410 Gone (the API server's watch cache must be empty of it:
        do this while the API server is down, ``restart_apiserver(between=cp.compact)``)."""
        head = int(self._etcd_post("/v3/kv/range", {"key": base64.b64encode(b"\0").decode()})["header"]["revision"])
        self._etcd_post("/v3/kv/compaction", {"revision": head, "physical": True})
        return head

    # -- clients ----------------------------------------------------------------------------------

    def kubeconfig(self, user: User) -> dict[str, Any]:
        assert self.workdir is not None
        return {"apiVersion": "v1", "kind": "Config", "current-context": "envtest",
                "clusters": [{"name": "envtest", "cluster": {"server": self.url,
                                                              "certificate-authority": str(self.workdir / "ca.crt")}}],
                "users": [{"name": user.name, "user": {"token": user.token}}],
                "contexts": [{"name": "envtest", "context": {"cluster": "envtest", "user": user.name}}]}

    def request(self, method: str, path: str, body: Any = None, *, user: User | None = None,
                content_type: str = "application/json") -> dict[str, Any]:
        """One synchronous API call as ``user`` (the administrator by default); raises urllib's HTTPError."""
        token = (user or self.admin).token
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Authorization": f"Bearer {token}", "Content-Type": content_type,
                                              "Accept": "application/json"})
        with urllib.request.urlopen(req, context=self._ssl, timeout=30) as resp:
            raw = resp.read()
            is_json = resp.headers.get_content_type() == "application/json"
        return json.loads(raw) if raw and is_json else {}

    def request_counts(self, **match: str) -> Counter[tuple[str, str, str, str]]:
        """``apiserver_request_total`` from the server's /metrics: (verb, resource, subresource, code) →
        requests, over the series whose labels include ``match`` (e.g. ``verb="POST", resource="pods"``)."""
        token = self.admin.token
        req = urllib.request.Request(self.url + "/metrics", headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(req, context=self._ssl, timeout=30) as resp:
            text = resp.read().decode()
        out: Counter[tuple[str, str, str, str]] = Counter()
        for family in text_string_to_metric_families(text):
            if family.name != "apiserver_request":  # the parser drops a counter's _total
                continue
            for sample in family.samples:
                labels = sample.labels
                if sample.name.endswith("_total") and all(labels.get(k) == v for k, v in match.items()):
                    key = (labels.get("verb", ""), labels.get("resource", ""), labels.get("subresource", ""),
                           labels.get("code", ""))
                    out[key] += int(sample.value)
        return out

    def apply_crds(self, folder: Path, timeout: float = 60.0) -> None:
        """Create every CustomResourceDefinition in ``folder``'s YAML files and wait until each is Established."""
        names = []
        for path in sorted(folder.glob("*.yaml")):
            for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
                if doc and doc.get("kind") == "CustomResourceDefinition":
                    self.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", doc)
                    names.append(doc["metadata"]["name"])
        deadline = time.monotonic() + timeout
        for name in names:
            while True:
                crd = self.request("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
                if any(c.get("type") == "Established" and c.get("status") == "True"
                       for c in (crd.get("status") or {}).get("conditions") or []):
                    break
                if time.monotonic() > deadline:
                    raise ControlPlaneError(f"CRD {name} never became Established")
                time.sleep(0.05)
        # discovery of the new groups lags Established a little: wait until the server serves them
        for name in names:
            plural, group = name.split(".", 1)
            crd = self.request("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
            version = next(v["name"] for v in crd["spec"]["versions"] if v.get("storage"))
            self._wait(f"/apis/{group}/{version}/{plural}?limit=1", timeout)

    # -- processes --------------------------------------------------------------------------------

    def _start_etcd(self, timeout: float) -> None:
        assert self.workdir is not None
        client = f"http://127.0.0.1:{self._etcd_port}"
        argv = [str(self.assets / "etcd"), "--data-dir", str(self.workdir / "etcd"),
                "--listen-client-urls", client, "--advertise-client-urls", client,
                "--listen-peer-urls", f"http://127.0.0.1:{self._etcd_peer}"]
        if _etcd_has_no_fsync(self.assets):
            argv.append("--unsafe-no-fsync")
        self._etcd = _spawn(self.workdir / "etcd.log", argv)
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(client + "/health", timeout=2) as resp:
                    if json.loads(resp.read()).get("health") == "true":
                        return
            except (OSError, ValueError):
                pass
            self._check_alive(self._etcd, "etcd")
            if time.monotonic() > deadline:
                raise ControlPlaneError(f"etcd not healthy after {timeout:.0f} s; see {self.workdir / 'etcd.log'}")
            time.sleep(0.05)

    def _start_apiserver(self, timeout: float) -> None:
        w = self.workdir
        assert w is not None
        self._apiserver = _spawn(w / "apiserver.log", [
            str(self.assets / "kube-apiserver"),
            f"--etcd-servers=http://127.0.0.1:{self._etcd_port}", "--bind-address=127.0.0.1",
            f"--secure-port={self._port}", "--advertise-address=127.0.0.1",
            f"--tls-cert-file={w / 'apiserver.crt'}", f"--tls-private-key-file={w / 'apiserver.key'}",
            f"--client-ca-file={w / 'ca.crt'}", f"--token-auth-file={w / 'tokens.csv'}",
            "--authorization-mode=RBAC", f"--service-account-key-file={w / 'sa.pub'}",
            f"--service-account-signing-key-file={w / 'sa.key'}",
            "--service-account-issuer=https://kubernetes.default.svc",
            "--service-cluster-ip-range=10.0.0.0/24",
            "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
            "--endpoint-reconciler-type=none", "--feature-gates=CustomResourceValidationExpressions=true",
            *self.extra_apiserver_flags])
        self._wait("/readyz", timeout, process=(self._apiserver, "kube-apiserver"))

    def _wait(self, path: str, timeout: float, process: tuple[Any, str] | None = None) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.request("GET", path)
                return
            except (OSError, urllib.error.HTTPError, ValueError):
                pass
            if process is not None:
                self._check_alive(*process)
            if time.monotonic() > deadline:
                raise ControlPlaneError(f"GET {path} never answered 200 within {timeout:.0f} s; "
                                        f"see {self.workdir / 'apiserver.log'}")
            time.sleep(0.05)

    def _check_alive(self, proc: subprocess.Popen[bytes] | None, what: str) -> None:
        if proc is not None and proc.poll() is not None:
            log = Path(proc.args[0]).name if isinstance(proc.args, list) else what  # type: ignore[index]
            raise ControlPlaneError(f"{what} exited with {proc.returncode}; see {self.workdir}/{_LOGS.get(log, log)}")

    def _etcd_post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        req = urllib.request.Request(f"http://127.0.0.1:{self._etcd_port}{path}", data=json.dumps(body).encode(),
                                     method="POST", headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.loads(resp.read())


_LOGS = {"etcd": "etcd.log", "kube-apiserver": "apiserver.log"}


def _etcd_has_no_fsync(assets: Path) -> bool:
    """etcd 3.4 has ``--unsafe-no-fsync`` (a test cluster needs no durability; it saves disk waits)."""
    try:
        out = subprocess.run([str(assets / "etcd"), "--help"], capture_output=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    return b"--unsafe-no-fsync" in out


def _spawn(log: Path, argv: list[str]) -> subprocess.Popen[bytes]:
    with open(log, "ab") as out:
        return start_child(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                           start_new_session=True)


_PR_SET_PDEATHSIG = 1
# the thread every child is started from: Linux sends PR_SET_PDEATHSIG's signal when the thread that
# forked the child ends, and a test's event loop ends its worker threads with it (the API server a test
# restarts from one of them would die at the test's end); this one lives as long as the process
_KEEPER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="envtest-children")


def start_child(argv: list[str], **popen: Any) -> subprocess.Popen[bytes]:
    """``subprocess.Popen(argv, **popen)`` for a child that dies with this process: on Linux it is sent
    SIGTERM when the process ends, however it ends.  A test run or a benchmark killed outright
    (SIGKILL, or a SIGTERM that runs no finalizer) then leaves no etcd, kube-apiserver or scheduler
    behind to take the cores of whatever runs next."""
    return _KEEPER.submit(subprocess.Popen, argv, preexec_fn=_dies_with_parent(), **popen).result()


def _dies_with_parent() -> Callable[[], None] | None:
    """The ``preexec_fn`` that asks Linux for SIGTERM when the starting thread ends; None elsewhere."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent:  # the parent was gone before the request took effect
            os._exit(1)

    return preexec


def _terminate(proc: subprocess.Popen[bytes] | None, grace: float = 10.0) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
