"""``xflow tasks list|show|claim|unclaim|complete|delete``: the task inbox of a running
``xflow serve``, over its HTTP API (so the service decides who may act, from the credential, and
wakes the waiting instance).

``--url`` (env ``XFLOW_URL``, default ``http://127.0.0.1:8080``) and ``--token`` (env
``XFLOW_TOKEN``: an API key or a JWT). ``list`` prints one line per task (``--json``: JSON lines);
the others print the task as JSON. A refusal prints the service's problem ``detail`` and exits 1.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

_ACTIONS = ("list", "show", "claim", "unclaim", "complete", "delete")


def register(subparsers: Any, name: str) -> None:
    parser = subparsers.add_parser(name, help="the task inbox of xflow serve (usertask states)",
                                   description="List, claim, complete or delete user tasks on a running service.")
    parser.add_argument("action", choices=_ACTIONS)
    parser.add_argument("task_id", nargs="?", metavar="ID")
    parser.add_argument("--data", metavar="JSON", help="completion data (complete)")
    parser.add_argument("--status", default="open,claimed", help="list: statuses, comma-separated")
    parser.add_argument("--json", action="store_true", help="list: one JSON object per line")
    parser.add_argument("--url", default=os.environ.get("XFLOW_URL", "http://127.0.0.1:8080"))
    parser.add_argument("--token", default=os.environ.get("XFLOW_TOKEN"), help="API key or JWT (env XFLOW_TOKEN)")
    parser.set_defaults(handler=tasks_command)


def tasks_command(args: argparse.Namespace) -> int:
    import httpx

    if args.action != "list" and not args.task_id:
        print(f"xflow tasks {args.action}: a task ID is required", file=sys.stderr)
        return 2
    if not args.token:
        print("xflow tasks: give --token or set XFLOW_TOKEN", file=sys.stderr)
        return 2
    try:
        data = None if args.data is None else json.loads(args.data)
    except json.JSONDecodeError as error:
        print(f"xflow tasks: --data is not JSON: {error}", file=sys.stderr)
        return 2
    method, path, body = _request(args.action, args.task_id, data)
    params = {"status": args.status} if args.action == "list" else None
    try:
        with httpx.Client(base_url=args.url, timeout=30, headers={"Authorization": f"Bearer {args.token}"}) as client:
            response = client.request(method, path, json=body, params=params)
    except httpx.HTTPError as error:
        print(f"xflow tasks: cannot reach {args.url}: {type(error).__name__}", file=sys.stderr)
        return 1
    if response.status_code >= 400:
        detail = _detail(response)
        print(f"xflow tasks {args.action}: {response.status_code} {detail}", file=sys.stderr)
        return 1
    result = response.json()
    if args.action == "list":
        for task in result["items"]:
            print(json.dumps(task) if args.json else _line(task))
    else:
        print(json.dumps(result, indent=2))
    return 0


def _request(action: str, task_id: str | None, data: Any) -> tuple[str, str, Any]:
    if action == "list":
        return "GET", "/v1/tasks", None
    if action == "show":
        return "GET", f"/v1/tasks/{task_id}", None
    if action == "delete":
        return "DELETE", f"/v1/tasks/{task_id}", None
    return "POST", f"/v1/tasks/{task_id}/{action}", {"data": data} if action == "complete" else None


def _detail(response: Any) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:200]
    return str(body.get("detail") or body.get("title") or "")


def _line(task: dict[str, Any]) -> str:
    who = task.get("claimedBy") or task.get("assignee") or ",".join(task.get("candidateGroups") or []) or "-"
    return f"{task['id']}  {task['status']:<9} {task['taskKey']:<24} {who:<16} due {task.get('dueDate') or '-'}"
