"""One example per command, shown at the end of its ``--help`` (``examples:``).

Kept in one table, applied to the parser tree after the commands registered themselves, so a
command module stays about its options; ``tests/cli/test_help.py`` checks every command has one.
"""

from __future__ import annotations

import argparse

#: command path ("memory memories list") → example lines
EXAMPLES: dict[str, tuple[str, ...]] = {
    "validate": ("xflow validate workflows/*.yaml", "xflow validate --json order.yaml | jq .errors"),
    "schema": ("xflow schema --list", "xflow schema --write schemas/ --bundle"),
    "run": ("xflow run order.yaml --input '{\"order\": {\"id\": \"A-1\", \"total\": 50}}'",
            "xflow run order.yaml --ephemeral --event @events.jsonl",
            "xflow run approval.yaml --detach        # prints the id; deliver with xflow send"),
    "resume": ("xflow resume 3f2c9a1e-…", "xflow resume 3f2c9a1e-… --wait-timeout 30"),
    "list": ("xflow list --status PENDING", "xflow list --json | jq -r .instance_id"),
    "show": ("xflow show 3f2c9a1e-… | jq '.states[].state'",),
    "send": ("xflow send 3f2c9a1e-… --event '{\"type\":\"order.approval\",\"source\":\"/approvals\",\"data\":{}}'",
             "xflow send 3f2c9a1e-… --message 'yes, go ahead' --no-wait"),
    "chat": ("xflow chat support-agent.yaml --memory-id ann-1",
             "xflow chat support-agent.yaml --llm-script replies.yaml --ephemeral"),
    "memory": ("xflow memory chats --user ann", "xflow memory memories list --agent support --user ann"),
    "memory chats": ("xflow memory chats --user ann --json",),
    "memory history": ("xflow memory history 7d1e… --json",),
    "memory delete": ("xflow memory delete 7d1e…",),
    "memory clear": ("xflow memory clear ann-1 --agent support",),
    "memory memories": ("xflow memory memories list --agent support --user ann --query refunds",),
    "memory memories list": ("xflow memory memories list --agent support --user ann --query refunds",),
    "memory memories get": ("xflow memory memories get 42 --agent support --user ann --json",),
    "memory memories create": ("xflow memory memories create --agent support --title Tone "
                               "--content 'answer briefly' --tag style",),
    "memory memories update": ("xflow memory memories update 42 --agent support --content 'answer in French'",),
    "memory memories delete": ("xflow memory memories delete 42 --agent support --user ann",),
    "memory erase-user": ("xflow memory erase-user ann --tenant acme --json",
                          "xflow memory erase-user ann --tenant acme --checkpoint-wait 60"),
    "memory export-user": ("xflow memory export-user ann --tenant acme -o ann.json",),
    "memory reindex": ("xflow memory reindex --embedding-model openai/text-embedding-3-small --json",),
    "memory index-scopes": ("xflow memory index-scopes --db postgresql://… --json",
                            "xflow memory index-scopes --dry-run"),
    "serve": ("xflow serve --workflows workflows/ --auth keys --port 8080",
              "xflow serve --workflows workflows/ --db postgresql://xflow@db/xflow --workers 4",
              "xflow serve --workflows workflows/ --auth none      # loopback only",
              "xflow serve --workflows workflows/ --no-console     # the API only, no web console under /ui",
              "xflow serve --workflows workflows/ --public-url https://flows.example.com "
              "--callback-secret-env CALLBACK_SECRET   # proxy agents answer by callback",
              "xflow serve --workflows workflows/ --mcp --mcp-wait 10   # marked workflows as MCP tools at /mcp",
              "xflow serve --workflows workflows/ --a2a --a2a-callback-secret-env XFLOW_A2A_SECRET \\\n"
              "            --a2a-callback-url https://flows.example.com   # A2A agents in and out"),
    "worker": ("xflow worker --db postgresql://xflow@db/xflow --workflows workflows/ --concurrency 50",
               "xflow worker --db postgresql://xflow@db/xflow --llm-rate-limit openai=3000/60 --drain-seconds 30",
               "xflow worker --db postgresql://xflow@db/xflow --index-scopes-every 30m   # own indexes of large "
               "memory scopes (default 10m; 0: off)"),
    "keys": ("xflow keys create --tenant acme --role service --name back-office",),
    "keys create": ("xflow keys create --tenant acme --role user --user ann --expires-in 86400",),
    "keys list": ("xflow keys list --tenant acme --json",),
    "keys revoke": ("xflow keys revoke 5f0c…",),
    "tasks": ("xflow tasks list --url http://127.0.0.1:8080 --json", "xflow tasks claim 1f9c…",
              "xflow tasks complete 1f9c… --data '{\"approved\": true}'"),
    "memory consent": ("xflow memory consent ann --refuse", "xflow memory consent ann --show --json"),
    "completion": ("xflow completion bash > ~/.local/share/bash-completion/completions/xflow",
                   "xflow completion zsh > \"${fpath[1]}/_xflow\""),
}


def apply_examples(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> None:
    """Give every (sub)command of ``parser`` its examples as the ``--help`` epilog."""
    for action in parser._actions:  # argparse keeps sub-parsers only there
        if not isinstance(action, argparse._SubParsersAction):
            continue
        for name, sub in action.choices.items():
            key = " ".join((*path, name))
            lines = EXAMPLES.get(key)
            if lines and not sub.epilog:
                sub.epilog = "examples:\n" + "".join(f"  {line}\n" for line in lines)
                sub.formatter_class = argparse.RawDescriptionHelpFormatter
            apply_examples(sub, (*path, name))
