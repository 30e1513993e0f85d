from pathlib import Path

import pytest

from vcsched.conf import DEFAULT_SCHEDULER_CONF, VOLCANO_FALLBACK_CONF, ConfError, parse_conf

ROOT = Path(__file__).resolve().parents[2]


def test_default_equals_the_shipped_file():
    assert (ROOT / "conf" / "volcano-scheduler.conf").read_text() == DEFAULT_SCHEDULER_CONF


def test_default_conf_parses_with_defaulted_flags():
    conf = parse_conf(DEFAULT_SCHEDULER_CONF)
    assert conf.actions == ["enqueue", "allocate", "backfill"]
    gang = conf.tiers[0][1]
    assert gang.name == "gang" and gang.flags["enablePreemptable"] is False
    assert gang.flags["enableJobReady"] is True
    assert gang.flags["enabledClusterOrder"] is False and gang.flags["enableHierarchy"] is False
    assert [o.name for o in conf.tiers[1]] == ["overcommit", "drf", "predicates", "proportion", "nodeorder", "binpack"]
    assert parse_conf(VOLCANO_FALLBACK_CONF).tiers[1][-1].name == "nodeorder"


def test_actions_are_trimmed_and_may_repeat():
    conf = parse_conf('actions: " enqueue ,allocate, allocate"\ntiers: []')
    assert conf.actions == ["enqueue", "allocate", "allocate"]


@pytest.mark.parametrize("text, message", [
    ('actions: "enqueue, alocate"', "actions: failed to find Action  alocate"),
    ('actions: ""', "actions: failed to find Action "),
    ("actions: [1]", "actions: expected a comma-separated string"),
    ('actions: "allocate"\ntiers: {a: 1}', "tiers: expected a list"),
    ('actions: "allocate"\ntiers:\n- plugins:\n  - name: gnag', "tiers[0].plugins[0].name: unknown plugin 'gnag'"),
    ('actions: "allocate"\ntiers:\n- plugins:\n  - name: gang\n    enableJobReady: "true"',
     "tiers[0].plugins[0].enableJobReady: expected a bool"),
    ('actions: "allocate"\ntiers:\n- plugins:\n  - name: binpack\n    arguments: {binpack.weight: "10"}',
     "tiers[0].plugins[0].arguments.binpack.weight: expected an integer"),
    ('actions: "allocate"\ntiers:\n- plugins:\n  - name: drf\n    enableHierarchy: true\n  - name: proportion',
     "tiers[0]: proportion and drf with hierarchy enabled conflicts"),
    ("actions: [unclosed", "invalid YAML"),
    ('actions: "allocate"\nconfigurations:\n- name: allocate\n  arguments: {predicateErrorCacheEnable: maybe}',
     "configurations[0].arguments.predicateErrorCacheEnable: expected a bool"),
    ('actions: "preempt"\nconfigurations:\n- name: preempt\n  arguments: {minCandidateNodesAbsolute: [2]}',
     "configurations[0].arguments.minCandidateNodesAbsolute: expected an integer, got list [2]"),
    ('actions: "preempt"\nconfigurations:\n- name: preempt\n  arguments: {enableTopologyAwarePreemption: 1}',
     "configurations[0].arguments.enableTopologyAwarePreemption: expected a bool"),
])
def test_invalid_configurations_name_the_field(text, message):
    with pytest.raises(ConfError) as e:
        parse_conf(text)
    assert str(e.value).startswith(message)


def test_drf_hierarchy_in_another_tier_is_allowed():
    parse_conf('actions: "allocate"\ntiers:\n- plugins:\n  - name: drf\n    enableHierarchy: true\n- plugins:\n  - name: proportion')


def test_first_configuration_entry_wins():
    conf = parse_conf('actions: "allocate"\nconfigurations:\n- name: allocate\n  arguments: {a: 1}\n'
                      '- name: allocate\n  arguments: {a: 2}')
    assert conf.action_arguments("allocate").get_int("a", 0) == 1
