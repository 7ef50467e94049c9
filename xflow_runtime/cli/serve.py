"""``xflow serve --workflows DIR [--db URL] [--host H] [--port P] [--auth keys|jwt|none]``: the
runtime as an HTTP service (uvicorn; specs/service.md).

The durable engine runs every instance (SQLite under ``./.xflow/`` by default, PostgreSQL by
``--db``); instances a stopped server left running resume when it starts again. ``--auth keys``
(default) accepts API keys made with ``xflow keys create``; ``--auth jwt`` bearer JWTs checked
with ``--jwt-secret`` (HS256), ``--jwt-public-key FILE`` or ``--jwt-jwks FILE`` (RS256); both can
be combined (``--auth keys,jwt``). ``--auth none`` is refused on anything but a loopback host.
SIGTERM drains: ``/readyz`` answers 503, new starts and events are refused, open requests get
``--drain-seconds`` to finish, then instances stop at a durable point and resume on the next start.
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
    parser.add_argument("--jwt-issuer", default=None)
    parser.add_argument("--jwt-audience", default=None)
    parser.add_argument("--llm-script", metavar="FILE", default=None,
                        help="answer LLM calls from a reply script (YAML) instead of a provider")
    parser.add_argument("--llm-api-base", metavar="URL", default=None,
                        help="send every LLM call to this OpenAI-compatible endpoint (a gateway)")
    parser.add_argument("--max-body-bytes", type=int, default=1_000_000)
    parser.add_argument("--key-cache-seconds", type=float, default=5.0,
                        help="how long a verified API key is trusted before it is read again (revocation delay)")
    parser.add_argument("--drain-seconds", type=float, default=10.0)
    parser.add_argument("--sonataflow-routes", action="store_true",
                        help="also answer SonataFlow's POST /{workflowId} and GET /{workflowId}/{instanceId}")
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
                                   issuer=args.jwt_issuer, audience=args.jwt_audience)
    return Authenticator(keys=keys, jwt_settings=jwt_settings)


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
        runtime = Runtime("durable", database_url=args.db, llm=llm)
        app = create_app(runtime, workflows=args.workflows, auth=auth,
                         options=ServiceOptions(max_body_bytes=args.max_body_bytes),
                         sonataflow_routes=args.sonataflow_routes)
    except (XFlowError, OSError) as error:
        print(f"xflow serve: {error}", file=sys.stderr)
        return 2
    # The command-wide --log-level / -v (cli/main.py) also sets uvicorn's level; INFO by default.
    level = getattr(args, "log_level", None) or "INFO"
    logging.basicConfig(level=level, format="%(message)s")
    logging.getLogger("LiteLLM").setLevel(logging.WARNING)
    config = uvicorn.Config(app, host=args.host, port=args.port, log_level=level.lower(), access_log=False,
                            timeout_graceful_shutdown=max(1, int(args.drain_seconds)), server_header=False)
    server = _draining_server(uvicorn, config, app.state.xflow)
    context: Any = nullcontext()
    if args.llm_script:
        from xflow_runtime.llm.scripted import scripted_llm

        context = scripted_llm(args.llm_script)
    with context:
        server.run()
    return 0


def _draining_server(uvicorn: Any, config: Any, state: Any) -> Any:
    class DrainingServer(uvicorn.Server):
        """Marks the service draining the moment a stop signal arrives (before uvicorn closes the
        listening socket), so ``/readyz`` fails and starts/events are refused."""

        def handle_exit(self, sig: int, frame: Any) -> None:
            state.draining = True
            super().handle_exit(sig, frame)

    return DrainingServer(config)
