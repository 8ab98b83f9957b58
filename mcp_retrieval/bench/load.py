"""Concurrent clients against a streamable-HTTP server on loopback (bounded in count and time).

    python -m mcp_retrieval.bench load --root /path/to/repo [--clients 8] [--calls 12]

Starts `mcp-retrieval serve --transport streamable-http` on a free loopback port, waits for the
index, then runs the clients concurrently; reports errors and context latency p50/p95.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import anyio

QUESTIONS = ["where is the session configured", "how are errors raised on bad responses", "timeout handling",
             "how are headers merged", "what parses the url", "cookie handling on redirects",
             "authentication header", "retry policy", "how is the response body decoded", "proxy configuration",
             "default settings", "connection pooling"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def _client(url: str, n: int, calls: int, latencies: list[float], errors: list[str]) -> None:
    from mcp import Client

    async with Client(url) as client:
        for i in range(calls):
            q = QUESTIONS[(n + i) % len(QUESTIONS)]
            t = time.perf_counter()
            r = await client.call_tool("context", {"query": q, "session_id": f"client-{n}"})
            latencies.append((time.perf_counter() - t) * 1000)
            if r.is_error:
                errors.append(r.content[0].text[:200])


async def _run(url: str, clients: int, calls: int) -> dict:
    from mcp import Client

    async with Client(url) as c:  # wait until the background index has vectors or a deadline passes
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            r = await c.call_tool("reindex", {"wait": True})
            if r.structured_content["index"]["vectors_pending"] == 0:
                break
    latencies: list[float] = []
    errors: list[str] = []
    t0 = time.perf_counter()
    with anyio.fail_after(600):
        async with anyio.create_task_group() as tg:
            for n in range(clients):
                tg.start_soon(_client, url, n, calls, latencies, errors)
    wall = time.perf_counter() - t0
    lat = sorted(latencies)
    return {"clients": clients, "calls": len(lat), "errors": len(errors), "error_samples": errors[:3],
            "p50_ms": round(statistics.median(lat), 1), "p95_ms": round(lat[int(0.95 * (len(lat) - 1) + 0.5)], 1),
            "wall_s": round(wall, 1), "calls_per_s": round(len(lat) / wall, 1)}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m mcp_retrieval.bench load")
    ap.add_argument("--root", required=True)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--calls", type=int, default=12)
    ap.add_argument("--index-dir", default=None)
    args = ap.parse_args(argv)
    port = _free_port()
    index_dir = args.index_dir or tempfile.mkdtemp(prefix="mcp-retrieval-load-")
    proc = subprocess.Popen([sys.executable, "-m", "mcp_retrieval", "serve", "--root", args.root, "--index-dir",
                             index_dir, "--no-watch", "--transport", "streamable-http", "--port", str(port)],
                            env=dict(os.environ), stderr=subprocess.DEVNULL)
    try:
        for _ in range(300):
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.2)
        result = anyio.run(_run, f"http://127.0.0.1:{port}/mcp", args.clients, args.calls)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    print(json.dumps(result, indent=1))
    return 0 if result["errors"] == 0 else 1
