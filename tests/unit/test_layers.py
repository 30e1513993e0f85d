"""kopf's habit: layers import only downward.  The core never reaches the Kubernetes
client, kopf, or the sources and sinks: it sees plain objects and returns effects."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORE = [ROOT / "scheduler" / "api", ROOT / "scheduler" / "framework", ROOT / "plugins", ROOT / "actions"]
FORBIDDEN = ("kubernetes", "kopf", "aiohttp", "vcsched.kube", "vcsched.sim", "vcsched.cli", "vcsched.bench", "vcsched.cache", "vcsched.scheduler")
RELATIVE_FORBIDDEN = ("kube", "sim", "cli", "bench", "cache", "scheduler")


def imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            prefix = "." * node.level
            names.append(prefix + (node.module or ""))
    return names


@pytest.mark.parametrize("path", [p for d in CORE for p in sorted(d.rglob("*.py"))], ids=lambda p: str(p.relative_to(ROOT)))
def test_core_module_does_no_io_imports(path):
    for name in imports(path):
        bare = name.lstrip(".")
        assert not any(bare == f or bare.startswith(f + ".") for f in FORBIDDEN), f"{path.name} imports {name}"
        if name.startswith(".."):
            assert bare.split(".")[0] not in RELATIVE_FORBIDDEN, f"{path.name} imports {name}"


# Network I/O from the core: only the extender plugin, whose callbacks are HTTP calls by Volcano's
# contract (its module docstring says why the call stays in the session's thread).
NETWORK = ("socket", "ssl", "http", "urllib", "requests", "httpx")
NETWORK_ALLOWED = {ROOT / "plugins" / "extender.py"}


@pytest.mark.parametrize("path", [p for d in CORE for p in sorted(d.rglob("*.py"))], ids=lambda p: str(p.relative_to(ROOT)))
def test_core_module_opens_no_connection(path):
    if path in NETWORK_ALLOWED:
        return
    for name in imports(path):
        assert name.split(".")[0] not in NETWORK, f"{path.name} imports {name}"
