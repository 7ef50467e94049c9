"""``usertask`` states: the task store, who may act on a task, the task inbox (Python API used by
the service and the CLI) and the state handler. specs/states-human.md."""

#: CloudEvent types of a task's life. ``completed``/``deleted`` also wake the waiting instance.
CREATED = "io.xflow.usertask.created"
CLAIMED = "io.xflow.usertask.claimed"
UNCLAIMED = "io.xflow.usertask.unclaimed"
COMPLETED = "io.xflow.usertask.completed"
DELETED = "io.xflow.usertask.deleted"
TIMED_OUT = "io.xflow.usertask.timedout"
#: CloudEvent extension attributes naming the task (the instance correlates on the key).
TASK_KEY_ATTRIBUTE = "xflowtaskkey"
TASK_ID_ATTRIBUTE = "xflowtaskid"

__all__ = ["CLAIMED", "COMPLETED", "CREATED", "DELETED", "TASK_ID_ATTRIBUTE", "TASK_KEY_ATTRIBUTE", "TIMED_OUT",
           "UNCLAIMED"]
