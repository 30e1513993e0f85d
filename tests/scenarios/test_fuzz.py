"""No input makes ``vcsched simulate`` exit 1: 1,000 mutated manifests (fuzz_manifests.py), seeded."""

from .fuzz_manifests import fuzz


def test_a_thousand_mutated_inputs_exit_0_or_2(tmp_path):
    crashes = fuzz(1000, seed=1, workdir=tmp_path)
    assert not crashes, "\n\n".join(f"from {name}: {err.strip()}\n{text[:1500]}" for name, text, err in crashes[:3])
