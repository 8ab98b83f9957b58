"""What a second root costs: `packet` and `context` latency over two roots against each alone,
and whether questions about either root still find their file first.

    python -m mcp_retrieval.bench roots --root requests=/path/to/requests --root flask=/path/to/flask \\
        [--questions FILE.jsonl] [--repeat 3] [--work DIR]

Questions: JSON lines `{"root": NAME, "query": ..., "path": expected file}`; without a file, a
built-in set for psf/requests and pallets/flask is used. Each question is timed over both roots
and over its own root alone; "<root>" rows are that root's own questions. Lexical-only (no vectors), so the
figure is the retrieval path, not embedding.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from mcp_retrieval.bench import read_rows
from mcp_retrieval.roots import resolve_workspace
from mcp_retrieval.workspace import open_workspace

DEFAULT_QUESTIONS = [
    {"root": "requests", "query": "how are proxies chosen from the environment for a request",
     "path": "src/requests/utils.py"},
    {"root": "requests", "query": "Session.send follows redirects with resolve_redirects", "path": "src/requests/sessions.py"},
    {"root": "requests", "query": "where is the Authorization header stripped on redirect to another host",
     "path": "src/requests/sessions.py"},
    {"root": "flask", "query": "register a blueprint on the application with url_prefix", "path": "src/flask/blueprints.py"},
    {"root": "flask", "query": "where does the app context push and pop happen", "path": "src/flask/ctx.py"},
    {"root": "flask", "query": "send_file and send_from_directory helpers", "path": "src/flask/helpers.py"},
]


def timed(fn, *args, **kwargs) -> tuple[object, float]:
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, (time.perf_counter() - t0) * 1000


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m mcp_retrieval.bench roots")
    ap.add_argument("--root", action="append", required=True, help="NAME=DIR (two of them)")
    ap.add_argument("--questions", default=None)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--work", default="/tmp/mcp-retrieval-roots")
    args = ap.parse_args(argv)
    questions = read_rows(args.questions) if args.questions else DEFAULT_QUESTIONS
    spec = resolve_workspace(args.root)
    import os

    os.environ.setdefault("MCP_RETRIEVAL_CACHE_DIR", str(Path(args.work) / "cache"))
    ws = open_workspace(spec, embedder=None, persist_sessions=False)
    try:
        ws.reindex()
        for engine in ws.engines.values():
            engine.graph(wait=True)
        lat: dict[str, list[float]] = {}
        hits = {"both": 0, "alone": 0}
        for _ in range(args.repeat):
            for q in questions:
                # each question over both roots, and over its own root alone (what a user with that
                # one root would ask; asking a root about the other's code only times a quick miss)
                for key, scope in (("both", None), (q["root"], [q["root"]])):
                    r, ms = timed(ws.packet, q["query"], max_items=12, roots=scope)
                    lat.setdefault(f"packet {key}", []).append(ms)
                    _, ms = timed(ws.context, q["query"], budget_tokens=4000, roots=scope)
                    lat.setdefault(f"context {key}", []).append(ms)
                    if r.items and (r.items[0].root, r.items[0].path) == (q["root"], q["path"]):
                        hits["both" if scope is None else "alone"] += 1
        n = len(questions) * args.repeat
        print(f"questions: {len(questions)} x {args.repeat}; right root and file first: two roots "
              f"{hits['both']}/{n}, its root alone {hits['alone']}/{n}\n")
        print("| call | p50 ms | p95 ms |\n|---|---|---|")
        p50 = {}
        for key, values in sorted(lat.items()):
            values.sort()
            p50[key] = statistics.median(values)
            print(f"| {key} | {p50[key]:.0f} | {values[int(0.95 * (len(values) - 1))]:.0f} |")
        for call in ("packet", "context"):
            slower = max(v for k, v in p50.items() if k.startswith(call + " ") and k != f"{call} both")
            print(f"{call}: both roots at {p50[f'{call} both'] / slower:.2f}x the slower root alone (p50)")
    finally:
        ws.close()
    return 0
