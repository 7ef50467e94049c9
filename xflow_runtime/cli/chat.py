"""``xflow chat FILE``: talk to an agent workflow in the terminal.

The first line you type becomes the input field ``message`` (so a chat workflow's first
``userMessage`` is usually ``${ .message }``); every later line is sent to the agent conversation
waiting in the instance (``Runtime.send_message``). The agent's replies are printed as they come;
when an outcome finishes the conversation and the workflow ends, its output is printed as JSON.
``/quit`` or end of input stops the chat.

``--memory-id ID`` adds ``memoryId`` to the input, for workflows whose ``memory.memoryId`` is
``${ .memoryId }``; ``--llm-script FILE`` answers from a reply script instead of a provider.
The instance runs in process, but its chat memory is persistent: the chat-memory database of
``--db URL`` as ``xflow run`` reads it (default ``$XFLOW_DATABASE_URL``, else ``./.xflow/``; the
rule is :mod:`xflow_runtime.settings`), so a later ``xflow chat --memory-id ID`` continues the
conversation. ``--ephemeral`` keeps the history in the instance only. ``--tenant``/``--user``
scope the memory; ``--workflow FILE`` registers subflows.
On a terminal, lines are edited with readline (arrows, Ctrl-R) and kept in a history file
(``$XDG_STATE_HOME/xflow/chat_history``, default ``~/.local/state/xflow/chat_history``); readline is
imported only then. ``--json`` prints each reply as ``{"reply": …}`` and the output as
``{"output": …}``, one JSON object per line on stdout (the prompt then goes to stderr).
Exit codes: 0 finished (or quit), 1 the instance failed, 2 bad command line or definition.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any, Callable, TextIO

from xflow_runtime.interpreter import records
from xflow_runtime.cli.run import add_embedding_option, add_identity_options
from xflow_runtime.errors import DefinitionError, WorkflowFailed, XFlowError

QUIT = "/quit"


def register(subparsers: Any, name: str) -> None:
    parser = subparsers.add_parser(name, help="talk to an agent workflow in the terminal",
                                   description=__doc__.split("\n\n")[0])
    parser.add_argument("file", help="the workflow file (YAML or JSON)")
    parser.add_argument("--input", metavar="JSON|@FILE", default=None, help="workflow input (default {})")
    parser.add_argument("--memory-id", metavar="ID", default=None, help="conversation id, passed as input memoryId")
    parser.add_argument("--llm-script", metavar="FILE", default=None,
                        help="answer LLM calls from a reply script (YAML) instead of a provider")
    parser.add_argument("--secret", action="append", default=[], metavar="NAME=VALUE",
                        help="a value for $SECRETS.NAME; repeatable")
    parser.add_argument("--db", metavar="URL", default=None,
                        help="the store as for xflow run (default $XFLOW_DATABASE_URL, else SQLite under "
                             "./.xflow/); chat memory is xflow.db beside a SQLite store, or in the "
                             "PostgreSQL database")
    parser.add_argument("--ephemeral", action="store_true", help="keep the history in the instance only")
    parser.add_argument("--json", action="store_true",
                        help="one JSON object per line: {reply} for each answer, {output} at the end")
    add_embedding_option(parser)
    add_identity_options(parser)
    parser.set_defaults(handler=chat_command)


def chat_command(args: Any) -> int:
    from contextlib import nullcontext

    from xflow_runtime.cli.run import long_term_options, read_input, read_secrets
    from xflow_runtime.runtime.memory import chat_memory_url

    try:
        data = read_input(args.input)
        if not isinstance(data, dict):
            raise XFlowError("--input must be a JSON object")
        if args.memory_id is not None:
            data["memoryId"] = args.memory_id
        secrets = read_secrets(args.secret, None)
        options: dict[str, Any] = {"chat_memory": False if args.ephemeral else chat_memory_url(args.db),
                                   "workflows": [Path(file) for file in args.workflows]}
        options.update(long_term_options(args))
        identity = {"tenant": args.tenant, "user": args.user}
        if args.llm_script:
            from xflow_runtime.llm.scripted import scripted_llm

            context: Any = scripted_llm(args.llm_script)
        else:
            context = nullcontext()
        line_reader = terminal_line_reader() if sys.stdin.isatty() else None
        with context:
            chat = Chat(sys.stdin, sys.stdout, as_json=args.json, read_line=line_reader)
            return asyncio.run(chat.run(Path(args.file), data, secrets, identity=identity, runtime_options=options))
    except DefinitionError as error:
        print(str(error), file=sys.stderr)
        return 2
    except XFlowError as error:
        print(f"xflow chat: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def history_file() -> Path:
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "xflow" / "chat_history"


def terminal_line_reader() -> Callable[[str], str | None]:
    """``input()`` with readline editing and a persistent history (saved after every line, so
    an interrupted chat keeps it)."""
    import readline

    path = history_file()
    try:
        readline.read_history_file(path)
    except OSError:
        pass  # no history yet
    readline.set_history_length(1000)

    def read(prompt: str) -> str | None:
        try:
            line = input(prompt)
        except EOFError:
            return None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            readline.write_history_file(path)
        except OSError:
            pass  # a read-only home does not stop the chat
        return line

    return read


class Chat:
    def __init__(self, reader: TextIO, writer: TextIO, *, as_json: bool = False,
                 read_line: Callable[[str], str | None] | None = None):
        self.reader, self.writer = reader, writer
        self.as_json = as_json
        self.read_line = read_line
        self.replies: asyncio.Queue[str] = asyncio.Queue()
        self._streamed = ""  # reply text shown token by token in this turn
        self._decoders: dict[str, Any] = {}  # LLM call (step) → its ResponseText

    def _on_tokens(self, instance_id: str, step: str, delta: str, done: bool) -> None:
        """The reply appears as the model writes it (the ``response`` of its JSON answer)."""
        from xflow_runtime.agent.reply_stream import ResponseText

        if done:
            self._decoders.pop(step, None)
            return
        if self.as_json:  # replies are printed whole, as JSON lines
            return
        decoder = self._decoders.setdefault(step, ResponseText())
        text = decoder.feed(delta)
        if not text:
            return
        if not self._streamed:
            self.writer.write("agent> ")
        self._streamed += text
        self.writer.write(text)
        self.writer.flush()

    def _on_history(self, record: dict[str, Any]) -> None:
        if record.get("event") == records.AGENT_REPLY:
            self.replies.put_nowait(str(record.get("reply", "")))

    async def run(self, path: Path, data: dict[str, Any], secrets: dict[str, Any], *,
                  identity: dict[str, Any] | None = None, runtime_options: dict[str, Any] | None = None) -> int:
        from xflow_runtime.runtime import Runtime

        first = await self._ask()
        if first is None:
            return 0
        data.setdefault("message", first)
        async with Runtime("inprocess", secrets=secrets, on_history=self._on_history,
                           reply_tokens=self._on_tokens, **(runtime_options or {})) as runtime:
            plan = runtime.load(path)
            handle = await runtime.start(plan, data, **(identity or {}))
            result = asyncio.ensure_future(handle.result())
            while True:
                reply = asyncio.ensure_future(self.replies.get())
                await asyncio.wait({reply, result}, return_when=asyncio.FIRST_COMPLETED)
                if not reply.done():
                    reply.cancel()
                    return self._finish(result)
                text = reply.result()
                shown, self._streamed = self._streamed, ""
                if self.as_json:
                    self._say(json.dumps({"reply": text}, ensure_ascii=False))
                else:
                    if shown:
                        self._say("")  # ends the line written token by token
                    if shown.strip() != text.strip():  # e.g. a repaired answer: show the final one
                        self._say(f"agent> {text}")
                answer = await self._ask()
                if answer is None:
                    result.cancel()
                    return 0
                await runtime.send_message(handle.instance_id, answer)

    async def _ask(self) -> str | None:
        if self.read_line is not None:  # a terminal: readline prompts (on stdout) and edits
            line = await asyncio.to_thread(self.read_line, "" if self.as_json else "you> ")
            if line is None:
                print("", file=sys.stderr)
                return None
            text = line
        else:
            prompt = sys.stderr if self.as_json else self.writer
            prompt.write("you> ")
            prompt.flush()
            line = await asyncio.to_thread(self.reader.readline)
            if not line:
                if not self.as_json:
                    self._say("")
                return None
            text = line.rstrip("\n")
        return None if text.strip() == QUIT else text

    def _finish(self, result: "asyncio.Future[Any]") -> int:
        if self._streamed:  # the last reply was written token by token
            self._streamed = ""
            self._say("")
        try:
            output = result.result()
        except WorkflowFailed as failure:
            print(f"error: {failure}", file=sys.stderr)
            return 1
        self._say(json.dumps({"output": output} if self.as_json else output, ensure_ascii=False, default=str))
        return 0

    def _say(self, text: str) -> None:
        self.writer.write(text + "\n")
        self.writer.flush()
