"""Odd plugin and action arguments for ``vcsched simulate``: it must answer 0 or 2, never 1, and soon.

    python -m tests.scenarios.fuzz_arguments --seed 1

A first clean run of each seed (the examples in conf/examples, each under its own scheduler conf and
under one that enables every action and plugin of the catalog) records the argument keys the
plugins and actions read.  Then every key each seed reads is set, in the conf's ``arguments`` or
``configurations``, twice: to an absurd size (10^12, the value that once made a loop count that
far) and to a value drawn from ``ODD_VALUES``.  A run that takes longer than ``DEADLINE`` seconds
counts as a failure.  test_fuzz.py runs it.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import io
import random
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

import yaml

from vcsched.cli import main
from vcsched.framework.arguments import Arguments

from .fuzz_manifests import ODD_VALUES, TooLong, deadline

ROOT = Path(__file__).resolve().parents[2]
DEADLINE = 20  # seconds; a seed's clean run takes well under one

PLUGINS = ("priority", "gang", "conformance", "overcommit", "drf", "predicates", "proportion", "nodeorder",
           "binpack", "deviceshare", "cdp", "extender", "network-topology-aware", "nodegroup", "numa-aware",
           "pdb", "rescheduling", "resource-strategy-fit", "resourcequota", "sla", "task-topology", "tdm",
           "usage")
ACTIONS = ("enqueue", "allocate", "preempt", "reclaim", "backfill", "shuffle")
CATALOG = {
    "actions": ", ".join(ACTIONS),
    "tiers": [{"plugins": [{"name": p} for p in PLUGINS[:3]]}, {"plugins": [{"name": p} for p in PLUGINS[3:]]}],
    "configurations": [{"name": a, "arguments": {}} for a in ACTIONS],
}
# where an Arguments object says it sits in the conf: tiers[1].plugins[3].arguments, configurations[0].arguments,
# configurations[allocate] (an action given no configuration), and a plugin's nested sections after these
_STEP = re.compile(r"(\w+)\[([^\]]+)\]|([^.\[\]]+)")


class _Recorder(dict):
    """An Arguments' values that note each key asked for."""

    def __init__(self, values: dict, where: str, asked: set[tuple[str, str]]) -> None:
        super().__init__(values)
        self.where, self.asked = where, asked

    def get(self, key, default=None):
        self.asked.add((self.where, key))
        return super().get(key, default)

    def __getitem__(self, key):
        self.asked.add((self.where, key))
        return super().__getitem__(key)

    def __contains__(self, key):
        self.asked.add((self.where, key))
        return super().__contains__(key)


@dataclass
class Seed:
    name: str
    cluster: Path
    conf: dict
    keys: list[tuple[str, str]]


def run_once(cluster: Path, conf: dict, workdir: Path) -> tuple[int | str, str]:
    """(exit code, or "hang" past the deadline; stderr)."""
    path = workdir / "sched.conf"
    path.write_text(yaml.safe_dump(conf, sort_keys=False), encoding="utf-8")
    err = io.StringIO()
    try:
        with deadline(DEADLINE), contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            code: int | str = main(["simulate", "-f", str(cluster), "--conf", str(path), "-o", "json",
                                    "--now", "2026-01-01T00:00:00Z"])
    except TooLong:
        code = "hang"
    return code, err.getvalue()


def _own_conf(cluster: Path) -> dict | None:
    for doc in yaml.safe_load_all(cluster.read_text(encoding="utf-8")):
        if isinstance(doc, dict) and doc.get("kind") == "ConfigMap":
            text = (doc.get("data") or {}).get("volcano-scheduler.conf")
            if text:
                return yaml.safe_load(text)
    return None


def seeds(workdir: Path) -> list[Seed]:
    """Each example under its own conf and under the catalog's, with the keys a clean run reads."""
    out = []
    for cluster in sorted((ROOT / "conf" / "examples").glob("*.yaml")):
        for label, conf in (("own", _own_conf(cluster)), ("catalog", CATALOG)):
            if conf is None:
                continue
            asked: set[tuple[str, str]] = set()
            original = Arguments.__init__

            def recording(self, values, where="arguments", _original=original, _asked=asked):
                _original(self, _Recorder(values, where, _asked), where)

            with mock.patch.object(Arguments, "__init__", recording):
                code, err = run_once(cluster, copy.deepcopy(conf), workdir)
            if code != 0:
                raise RuntimeError(f"{cluster.name} under the {label} conf: exit {code}: {err.strip()}")
            out.append(Seed(f"{cluster.name} ({label} conf)", cluster, conf, sorted(asked)))
    return out


def _section(conf: dict, where: str) -> dict:
    """The mapping of the conf an Arguments ``where`` names, made where absent."""
    node: Any = conf
    for m in _STEP.finditer(where):
        name, index, plain = m.groups()
        if plain is not None:
            if not isinstance(node.get(plain), dict):
                node[plain] = {}
            node = node[plain]
        elif index.isdigit():
            node = node[name][int(index)]
        else:  # configurations[<action>]: the action's entry, made if the conf has none
            entries = node.setdefault(name, [])
            entry = next((e for e in entries if e.get("name") == index), None)
            if entry is None:
                entry = {"name": index, "arguments": {}}
                entries.append(entry)
            node = entry
    return node


ABSURD = 10**12


def fuzz(seed: int, workdir: Path) -> list[tuple[str, str, str]]:
    """The failing runs: (seed name, the conf, stderr or "hang")."""
    rng = random.Random(seed)
    failures = []
    for s in seeds(workdir):
        for where, key in s.keys:
            for value in (ABSURD, rng.choice(ODD_VALUES)):
                conf = copy.deepcopy(s.conf)
                _section(conf, where)[key] = copy.deepcopy(value)
                code, err = run_once(s.cluster, conf, workdir)
                if code not in (0, 2):
                    failures.append((s.name, yaml.safe_dump(conf, sort_keys=False), "hang" if code == "hang" else err))
    return failures


def _main() -> int:
    import tempfile

    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        failures = fuzz(args.seed, Path(tmp))
    print(f"{len(failures)} runs failed (exit other than 0 and 2, or over {DEADLINE} s)")
    for name, text, err in failures[:5]:
        print(f"--- from {name}: {err.strip()}\n{text[:2000]}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(_main())
