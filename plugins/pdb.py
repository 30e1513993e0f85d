"""pdb: PodDisruptionBudgets protect pods from eviction (plugins/pdb/pdb.go).

The session's PodDisruptionBudgets (``ssn.pdbs``: every one in the cluster, from the cache, with the
status the disruption controller wrote) filter a list of candidate victims.  Each budget starts with
its ``status.disruptionsAllowed``; the candidates are walked in order and, for each one, every budget
of its namespace whose selector selects it (a nil or empty selector selects nothing here, and a
selector that does not convert is skipped) and that does not already list it in
``status.disruptedPods`` gives up one disruption.  A candidate that takes any budget below zero is
kept; the others are victims.  The count goes down for a kept candidate too, and for every budget
it matches, as Volcano counts.  A pod without labels is never a victim: Volcano passes over it
before looking at any budget (``len(pod.Labels) == 0``), so with pdb on, an unlabelled pod is kept
from preempt, reclaim and shuffle by this plugin's vote.

Registers, each gated by its switch:

- PreemptableFn and ReclaimableFn (``enablePreemptable``, ``enableReclaimable``): the filtered
  candidates, vote Permit; none left makes the tier undecided (spec/framework.md §6.2);
- VictimTasksFn (``enabledVictim``, the ``shuffle`` action): the same filter over the tasks given.

No arguments.  Budgets are walked in namespace/name order (Volcano lists them from its informer, in
map order).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vcsched.api.task_info import TaskInfo
from vcsched.api.types import Vote
from vcsched.framework.interface import Plugin, Point

if TYPE_CHECKING:
    from vcsched.framework.session import Session


class PdbPlugin(Plugin):
    name = "pdb"

    def on_session_open(self, ssn: "Session") -> None:
        pdbs = ssn.pdbs

        def pdb_filter(tasks: list[TaskInfo]) -> list[TaskInfo]:
            allowed = [p.disruptions_allowed for p in pdbs]
            victims: list[TaskInfo] = []
            for task in tasks:
                labels = task.spec.labels
                if not labels:
                    continue
                violated = False
                for i, pdb in enumerate(pdbs):
                    if pdb.namespace != task.namespace or pdb.selector is None:
                        continue
                    if pdb.selector.empty or not pdb.selector.matches(labels):
                        continue
                    if task.name in pdb.disrupted_pods:
                        continue  # the API server has taken it into account already
                    allowed[i] -= 1
                    if allowed[i] < 0:
                        violated = True
                if not violated:
                    victims.append(task)
            return victims

        def victims_vote(preemptor: TaskInfo, preemptees: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
            return pdb_filter(preemptees), Vote.Permit

        ssn.add(Point.VICTIM_TASKS, self.name, pdb_filter)
        ssn.add(Point.RECLAIMABLE, self.name, victims_vote)
        ssn.add(Point.PREEMPTABLE, self.name, victims_vote)
