"""`mcp-retrieval serve`: start the Engine, the background index and the watcher, then the transport."""

from __future__ import annotations

import logging
import os
import sys

import anyio

log = logging.getLogger("mcp_retrieval")


class Refused(Exception):
    """`serve` was asked for something it will not do (expose the index without a token, mix
    `--store` with a local root); the message says what to change."""


def _check_exposure(args) -> str | None:
    """The bearer token to require (None on loopback without one); `Refused` when binding off
    loopback without one."""
    from mcp_retrieval.server import LOOPBACK

    token = args.auth_token or os.environ.get("MCP_RETRIEVAL_AUTH_TOKEN")
    if args.transport != "stdio" and args.host not in LOOPBACK:
        if not token:
            raise Refused("binding to a non-loopback host requires --auth-token (or MCP_RETRIEVAL_AUTH_TOKEN)")
        print(f"mcp-retrieval: WARNING: serving on {args.host}, reachable from other machines; "
              "requests need the bearer token", file=sys.stderr)
    return token


def _run(server, args, token) -> None:
    from mcp_retrieval.server import http_app
    from mcp_retrieval.wire import accept_lone_surrogates

    accept_lone_surrogates()

    if args.transport == "stdio":
        server.run("stdio")
        return
    import uvicorn

    app = http_app(server, args.transport, args.host, token, args.max_sessions)
    config_u = uvicorn.Config(app, host=args.host, port=args.port, log_level=args.log_level.lower())
    anyio.run(uvicorn.Server(config_u).serve)


def serve_replica(args) -> int:
    """`serve --store`: a read-only replica of every repository published in the store."""
    from pathlib import Path

    from mcp_retrieval.indexers.memory import limit_malloc_arenas
    from mcp_retrieval.replica import Replica
    from mcp_retrieval.server import build_server

    if args.root or args.pull_from:
        raise Refused("--store serves published snapshots only; drop --root/--from")
    token = _check_exposure(args)
    limit_malloc_arenas()
    replica = Replica(args.store, Path(args.index_dir) if args.index_dir else None)
    try:
        workspace = replica.open()
    except Exception as exc:
        print(f"mcp-retrieval: {exc}", file=sys.stderr)
        return 2
    replica.start()
    try:
        _run(build_server(workspace), args, token)
    except KeyboardInterrupt:
        pass
    finally:
        replica.close()
    return 0


def serve(spec, args) -> int:
    """Serve a workspace (`roots.WorkspaceSpec`): every root indexed in the background and watched."""
    from pathlib import Path

    from mcp_retrieval.indexers.memory import limit_malloc_arenas
    from mcp_retrieval.indexers.watch import Watcher
    from mcp_retrieval.server import build_server
    from mcp_retrieval.workspace import open_workspace

    token = _check_exposure(args)
    limit_malloc_arenas()
    # flags given on the command line win over the configuration file's settings
    overrides = {"understand_timeout_s": max(0.1, args.understand_timeout)}
    if args.understand != "off":
        overrides["understand"] = args.understand
    if args.understand_budget != 20:
        overrides["understand_budget"] = args.understand_budget
    # with --from the snapshot is restored in the background (`restore_in_background`): the host's
    # handshake never waits for the store
    workspace = open_workspace(spec, index_dir=Path(args.index_dir) if args.index_dir else None, **overrides)
    watchers = []

    def start(engine) -> None:
        engine.start_background()  # lexical first, vectors behind; answers flow meanwhile
        if not args.no_watch:
            watcher = Watcher(engine.config.root, engine.sync_paths, own=engine.indexer.own_folders())
            watcher.start()
            watchers.append(watcher)

    def stop(engine) -> None:
        for watcher in [w for w in watchers if w.root == engine.config.root]:
            watcher.stop()
            watchers.remove(watcher)

    for engine in list(workspace.engines.values()):
        if args.pull_from:
            from mcp_retrieval.shared_index import restore_in_background

            restore_in_background(workspace, engine, args.pull_from, start)
        else:
            start(engine)
    workspace.on_added, workspace.on_removed = start, stop
    server = build_server(workspace)
    if spec.detected and args.transport == "stdio":  # see `client_roots`: one client, no roots given
        server.follow_client_roots(workspace)
    try:
        _run(server, args, token)
    except KeyboardInterrupt:
        pass
    finally:
        for watcher in watchers:
            watcher.stop()
        workspace.close()
    return 0
