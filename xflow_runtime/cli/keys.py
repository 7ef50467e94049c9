"""``xflow keys create|list|revoke``: API keys of ``xflow serve`` (``--auth keys``).

A key belongs to a tenant and has a role: ``service`` (manages every instance of its tenant) or
``user`` (an end user: ``--user`` is required; reaches only its own instances). The key is
printed once, at creation; only its SHA-256 is stored, in the database of ``--db`` (the same
rule as chat memory: default ``./.xflow/xflow.db``)."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import timedelta
from typing import Any

from xflow_runtime.errors import XFlowError


def register(subparsers: Any, name: str) -> None:
    parser = subparsers.add_parser(name, help="manage API keys of xflow serve", description=__doc__.split("\n\n")[0])
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    create = actions.add_parser("create", help="create a key (printed once)")
    create.add_argument("--tenant", required=True)
    create.add_argument("--role", choices=("service", "user"), default="service")
    create.add_argument("--user", default=None, help="the end user (required for role user)")
    create.add_argument("--name", default="", help="a label for the key")
    create.add_argument("--expires-in", metavar="SECONDS", type=float, default=None)
    listing = actions.add_parser("list", help="list keys (never their secrets)")
    listing.add_argument("--tenant", default=None)
    revoke = actions.add_parser("revoke", help="revoke a key by id")
    revoke.add_argument("key_id")
    for sub in (create, listing, revoke):
        sub.add_argument("--db", metavar="URL", default=None,
                         help="the durable store URL given to xflow serve (default $XFLOW_DATABASE_URL)")
        sub.add_argument("--json", action="store_true", help="print JSON (one object per key)")
    parser.set_defaults(handler=keys_command)


def keys_command(args: argparse.Namespace) -> int:
    from xflow_runtime.runtime.memory import chat_memory_url
    from xflow_runtime.service.api_keys import ApiKeyStore

    try:
        store = ApiKeyStore(chat_memory_url(args.db))
    except XFlowError as error:
        print(f"xflow keys: {error}", file=sys.stderr)
        return 2
    try:
        if args.action == "create":
            expires = None if args.expires_in is None else timedelta(seconds=args.expires_in)
            key, info = store.create(args.tenant, user=args.user, role=args.role, name=args.name, expires_in=expires)
            _show({"key": key, **info.to_dict()}, args.json)
            if not args.json:
                print("the key is shown once: store it now", file=sys.stderr)
            return 0
        if args.action == "list":
            for info in store.list(args.tenant):
                _show(info.to_dict(), args.json)
            return 0
        if not store.revoke(args.key_id):
            print(f"xflow keys: no active key {args.key_id}", file=sys.stderr)
            return 1
        _show({"revoked": args.key_id}, args.json)
        return 0
    except XFlowError as error:
        print(f"xflow keys: {error}", file=sys.stderr)
        return 2
    finally:
        store.close()


def _show(record: dict[str, Any], as_json: bool) -> None:
    """One key: a JSON object with ``--json``, else ``field: value`` pairs on one line."""
    if as_json:
        print(json.dumps(record, default=str))
    else:
        print("  ".join(f"{name}: {value}" for name, value in record.items() if value not in (None, "")))
