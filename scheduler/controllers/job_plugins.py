"""Job plugins env, svc and ssh (pkg/controllers/job/plugins; spec/jobs.md §7).

Hooks, called by job_state: ``on_job_add`` (at initiation; each plugin runs once, guarded by
``status.controlledResources["plugin-<name>"]``), ``on_pod_create`` (every new pod),
``on_job_update`` (every sync of an initiated job), ``on_job_delete`` (every kill).
They return desired objects in the Outcome (``apply_objects`` / ``delete_objects``), never do I/O.
The distributed-framework plugins (tensorflow, mpi, pytorch, hcclrank, ray) are accepted names whose
hooks do nothing here (out of scope, spec/jobs.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .job import job_owner_reference

if TYPE_CHECKING:
    from .job_state import Outcome

ENV, SVC, SSH = "env", "svc", "ssh"
KNOWN = ("ssh", "env", "svc", "tensorflow", "mpi", "pytorch", "hcclrank", "ray")
SSH_DEFAULT_PATH = "/root/.ssh"
SVC_MOUNT_PATH = "/etc/volcano"


def _flags(args: list[str] | None, defaults: dict[str, Any]) -> dict[str, Any]:
    """Go ``flag`` parsing: ``--name``, ``-name``, ``--name=value``, ``--name value`` for non-bools."""
    out = dict(defaults)
    items = list(args or [])
    i = 0
    while i < len(items):
        arg = str(items[i]).lstrip("-")
        i += 1
        name, eq, value = arg.partition("=")
        if name not in defaults:
            continue
        if isinstance(defaults[name], bool):
            out[name] = value.lower() in ("1", "t", "true") if eq else True
        elif isinstance(defaults[name], int):
            if not eq and i < len(items):
                value, i = str(items[i]), i + 1
            try:
                out[name] = int(value)
            except ValueError:
                pass
        else:
            if not eq and i < len(items):
                value, i = str(items[i]), i + 1
            out[name] = value
    return out


def _all_containers(pod: dict[str, Any]) -> list[dict[str, Any]]:
    spec = pod.setdefault("spec", {})
    return list(spec.get("containers") or []) + list(spec.get("initContainers") or [])


def _owner(job: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [job_owner_reference(job)]


# -- hosts (svc and ssh) ---------------------------------------------------------------------------


def _task_hosts(job: Mapping[str, Any]) -> list[tuple[str, list[tuple[str, str]]]]:
    """Per task: (task name, [(hostname, subdomain)]) as the svc plugin lists them."""
    name = job["metadata"]["name"]
    out = []
    for task in job["spec"].get("tasks") or []:
        pod_spec = (task.get("template") or {}).get("spec") or {}
        subdomain = pod_spec.get("subdomain") or name
        if pod_spec.get("hostname"):
            hosts = [(pod_spec["hostname"], subdomain)]
        else:
            hosts = [(f"{name}-{task['name']}-{i}", subdomain) for i in range(int(task.get("replicas") or 0))]
        out.append((task["name"], hosts))
    return out


def _env_name(task: str) -> str:
    return task.replace("-", "_")


def svc_config_map_data(job: Mapping[str, Any]) -> dict[str, str]:
    data = {}
    for task, hosts in _task_hosts(job):
        t = _env_name(task)
        names = [f"{h}.{d}" for h, d in hosts]
        data[f"{t}.host"] = "\n".join(names)
        data[f"VC_{t.upper()}_HOSTS"] = ",".join(names)
        data[f"VC_{t.upper()}_NUM"] = str(len(names))
    return data


# -- hooks -----------------------------------------------------------------------------------------


def on_job_add(job: Mapping[str, Any], plugins: Mapping[str, list[str]], status: dict[str, Any],
               out: "Outcome") -> str:
    controlled = status.setdefault("controlledResources", {})
    for name, args in plugins.items():
        if name not in KNOWN:
            return f"failed to get plugin {name}"
        if controlled.get(f"plugin-{name}") == name:
            continue
        if name == SVC:
            out.apply_objects.extend(_svc_objects(job, args))
        elif name == SSH:
            out.apply_objects.append(_ssh_secret(job, args))
        controlled[f"plugin-{name}"] = name
    return ""


def on_job_update(job: Mapping[str, Any], plugins: Mapping[str, list[str]], status: dict[str, Any],
                  out: "Outcome") -> str:
    for name in plugins:
        if name not in KNOWN:
            return f"failed to get plugin {name}"
        if name == SVC:
            out.apply_objects.append(_svc_config_map(job))
    return ""


def on_job_delete(job: Mapping[str, Any], plugins: Mapping[str, list[str]], status: dict[str, Any],
                  out: "Outcome") -> str:
    controlled = status.setdefault("controlledResources", {})
    name_ = job["metadata"]["name"]
    for name in plugins:
        if name not in KNOWN:
            return f"failed to get plugin {name}"
        if name == SVC:
            out.delete_objects += [("ConfigMap", f"{name_}-svc"), ("Service", name_), ("NetworkPolicy", name_)]
        elif name == SSH:
            out.delete_objects.append(("Secret", f"{name_}-ssh"))
        controlled.pop(f"plugin-{name}", None)
    return ""


def on_pod_create(job: Mapping[str, Any], plugins: Mapping[str, list[str]], pod: dict[str, Any]) -> None:
    for name, args in plugins.items():
        if name == ENV:
            _env_on_pod_create(pod)
        elif name == SVC:
            _svc_on_pod_create(job, args, pod)
        elif name == SSH:
            _ssh_on_pod_create(job, args, pod)


# -- env -------------------------------------------------------------------------------------------


def _env_on_pod_create(pod: dict[str, Any]) -> None:
    parts = pod["metadata"]["name"].split("-")
    index = parts[-1] if len(parts) >= 3 else ""
    for c in _all_containers(pod):
        c.setdefault("env", []).extend([{"name": "VK_TASK_INDEX", "value": index},
                                        {"name": "VC_TASK_INDEX", "value": index}])


# -- svc -------------------------------------------------------------------------------------------

_SVC_FLAGS = {"publish-not-ready-addresses": False, "disable-network-policy": False, "inject-hosts-env": True}


def _svc_config_map(job: Mapping[str, Any]) -> dict[str, Any]:
    meta = job["metadata"]
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": f"{meta['name']}-svc", "namespace": meta.get("namespace") or "default",
                         "ownerReferences": _owner(job)},
            "data": svc_config_map_data(job)}


def _svc_objects(job: Mapping[str, Any], args: list[str]) -> list[dict[str, Any]]:
    flags = _flags(args, _SVC_FLAGS)
    meta = job["metadata"]
    name, ns = meta["name"], meta.get("namespace") or "default"
    selector = {"volcano.sh/job-name": name, "volcano.sh/job-namespace": ns}
    objs = [_svc_config_map(job), {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": ns, "ownerReferences": _owner(job)},
        "spec": {"clusterIP": "None", "selector": dict(selector),
                 "publishNotReadyAddresses": flags["publish-not-ready-addresses"],
                 "ports": [{"name": "placeholder-volcano", "port": 1, "protocol": "TCP", "targetPort": 1}]},
    }]
    if not flags["disable-network-policy"]:
        objs.append({
            "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": name, "namespace": ns, "ownerReferences": _owner(job)},
            "spec": {"podSelector": {"matchLabels": dict(selector)},
                     "ingress": [{"from": [{"podSelector": {"matchLabels": dict(selector)}}]}],
                     "policyTypes": ["Ingress"]},
        })
    return objs


def _svc_on_pod_create(job: Mapping[str, Any], args: list[str], pod: dict[str, Any]) -> None:
    flags = _flags(args, _SVC_FLAGS)
    name = job["metadata"]["name"]
    spec = pod.setdefault("spec", {})
    if not spec.get("hostname"):
        spec["hostname"] = pod["metadata"]["name"]
    if not spec.get("subdomain"):
        spec["subdomain"] = name
    cm = f"{name}-svc"
    if flags["inject-hosts-env"]:
        env = []
        for task in job["spec"].get("tasks") or []:
            t = _env_name(task["name"]).upper()
            for key in (f"VC_{t}_HOSTS", f"VC_{t}_NUM"):
                env.append({"name": key, "valueFrom": {"configMapKeyRef": {"name": cm, "key": key}}})
        for c in _all_containers(pod):
            c.setdefault("env", []).extend(dict(e) for e in env)
    spec.setdefault("volumes", []).append({"name": cm, "configMap": {"name": cm}})
    for c in _all_containers(pod):
        c.setdefault("volumeMounts", []).append({"name": cm, "mountPath": SVC_MOUNT_PATH})


# -- ssh -------------------------------------------------------------------------------------------

_SSH_FLAGS = {"ssh-key-file-path": SSH_DEFAULT_PATH, "ssh-private-key": "", "ssh-public-key": "", "ssh-port": 22}


def generate_rsa_key_pair() -> tuple[str, str]:
    """A 2048-bit RSA key pair: (PEM "RSA PRIVATE KEY", authorized-keys public key)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                           serialization.PublicFormat.OpenSSH).decode() + "\n"
    return private, public


