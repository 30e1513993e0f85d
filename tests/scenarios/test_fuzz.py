"""No input makes ``vcsched simulate`` exit 1 or hang: 1,000 mutated manifests (fuzz_manifests.py), seeded,
every integer of them at an int32's largest, and every plugin and action argument the examples read set
to odd values (fuzz_arguments.py)."""

from . import fuzz_arguments
from .fuzz_manifests import fuzz, sweep_sizes


def test_a_thousand_mutated_inputs_exit_0_or_2(tmp_path):
    crashes = fuzz(1000, seed=1, workdir=tmp_path)
    assert not crashes, "\n\n".join(f"from {name}: {err.strip()}\n{text[:1500]}" for name, text, err in crashes[:3])


def test_every_argument_read_set_to_odd_values_exits_0_or_2_in_time(tmp_path):
    failures = fuzz_arguments.fuzz(seed=1, workdir=tmp_path)
    assert not failures, "\n\n".join(f"from {name}: {err.strip()}\n{text[:1500]}" for name, text, err in failures[:3])


def test_every_integer_at_an_int32s_largest_exits_0_or_2_in_time(tmp_path):
    failures = sweep_sizes(tmp_path)
    assert not failures, "\n\n".join(f"from {name}: {err.strip()}\n{text[:1500]}" for name, text, err in failures[:3])
