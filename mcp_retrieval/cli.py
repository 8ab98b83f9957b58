"""`mcp-retrieval` command line: each command a few lines over the Engine.

Logs go to stderr (stdout is the stdio transport when serving).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path


log = logging.getLogger("mcp_retrieval")


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--root", action="append", default=None, metavar="[NAME=]DIR",
                   help="a workspace root, repeatable (default: .mcp-retrieval.toml's roots, else the git work tree "
                        "holding the current directory, else the current directory)")
    p.add_argument("--index-dir", default=None, help="where the index lives (default: per-root user cache)")
    p.add_argument("--log-level", default="WARNING", choices=["DEBUG", "INFO", "WARNING", "ERROR"])


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return value


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mcp-retrieval", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the MCP server (stdio by default)")
    _common(serve)
    serve.add_argument("--transport", default="stdio", choices=["stdio", "sse", "streamable-http"])
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8765)
    serve.add_argument("--no-watch", action="store_true", help="do not watch the root for changes")
    serve.add_argument("--max-sessions", type=_positive, default=500,
                       help="streamable-HTTP sessions kept at once; past it the idlest is ended (default 500)")
    serve.add_argument("--auth-token", default=None, help="bearer token (required off loopback; "
                                                          "or MCP_RETRIEVAL_AUTH_TOKEN)")
    serve.add_argument("--understand", default="off", choices=["off", "sampling"],
                       help="sampling: ask the host's model to rewrite novel queries (needs a client that offers "
                            "sampling)")
    serve.add_argument("--understand-budget", type=_non_negative, default=20, help="host model calls per day")
    serve.add_argument("--understand-timeout", type=float, default=10.0,
                       help="seconds to wait for the host's reply before using the raw query")
    index = sub.add_parser("index", help="build or update the index, then exit")
    _common(index)
    index.add_argument("--full", action="store_true")
    for p in (serve, index):
        p.add_argument("--from", dest="pull_from", default=None, metavar="s3://BUCKET/PREFIX",
                       help="an empty index first restores the nearest published snapshot (AWS_* environment)")
    serve.add_argument("--store", default=None, metavar="s3://BUCKET/PREFIX",
                       help="no local root: a read-only replica answering for every repository published there")
    publish = sub.add_parser("publish", help="upload this root's index snapshot and embeddings to object storage")
    _common(publish)
    publish.add_argument("--to", required=True, metavar="s3://BUCKET/PREFIX")
    for name in ("context", "packet"):
        p = sub.add_parser(name, help=f"the {name} tool from the shell")
        _common(p)
        p.add_argument("query")
        p.add_argument("--json", action="store_true")
        p.add_argument("--debug", action="store_true")
        if name == "context":
            p.add_argument("--budget", type=int, default=6000)
        else:
            p.add_argument("--max-items", type=int, default=12)
            p.add_argument("--task", default="explain")
    graph = sub.add_parser("graph", help="the query_graph tool from the shell")
    _common(graph)
    graph.add_argument("node")
    graph.add_argument("--relation", default="neighbors")
    graph.add_argument("--depth", type=int, default=1)
    graph.add_argument("--json", action="store_true")
    status = sub.add_parser("status", help="index freshness and size")
    _common(status)
    status.add_argument("--json", action="store_true")
    return parser


def _no_imports_from_here() -> None:
    """`python -m mcp_retrieval` run in a repository's folder (as a host may start it) puts that
    folder first on the import path, and the server imports most libraries late (LanceDB on
    opening the index): a repository's own `lancedb.py` would run. The package itself is found
    through its own path once imported."""
    here = os.path.realpath(os.getcwd())
    sys.path[:] = [p for p in sys.path if p and os.path.realpath(p) != here]


def main(argv: list[str] | None = None) -> int:
    _no_imports_from_here()
    args = build_parser().parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=args.log_level, format="%(levelname)s %(name)s: %(message)s")
    from mcp_retrieval.roots import resolve_workspace
    from mcp_retrieval.validate import BadRequest
    from mcp_retrieval.workspace import CannotOpen, open_workspace

    replica = args.command == "serve" and args.store  # serves published snapshots: no local root
    try:
        spec = None if replica else resolve_workspace(args.root)
        if spec is not None and args.index_dir and len(spec.roots) > 1:
            raise ValueError("--index-dir names one index: with several roots each keeps its own (per-root default)")
    except ValueError as exc:
        return _refused(exc)
    if args.command == "serve":
        from mcp_retrieval.serve import Refused, serve, serve_replica

        try:
            return serve_replica(args) if replica else serve(spec, args)
        except (Refused, CannotOpen) as exc:
            return _refused(exc)
    try:
        workspace = open_workspace(spec, index_dir=Path(args.index_dir) if args.index_dir else None,
                                   pull_from=getattr(args, "pull_from", None))
    except CannotOpen as exc:
        return _refused(exc)
    try:
        if args.command == "publish":
            from mcp_retrieval.shared_index import StoreError, publish

            try:
                for engine in workspace.engines.values():
                    engine.reindex(progress=_progress())  # publish what is on disk now, vectors complete
                    print(json.dumps(publish(engine, args.to), indent=1))
            except (StoreError, ValueError, OSError) as exc:
                print(f"mcp-retrieval: publish failed: {exc}", file=sys.stderr)
                return 1
        elif args.command == "index":
            result = workspace.reindex(full=args.full, progress=_progress())
            print(json.dumps(result.model_dump(mode="json"), indent=1))
        elif args.command == "status":
            status = workspace.status()
            print(status.model_dump_json(indent=1) if args.json else
                  f"{status.state}: {status.files} files, {status.chunks} chunks, "
                  f"{status.vectors_pending} vectors pending, updated {status.last_updated}"
                  + "".join(f"\nnot served: {line}" for line in status.unavailable or []))
        else:
            for engine in workspace.engines.values():
                _bring_up_to_date(engine)
            from mcp_retrieval.render import render_context, render_packet

            if args.command == "context":
                r = workspace.context(args.query, budget_tokens=args.budget, debug=args.debug)
                print(r.model_dump_json(indent=1) if args.json else render_context(r, r.window))
            elif args.command == "packet":
                r = workspace.packet(args.query, max_items=args.max_items, task=args.task, debug=args.debug)
                print(r.model_dump_json(indent=1) if args.json else render_packet(r))
            else:
                r = workspace.query_graph(args.node, relation=args.relation, depth=args.depth)
                print(r.model_dump_json(indent=1))
    except BadRequest as exc:
        return _refused(exc)
    finally:
        workspace.close()
    return 0


def _refused(exc: Exception) -> int:
    """What the shell is told when a command cannot run as asked: one line on stderr, status 2."""
    print(f"mcp-retrieval: {exc}", file=sys.stderr)
    return 2


def _bring_up_to_date(engine) -> None:
    """Before a question from the shell (no watcher runs): an empty index is built whole, vectors
    too, with a progress bar; otherwise the files changed since the last run are indexed again,
    lexically with the history (`Engine.sync_lexical`: a walk and a stat per file, about a second
    on babel's 27,575 files when none changed), and their vectors are left pending, as `index`
    reports. A server writing the same index keeps it current: then the question is answered from
    the index as it stands."""
    import sqlite3

    from mcp_retrieval.indexers.locks import IndexBusy

    if engine.store.counts()["files"] == 0:
        engine.reindex(progress=_progress())
        return
    try:
        engine.sync_lexical(None)
    except IndexBusy:
        log.info("another process is writing the index: answering from it as it stands")
    except (OSError, sqlite3.Error) as exc:  # a read-only or full disk: the index as it stands still answers
        log.warning("the index could not be brought up to date (%s): answering from it as it stands", exc)


def _progress():
    """A rich progress bar on a terminal (stderr); silent otherwise."""
    if not sys.stderr.isatty() or os.environ.get("CI"):
        return None
    from rich.progress import Progress

    bar = Progress(transient=True)
    bar.start()
    tasks: dict[str, int] = {}

    def update(phase: str, done: int, total: int) -> None:
        if phase not in tasks:
            tasks[phase] = bar.add_task(phase, total=total)
        bar.update(tasks[phase], completed=done, total=total)
        if all(t.finished for t in bar.tasks) and phase == "vectors":
            bar.stop()

    return update
