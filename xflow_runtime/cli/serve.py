"""``xflow serve --workflows DIR [--db URL] [--host H] [--port P] [--auth keys|jwt|none]``: the
runtime as an HTTP service (uvicorn; specs/service.md).

The durable engine runs every instance (SQLite under ``./.xflow/`` by default, PostgreSQL by
``--db``); instances a stopped server left running resume when it starts again. ``--auth keys``
(default) accepts API keys made with ``xflow keys create``; ``--auth jwt`` bearer JWTs checked
with ``--jwt-secret`` (HS256), ``--jwt-public-key FILE`` or ``--jwt-jwks FILE`` (RS256); both can
be combined (``--auth keys,jwt``). ``--auth none`` is refused on anything but a loopback host.
``--a2a`` serves agent workflows as A2A agents; ``--a2a-callback-secret-env`` lets ``aiagentproxy``
states wait for A2A push callbacks (specs/a2a.md). SIGTERM drains: ``/readyz`` answers 503, new
starts and events are refused, open requests get ``--drain-seconds`` to finish, then instances stop
at a durable point and resume on the next start.
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import os
import sys
from typing import Any

from xflow_runtime.errors import XFlowError


def register(subparsers: Any, name: str) -> None:
    parser = subparsers.add_parser(name, help="serve workflows over HTTP", description=__doc__.split("\n\n")[0])
    parser.add_argument("--workflows", metavar="DIR", required=True, help="folder of workflow definitions")
    parser.add_argument("--db", metavar="URL", default=None,
                        help="durable store (default $XFLOW_DATABASE_URL, else ./.xflow/xflow.sqlite)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--auth", default="keys", help="keys, jwt, keys,jwt or none (default keys)")
    parser.add_argument("--jwt-secret-env", metavar="VAR", default=None,
                        help="environment variable holding the HS256 secret (≥ 32 bytes)")
    parser.add_argument("--jwt-public-key", metavar="FILE", default=None, help="RS256 public key (PEM)")
    parser.add_argument("--jwt-jwks", metavar="FILE", default=None, help="RS256 keys (a JWKS document)")
    parser.add_argument("--jwt-jwks-url", metavar="URL", default=None,
                        help="RS256 keys served by the identity provider (https; cached 5 min)")
    parser.add_argument("--jwt-issuer", default=None)
    parser.add_argument("--jwt-audience", default=None)
    parser.add_argument("--llm-script", metavar="FILE", default=None,
                        help="answer LLM calls from a reply script (YAML) instead of a provider")
    parser.add_argument("--llm-api-base", metavar="URL", default=None,
                        help="send every LLM call to this OpenAI-compatible endpoint (a gateway)")
    parser.add_argument("--max-body-bytes", type=int, default=1_000_000)
    parser.add_argument("--body-timeout", metavar="SECONDS", type=float, default=30.0,
                        help="a request body must arrive within this (408 otherwise; default 30)")
    parser.add_argument("--max-wait", metavar="SECONDS", type=float, default=60.0,
                        help="the longest Prefer: wait a start may ask for (default 60)")
    parser.add_argument("--reply-timeout", metavar="SECONDS", type=float, default=120.0,
                        help="how long a chat message waits for the agent's reply (default 120)")
    parser.add_argument("--request-timeout", metavar="SECONDS", type=float, default=None,
                        help="answer 504 when no response has started within this; it must exceed the two "
                             "waits above (default: the longer of them + 30)")
    parser.add_argument("--key-cache-seconds", type=float, default=5.0,
                        help="how long a verified API key is trusted before it is read again (revocation delay)")
    parser.add_argument("--drain-seconds", type=float, default=10.0)
    parser.add_argument("--workers", type=int, default=0, metavar="N",
                        help="run instances in N worker processes (a fleet on --db PostgreSQL) instead of this one")
    from xflow_runtime.cli.worker import add_index_scopes_options

    add_index_scopes_options(parser)  # passed to the workers, or run here without --workers
    parser.add_argument("--public-url", metavar="URL", default=None,
                        help="the URL agents reach this service at, for callback URLs (default http://HOST:PORT)")
    parser.add_argument("--callback-secret-env", metavar="VAR", default=None,
                        help="environment variable holding the secret (≥ 32 bytes) that signs agent callback "
                             "tokens (default $XFLOW_CALLBACK_SECRET when set; without one, proxy agents "
                             "answer synchronously only)")
    parser.add_argument("--sonataflow-routes", action="store_true",
                        help="also answer SonataFlow's POST /{workflowId} and GET /{workflowId}/{instanceId}")
    parser.add_argument("--mcp", action="store_true",
                        help="also serve the workflows marked xflow.mcp.expose as MCP tools at /mcp (extra [mcp])")
    parser.add_argument("--mcp-wait", type=float, default=30.0, metavar="SECONDS",
                        help="how long an MCP tool call waits for its run before answering a run handle")
    parser.add_argument("--a2a", action="store_true",
                        help="serve the workflows marked 'xflow.a2a.expose' as A2A agents (/a2a/agents/<id>/)")
    parser.add_argument("--a2a-allow-private-webhooks", action="store_true",
                        help="with --a2a: also push to loopback/private webhook URLs (tests, closed networks)")
    parser.add_argument("--a2a-callback-url", metavar="URL", default=None,
                        help="public base URL A2A agents send push callbacks to (default http://HOST:PORT "
                             "when --a2a-callback-secret-env is given)")
    parser.add_argument("--a2a-callback-secret-env", metavar="VAR", default=None,
                        help="environment variable holding the secret (≥ 32 bytes) that A2A callback tokens "
                             "derive from; enables push mode for aiagentproxy")
    parser.add_argument("--no-console", action="store_true",
                        help="do not serve the web console under /ui (specs/console.md)")
    parser.set_defaults(handler=serve_command)


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def build_auth(args: argparse.Namespace, database_url: str | None) -> Any:
    from xflow_runtime.service.auth import Authenticator, JwtSettings

    modes = {m.strip() for m in args.auth.split(",") if m.strip()}
    if not modes or not modes <= {"keys", "jwt", "none"} or ("none" in modes and len(modes) > 1):
        raise XFlowError("--auth takes keys, jwt, keys,jwt or none")
    if "none" in modes:
        if not _loopback(args.host):
            raise XFlowError("--auth none is only allowed on a loopback host (127.0.0.1, ::1, localhost)")
        print("xflow serve: WARNING: --auth none — every request acts for tenant 'default'", file=sys.stderr)
        return Authenticator(anonymous=True)
    keys = jwt_settings = None
    if "keys" in modes:
        from xflow_runtime.runtime.memory import chat_memory_url
        from xflow_runtime.service.api_keys import ApiKeyStore, ApiKeyVerifier

        keys = ApiKeyVerifier(ApiKeyStore(chat_memory_url(database_url)), cache_seconds=args.key_cache_seconds)
    if "jwt" in modes:
        secret = os.environ.get(args.jwt_secret_env) if args.jwt_secret_env else None
        if args.jwt_secret_env and not secret:
            raise XFlowError(f"${args.jwt_secret_env} is not set")
        public_key = None
        if args.jwt_public_key:
            with open(args.jwt_public_key, encoding="utf-8") as handle:
                public_key = handle.read()
        jwt_settings = JwtSettings(secret=secret, public_key=public_key, jwks_file=args.jwt_jwks,
                                   jwks_url=args.jwt_jwks_url,
                                   issuer=args.jwt_issuer, audience=args.jwt_audience)
    return Authenticator(keys=keys, jwt_settings=jwt_settings)


def callback_settings(args: argparse.Namespace) -> Any:
    """The callback settings of asynchronous ``aiagentproxy`` agents, or ``None`` (no secret)."""
    variable = args.callback_secret_env or "XFLOW_CALLBACK_SECRET"
    secret = os.environ.get(variable)
    if not secret:
        if args.callback_secret_env:
            raise XFlowError(f"${args.callback_secret_env} is not set")
        return None
    from xflow_runtime.agent.proxy_callbacks import CallbackSettings

    host = f"[{args.host}]" if ":" in args.host else args.host
    return CallbackSettings(base_url=args.public_url or f"http://{host}:{args.port}", secrets=(secret,))


def a2a_settings(args: argparse.Namespace) -> Any:
    """Push callbacks for A2A agents (specs/a2a.md §3): only with a secret, which must stay the same
    across restarts for the callbacks of waits made before one. Without ``--a2a-callback-*`` they use
    the service's callback settings (``--public-url``, ``--callback-secret-env`` or
    ``$XFLOW_CALLBACK_SECRET``): one public address and one secret serve both kinds of agent (their
    tokens are of different kinds and never valid for each other)."""
    variable = args.a2a_callback_secret_env or args.callback_secret_env
    secret = os.environ.get(variable) if variable else os.environ.get("XFLOW_CALLBACK_SECRET")
    if not secret:
        if args.a2a_callback_url and not variable:
            raise XFlowError("--a2a-callback-url needs --a2a-callback-secret-env (or --callback-secret-env)")
        if variable:
            raise XFlowError(f"${variable} is not set")
        return None
    from xflow_runtime.a2a.settings import A2ASettings

    host = f"[{args.host}]" if ":" in args.host else args.host
    try:
        return A2ASettings(callback_url=args.a2a_callback_url or args.public_url or f"http://{host}:{args.port}",
                           callback_secret=secret)
    except ValueError as error:
        raise XFlowError(str(error)) from None


def serve_command(args: argparse.Namespace) -> int:
    try:
        import uvicorn
    except ImportError:
        print("xflow serve: install the service extra: pip install 'xflow-runtime[service]'", file=sys.stderr)
        return 2
    from contextlib import nullcontext

    from xflow_runtime.runtime import Runtime
    from xflow_runtime.service import ServiceOptions, create_app

    try:
        auth = build_auth(args, args.db)
        llm = None
        if args.llm_api_base:
            from xflow_runtime.llm.client import LLMSettings

            llm = LLMSettings(api_base=args.llm_api_base, api_key=os.environ.get("XFLOW_LLM_API_KEY"))
        fleet = None
        if args.workers:
            from xflow_runtime.engine.fleet_options import FleetOptions

            if args.workers < 1 or args.llm_script:
                raise XFlowError("--workers takes N ≥ 1 and a gateway (--llm-api-base), not --llm-script")
            fleet = FleetOptions(run_instances=False)  # this process starts instances; workers run them
        from xflow_runtime.cli.worker import index_schedule

        scopes = index_schedule(args)
        runtime = Runtime("durable", database_url=args.db, llm=llm, fleet=fleet, callbacks=callback_settings(args),
                          a2a=a2a_settings(args))
        options = ServiceOptions(max_body_bytes=args.max_body_bytes, body_timeout_seconds=args.body_timeout,
                                 max_wait_seconds=args.max_wait, reply_timeout_seconds=args.reply_timeout,
                                 request_timeout_seconds=args.request_timeout,
                                 a2a_private_webhooks=args.a2a_allow_private_webhooks,
                                 index_scopes=None if args.workers else scopes)
        app = create_app(runtime, workflows=args.workflows, auth=auth, options=options,
                         sonataflow_routes=args.sonataflow_routes, mcp=args.mcp, mcp_host=args.host,
                         mcp_wait_seconds=args.mcp_wait, a2a_agents=args.a2a,
                         console=not args.no_console)
    except ImportError as error:
        print(f"xflow serve: --mcp needs the mcp extra: pip install 'xflow-runtime[mcp]' ({error})", file=sys.stderr)
        return 2
    except (XFlowError, OSError, ValueError) as error:
        print(f"xflow serve: {error}", file=sys.stderr)
        return 2
    # The command-wide --log-level / -v (cli/main.py) also sets uvicorn's level; INFO by default.
    level = getattr(args, "log_level", None) or "INFO"
    logging.basicConfig(level=level, format="%(message)s")
    logging.getLogger("LiteLLM").setLevel(logging.WARNING)
    config = uvicorn.Config(app, host=args.host, port=args.port, log_level=level.lower(), access_log=False,
                            timeout_graceful_shutdown=max(1, int(args.drain_seconds)), server_header=False)
    workers = _spawn_workers(args) if args.workers else None
    server = _draining_server(uvicorn, config, app.state.xflow, workers, args.drain_seconds)
    context: Any = nullcontext()
    if args.llm_script:
        from xflow_runtime.llm.scripted import scripted_llm

        context = scripted_llm(args.llm_script)
    try:
        with context:
            server.run()
    finally:  # uvicorn re-raises a stop signal after its shutdown: the workers are stopped by then
        _stop_workers(workers, args.drain_seconds)
    return 0


def _spawn_workers(args: argparse.Namespace) -> Any:
    """``xflow worker`` processes sharing this service's database (each its own executor id),
    restarted when one exits (:mod:`.worker_supervisor`)."""
    from xflow_runtime.cli.worker_supervisor import WorkerSupervisor

    command = [sys.executable, "-c", "import sys; from xflow_runtime.cli.main import main; sys.exit(main())",
               "worker", "--workflows", args.workflows, "--drain-seconds", str(args.drain_seconds)]
    if args.db:
        command += ["--db", args.db]
    if args.llm_api_base:
        command += ["--llm-api-base", args.llm_api_base]
    from xflow_runtime.cli.worker import index_schedule_argv

    command += index_schedule_argv(args)
    return WorkerSupervisor(command, args.workers)


def _stop_workers(supervisor: Any, drain_seconds: float) -> None:
    """SIGTERM drains each worker (its instances go back to the fleet), then wait for them."""
    import subprocess

    workers = supervisor.stop_restarting() if supervisor is not None else []
    for worker in workers:
        if worker.poll() is None:
            worker.terminate()
    for worker in workers:
        try:
            worker.wait(timeout=drain_seconds + 15)
        except subprocess.TimeoutExpired:
            worker.kill()


def _draining_server(uvicorn: Any, config: Any, state: Any, workers: Any, drain_seconds: float) -> Any:
    class DrainingServer(uvicorn.Server):
        """Marks the service draining the moment a stop signal arrives (before uvicorn closes the
        listening socket), so ``/readyz`` fails and starts/events are refused; its workers start
        draining at the same moment and are waited for before the server's shutdown ends."""

        def handle_exit(self, sig: int, frame: Any) -> None:
            state.draining = True
            for worker in workers.stop_restarting() if workers is not None else []:
                if worker.poll() is None:
                    worker.terminate()
            super().handle_exit(sig, frame)

        async def shutdown(self, sockets: Any = None) -> None:
            import asyncio

            await super().shutdown(sockets)
            await asyncio.to_thread(_stop_workers, workers, drain_seconds)

    return DrainingServer(config)
