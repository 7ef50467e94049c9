"""Who may see and act on a task (pure). specs/states-human.md §3.

- An *admin* (a ``service`` credential of the task's tenant) may see, claim for nobody, and
  delete every task of its tenant, and complete one on a user's behalf.
- A user is a *candidate* when they are the assignee, are listed in ``candidateUsers``, or are in
  one of ``candidateGroups``; a task that names nobody is open to every user of its tenant.
- Claim: a candidate, while the task is open (or already theirs). Unclaim: the claimant.
- Complete: a candidate while the task is open (completing claims it) or the claimant.
- Delete: an admin, or a candidate while the task is open or theirs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Status = Literal["open", "claimed", "completed", "deleted", "timedOut"]
ACTIVE: tuple[str, ...] = ("open", "claimed")


@dataclass(frozen=True)
class Actor:
    """Who acts: from the credential over HTTP, never from a body."""

    tenant: str
    user: str | None
    groups: frozenset[str] = field(default_factory=frozenset)
    admin: bool = False


@dataclass(frozen=True)
class TaskView:
    id: str
    tenant: str
    instance_id: str
    workflow_id: str
    state: str
    task_key: str
    form_key: str | None
    assignee: str | None
    candidate_users: tuple[str, ...]
    candidate_groups: tuple[str, ...]
    due_at: str | None
    input: Any
    form_schema: Any
    status: str
    claimed_by: str | None
    completed_by: str | None
    completion: Any
    created_at: str
    updated_at: str

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "taskKey": self.task_key, "formKey": self.form_key, "instanceId": self.instance_id,
                "workflowId": self.workflow_id, "state": self.state, "assignee": self.assignee,
                "candidateUsers": list(self.candidate_users), "candidateGroups": list(self.candidate_groups),
                "dueDate": self.due_at, "input": self.input, "formSchema": self.form_schema,
                "status": self.status, "claimedBy": self.claimed_by, "completedBy": self.completed_by,
                "data": self.completion, "createdAt": self.created_at, "updatedAt": self.updated_at}


def is_candidate(task: TaskView, actor: Actor) -> bool:
    if actor.tenant != task.tenant or actor.user is None:
        return False
    if task.assignee is None and not task.candidate_users and not task.candidate_groups:
        return True
    return (actor.user == task.assignee or actor.user in task.candidate_users
            or bool(actor.groups.intersection(task.candidate_groups)))


def may_see(task: TaskView, actor: Actor) -> bool:
    if actor.tenant != task.tenant:
        return False
    return actor.admin or is_candidate(task, actor) or actor.user in (task.claimed_by, task.completed_by)


def refusal(task: TaskView, actor: Actor, action: str) -> tuple[str, str] | None:
    """``None`` when ``actor`` may do ``action`` now, else (kind, reason) with kind ``forbidden``
    or ``conflict`` (the task is not in a state that allows it)."""
    mine = actor.user is not None and task.claimed_by == actor.user
    if action == "delete":
        if task.status not in ACTIVE:
            return "conflict", f"the task is {task.status}"
        if actor.admin or (is_candidate(task, actor) and (task.status == "open" or mine)):
            return None
        return "forbidden", "only a candidate of an open task, its claimant, or a service credential may delete it"
    if not (is_candidate(task, actor) or mine or (actor.admin and action == "complete")):
        return "forbidden", "you are not a candidate for this task"
    if task.status not in ACTIVE:
        return "conflict", f"the task is {task.status}"
    if action == "unclaim":
        return None if mine or actor.admin else ("conflict", "the task is not claimed by you")
    if task.status == "claimed" and not mine and not actor.admin:
        return "conflict", f"the task is claimed by {task.claimed_by}"
    return None
