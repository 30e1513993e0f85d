"""A session writes a PodGroup's status when it changed as ``PodGroup.status_tuple`` compares it (times and
transition IDs aside); the session keeps the status it opened with by reference (issue 25)."""

from __future__ import annotations

from vcsched.api.job_info import PodGroup
from vcsched.framework.session_status import status_changed as _status_changed


def pg(conditions, phase="Running", running=1) -> PodGroup:
    return PodGroup("g", "ns", "u", 0.0, phase=phase, running=running, conditions=conditions)


def opened(p: PodGroup) -> tuple:
    return (p.phase, p.running, p.succeeded, p.failed, tuple(p.conditions))


SCHEDULED = {"type": "Scheduled", "status": "True", "transitionID": "s1", "lastTransitionTime": 1.0,
             "reason": "tasks in gang are ready to be scheduled", "message": ""}


def test_a_condition_made_again_with_a_new_transition_id_and_time_is_no_change():
    before = pg([SCHEDULED])
    now = pg([{**SCHEDULED, "transitionID": "s2", "lastTransitionTime": 2.0}])
    assert not _status_changed(opened(before), now)
    assert before.status_tuple() == now.status_tuple()


def test_a_condition_whose_message_or_reason_changed_is_a_change():
    before = pg([SCHEDULED])
    for field, value in (("message", "2/3 tasks in gang unschedulable"), ("reason", "NotEnoughResources"),
                         ("status", "False"), ("type", "Unschedulable")):
        now = pg([{**SCHEDULED, field: value, "transitionID": "s2"}])
        assert _status_changed(opened(before), now), field
        assert before.status_tuple() != now.status_tuple()


def test_conditions_added_or_gone_and_counts_are_changes():
    before = pg([SCHEDULED])
    assert _status_changed(opened(before), pg([]))
    assert _status_changed(opened(before), pg([SCHEDULED, {"type": "Other", "status": "True"}]))
    assert _status_changed(opened(before), pg([SCHEDULED], running=2))
    assert _status_changed(opened(before), pg([SCHEDULED], phase="Completed"))
    assert _status_changed(None, before)


def test_values_compared_as_text_as_status_tuple_does():
    before = pg([{"type": "X", "status": "True", "count": 1}])
    now = pg([{"type": "X", "status": "True", "count": "1"}])
    assert before.status_tuple() == now.status_tuple()
    assert not _status_changed(opened(before), now)
