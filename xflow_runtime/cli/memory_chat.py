"""``xflow memory chats|history|delete|clear``: chat histories from the command line."""

from __future__ import annotations

import argparse
import json
from typing import Any

from xflow_runtime.cli.memory import run_async
from xflow_runtime.cli.output import timestamp


def add_commands(commands: Any, common: argparse.ArgumentParser) -> None:
    chats = commands.add_parser("chats", parents=[common], help="list chats, most recent first")
    chats.add_argument("--user", help="only this user's chats")
    chats.add_argument("--agent", help="only this agent's chats")
    chats.add_argument("--limit", type=int, default=100, help="at most this many (default: 100)")
    chats.add_argument("--json", action="store_true", help="one JSON object per line")
    chats.set_defaults(handler=chats_command)

    history = commands.add_parser("history", parents=[common], help="print a chat's messages")
    history.add_argument("chat_id", metavar="CHAT_ID")
    history.add_argument("--json", action="store_true", help="one JSON message per line")
    history.set_defaults(handler=history_command)

    delete = commands.add_parser("delete", parents=[common], help="delete a chat and its messages")
    delete.add_argument("chat_id", metavar="CHAT_ID")
    delete.add_argument("--json", action="store_true", help="print {chat_id, deleted_messages}")
    delete.set_defaults(handler=delete_command)

    clear = commands.add_parser("clear", parents=[common],
                                help="delete every chat stored under a memoryId")
    clear.add_argument("memory_id", metavar="MEMORY_ID")
    clear.add_argument("--agent", help="only this agent's chats")
    clear.add_argument("--user", help="only this user's chats")
    clear.add_argument("--json", action="store_true", help="print {memory_id, deleted_messages}")
    clear.set_defaults(handler=clear_command)


def _open(args: argparse.Namespace) -> Any:
    from xflow_runtime.cli.memory import open_memory_engine
    from xflow_runtime.memory.chat import ChatMemory

    return ChatMemory(open_memory_engine(args.db))


def chats_command(args: argparse.Namespace) -> int:
    async def run() -> int:
        async with _open(args) as memory:
            found = await memory.list_chats(tenant=args.tenant, user=args.user, agent=args.agent,
                                            limit=args.limit)
        for chat in found:
            if args.json:
                print(json.dumps({**chat.__dict__, "created_at": timestamp(chat.created_at),
                                  "updated_at": timestamp(chat.updated_at)}, ensure_ascii=False))
            else:
                print(f"{chat.id}  {timestamp(chat.updated_at)}  agent={chat.agent}  "
                      f"user={chat.user or '-'}  memoryId={chat.memory_id or '(user)'}  "
                      f"messages={chat.message_count}  {chat.title or ''}".rstrip())
        if not found and not args.json:
            print("no chats")
        return 0
    return run_async(run)


def _describe(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        content = " ".join(p.get("text", f"[{p.get('type')}]") if isinstance(p, dict) else str(p)
                           for p in content)
    parts = [content] if content else []
    for call in message.get("tool_calls") or ():
        parts.append(f"→ {call['function']['name']}({call['function']['arguments']}) [{call['id']}]")
    label = message["role"] if message["role"] != "tool" else f"tool[{message['tool_call_id']}]"
    return f"{label}: {' '.join(parts)}"


def history_command(args: argparse.Namespace) -> int:
    async def run() -> int:
        async with _open(args) as memory:
            messages = await memory.history(args.chat_id, tenant=args.tenant)
        for message in messages:
            print(json.dumps(message, ensure_ascii=False) if args.json else _describe(message))
        return 0
    return run_async(run)


def delete_command(args: argparse.Namespace) -> int:
    async def run() -> int:
        async with _open(args) as memory:
            deleted = await memory.delete_chat(args.chat_id, tenant=args.tenant)
        if args.json:
            print(json.dumps({"chat_id": args.chat_id, "deleted_messages": deleted}))
        else:
            print(f"deleted chat {args.chat_id} ({deleted} messages)")
        return 0
    return run_async(run)


def clear_command(args: argparse.Namespace) -> int:
    async def run() -> int:
        async with _open(args) as memory:
            deleted = await memory.clear(args.memory_id, tenant=args.tenant, agent=args.agent,
                                         user=args.user)
        if args.json:
            print(json.dumps({"memory_id": args.memory_id, "deleted_messages": deleted}))
        else:
            print(f"cleared memoryId {args.memory_id!r} ({deleted} messages)")
        return 0
    return run_async(run)
