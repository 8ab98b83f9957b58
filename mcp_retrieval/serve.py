"""`mcp-retrieval serve`: start the Engine, the background index and the watcher, then the transport."""

from __future__ import annotations

import logging
import os
import sys

import anyio

from mcp_retrieval.config import Config

log = logging.getLogger("mcp_retrieval")


def serve(config: Config, args) -> int:
    from mcp_retrieval.indexers.memory import limit_malloc_arenas
    from mcp_retrieval.indexers.watch import Watcher
    from mcp_retrieval.engine import Engine
    from mcp_retrieval.server import LOOPBACK, build_server, http_app

    token = args.auth_token or os.environ.get("MCP_RETRIEVAL_AUTH_TOKEN")
    if args.transport != "stdio" and args.host not in LOOPBACK:
        if not token:
            print("mcp-retrieval: binding to a non-loopback host requires --auth-token (or MCP_RETRIEVAL_AUTH_TOKEN)",
                  file=sys.stderr)
            return 2
        print(f"mcp-retrieval: WARNING: serving on {args.host}, reachable from other machines; "
              "requests need the bearer token", file=sys.stderr)
    limit_malloc_arenas()
    config.understand, config.understand_budget = args.understand, args.understand_budget
    config.understand_timeout_s = max(0.1, args.understand_timeout)
    engine = Engine(config)
    engine.start_background()  # lexical first, vectors behind; answers flow meanwhile
    watcher = None
    if not args.no_watch:
        watcher = Watcher(config.root, engine.sync_paths)
        watcher.start()
    server = build_server(engine)
    try:
        if args.transport == "stdio":
            server.run("stdio")
        else:
            import uvicorn

            app = http_app(server, args.transport, args.host, token, args.max_sessions)
            config_u = uvicorn.Config(app, host=args.host, port=args.port, log_level=args.log_level.lower())
            anyio.run(uvicorn.Server(config_u).serve)
    except KeyboardInterrupt:
        pass
    finally:
        if watcher is not None:
            watcher.stop()
        engine.close()
    return 0
