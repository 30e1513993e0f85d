"""vcsched.sim.manifests: documents JSON cannot carry, or that a walk over them would blow up, are refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from vcsched.sim import manifests
from vcsched.sim.manifests import ManifestError, load_manifests

NODE = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n"


def load(tmp_path: Path, text: str) -> list:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    return load_manifests([str(path)])


def test_a_big_document_without_aliases_is_not_excessive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(manifests, "MAX_EXPANDED_NODES", 10)
    text = NODE + "metadata: {name: n1, labels: {" + ", ".join(f"k{i}: v" for i in range(50)) + "}}\n"
    assert load(tmp_path, text.replace("metadata: {name: n1}\n", ""))


def test_aliases_expanding_past_the_limit_and_ten_times_the_size_are(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(manifests, "MAX_EXPANDED_NODES", 50)
    text = NODE + "spec: {a: &a [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]}\n"
    assert load(tmp_path, text)  # 128 nodes expanded: past 50, but not ten times the 18 written
    text = text.replace("*a]}\n", "*a], c: [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]}\n")
    with pytest.raises(ManifestError, match=r"document 0: YAML error: document contains excessive aliasing \(1239 nodes"):
        load(tmp_path, text)


def test_shared_nodes_are_not_cycles(tmp_path: Path) -> None:
    text = NODE + "metadata: {name: n1, labels: &l {a: b}, annotations: *l}\n"
    (node,) = load(tmp_path, text.replace("metadata: {name: n1}\n", ""))
    assert node.obj["metadata"]["labels"] == node.obj["metadata"]["annotations"] == {"a": "b"}


def test_a_cycle_through_a_mapping_is_named(tmp_path: Path) -> None:
    text = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nspec: &s {inner: {back: *s}}\n"
    with pytest.raises(ManifestError) as info:
        load(tmp_path, text)
    assert str(info.value).endswith(
        "c.yaml: document 0: spec.inner.back: YAML error: an alias used inside the node it names (JSON has no cycles)")