def _ssh_secret(job: Mapping[str, Any], args: list[str]) -> dict[str, Any]:
    flags = _flags(args, _SSH_FLAGS)
    port = flags["ssh-port"] if 0 < flags["ssh-port"] < 65536 else 22
    if flags["ssh-private-key"]:
        private, public = flags["ssh-private-key"], flags["ssh-public-key"]
    else:
        private, public = generate_rsa_key_pair()
    config = "StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\n"
    for _, hosts in _task_hosts(job):
        for host, subdomain in hosts:
            config += f"Host {host}\n  HostName {host}.{subdomain}\n  Port {port}\n"
    meta = job["metadata"]
    return {"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": f"{meta['name']}-ssh", "namespace": meta.get("namespace") or "default",
                         "ownerReferences": _owner(job)},
            "stringData": {"id_rsa": private, "id_rsa.pub": public, "authorized_keys": public, "config": config}}


def _ssh_on_pod_create(job: Mapping[str, Any], args: list[str], pod: dict[str, Any]) -> None:
    flags = _flags(args, _SSH_FLAGS)
    path = flags["ssh-key-file-path"]
    secret = f"{job['metadata']['name']}-ssh"
    mode = 0o600 if path == SSH_DEFAULT_PATH else 0o644
    pod["spec"].setdefault("volumes", []).append({"name": secret, "secret": {
        "secretName": secret, "defaultMode": mode,
        "items": [{"key": k, "path": f".ssh/{k}"} for k in ("id_rsa", "id_rsa.pub", "authorized_keys", "config")]}})
    for c in _all_containers(pod):
        c.setdefault("volumeMounts", []).append({"name": secret, "mountPath": path, "subPath": ".ssh"})
