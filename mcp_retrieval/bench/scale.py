"""Scale benchmark: cold index time by phase, chunks/s, peak RSS, first lexical answer, warm
latencies, one-file incremental update — next to the physical floor of the parts.

    python -m mcp_retrieval.bench scale --root /path/to/work/tree [--queries FILE] [--no-dense | --embedder static]

Starts from an empty index and an empty embedding cache (both in a temporary folder unless
given), so every figure is a cold one but `restarted`: a new process started on the finished
index, as a server is in a new session, its resident memory idle and answering. Prints a JSON
report.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import psutil

from mcp_retrieval.bench import speed_probe
from mcp_retrieval.indexers.store import PRIORITY_LAST
from mcp_retrieval.config import Config
from mcp_retrieval.indexers.memory import limit_malloc_arenas
from mcp_retrieval.indexers.prepare import pool_workers
from mcp_retrieval.engine import Engine
from mcp_retrieval.workspace import Workspace


class PeakRSS:
    """This process's peak resident memory over a `with` block, in MiB (`peak`). On Linux it is
    the kernel's high-water mark (VmHWM, reset through /proc/self/clear_refs at entry): exact,
    and no sampling thread shares the interpreter with the work measured. Elsewhere a thread
    samples every 50 ms."""

    _STATUS = Path("/proc/self/status")

    def __init__(self) -> None:
        self.peak = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _run(self) -> None:
        proc = psutil.Process()
        while not self._stop.is_set():
            self.peak = max(self.peak, proc.memory_info().rss / 2**20)
            time.sleep(0.05)

    def _high_water_mib(self) -> float | None:
        try:
            line = next(l for l in self._STATUS.read_text().splitlines() if l.startswith("VmHWM:"))
        except (OSError, StopIteration):
            return None
        return int(line.split()[1]) / 1024

    def __enter__(self) -> "PeakRSS":
        try:
            Path("/proc/self/clear_refs").write_text("5")  # reset the high-water mark to the current RSS
            if self._high_water_mib() is not None:
                return self
        except OSError:
            pass
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._thread is None:
            self.peak = self._high_water_mib() or 0.0
            return
        self._stop.set()
        self._thread.join()


class TreeRSS:
    """The peak resident memory of this process and its children (the sync's worker processes,
    `indexers.prepare`) together, and of the children alone, sampled every 100 ms by a thread
    (`peak`, `children_peak`, MiB). Not the kernel's figure for children: a child forked from a
    big parent carries the parent's high-water mark past exec."""

    def __init__(self) -> None:
        self.peak = self.children_peak = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        me = psutil.Process()
        while not self._stop.is_set():
            children = 0
            for child in me.children():
                try:
                    children += child.memory_info().rss
                except psutil.Error:  # ended between the listing and the reading
                    pass
            self.children_peak = max(self.children_peak, children / 2**20)
            self.peak = max(self.peak, (me.memory_info().rss + children) / 2**20)
            time.sleep(0.1)

    def __enter__(self) -> "TreeRSS":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def percentiles(values: list[float]) -> dict[str, float]:
    v = sorted(values)
    return {"p50": round(statistics.median(v), 1), "p95": round(v[min(len(v) - 1, int(0.95 * (len(v) - 1) + 0.5))], 1),
            "n": len(v)}


def default_queries(query, n: int = 30) -> list[str]:
    """Half identifier look-ups, half docstring sentences, drawn deterministically from the index.
    `query(sql)` returns rows of the index database (`Store.query` or an sqlite3 connection's)."""
    rng = random.Random(7)
    names = [r[0] for r in query("SELECT DISTINCT name FROM symbols WHERE kind != 'file' AND "
                                              "length(name) > 6 ORDER BY name")]
    docs = [r[0] for r in query("SELECT text FROM chunks WHERE kind IN ('function','method') "
                                             "AND text LIKE '%\"\"\"%' ORDER BY id LIMIT 2000")]
    sentences = []
    for text in docs:
        after = text.split('"""', 1)[1].strip().split("\n", 1)[0].strip()
        if 20 < len(after) < 160:
            sentences.append(after)
    return rng.sample(names, min(n // 2, len(names))) + rng.sample(sentences, min(n - n // 2, len(sentences)))


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m mcp_retrieval.bench scale")
    ap.add_argument("--root", required=True)
    ap.add_argument("--work", default=None, help="folder for the cold index and cache (default: temporary)")
    ap.add_argument("--queries", default=None, help="one question per line (default: drawn from the index)")
    ap.add_argument("--no-dense", action="store_true")
    ap.add_argument("--embedder", choices=("static", "minilm"), default="static", help="the dense tier's model")
    ap.add_argument("--cache-dir", default=None, help="reuse this embedding cache (index still cold)")
    ap.add_argument("--code-only", action="store_true", help="embed source chunks only (tests, prose pending)")
    ap.add_argument("--restarted", action="store_true",
                    help="(internal) only the restarted phase, on the index --work holds, --queries asked")
    args = ap.parse_args(argv)
    limit_malloc_arenas()  # as `serve` does before its threads start: the server's memory, not a script's
    work = Path(args.work or tempfile.mkdtemp(prefix="mcp-retrieval-scale-"))
    cfg = Config.resolve(args.root, work / "index", persist_sessions=False,
                         embedder="none" if args.no_dense else args.embedder)
    cfg.cache_dir = Path(args.cache_dir) if args.cache_dir else work / "cache"
    if args.restarted:
        print(json.dumps(_restarted(cfg, Path(args.queries).read_text().splitlines())))
        return 0
    report: dict = {"root": str(cfg.root), "embedder": cfg.embedder, "warm_embedding_cache": bool(args.cache_dir), "code_only": args.code_only, "cpus": psutil.cpu_count(), "ram_gib": round(psutil.virtual_memory().total / 2**30),
                    "speed_probe_ms": {"start": speed_probe()}}
    with PeakRSS() as rss_index, TreeRSS() as rss_tree:
        engine = Engine(cfg)
        t0 = time.perf_counter()
        sync = engine.indexer.sync()
        lexical_s = time.perf_counter() - t0
        first = Workspace.single(engine).context("where is the main entry point configured")
        report["first_lexical_answer_s"] = round(time.perf_counter() - t0, 1)
        report["first_answer_state"] = first.index.state if first.index else "ready"  # absent: settled
        t1 = time.perf_counter()
        embedded, reused = engine.indexer.embed_pending(max_priority=0 if args.code_only else PRIORITY_LAST)
        embed_s = time.perf_counter() - t1
    counts = engine.store.counts()
    report["index"] = {"files": counts["files"], "chunks": counts["chunks"], "symbols": counts["symbols"],
                       "edges": engine.store.edge_count(), "lexical_phase_s": round(lexical_s, 1),
                       "phases_ms": {k: round(v) for k, v in sync.timings_ms.items()},
                       "embed_s": round(embed_s, 1), "embedded": embedded, "reused": reused,
                       "embed_chunks_per_s": round(embedded / embed_s, 1) if embedded else None,
                       # made by the sync's worker processes beside the parsing (the static model)
                       "embedded_in_sync": sync.chunks_embedded,
                       "total_s": round(lexical_s + embed_s, 1), "peak_rss_mib": round(rss_index.peak),
                       "workers": pool_workers(sync.files_changed), "workers_peak_rss_mib": round(rss_tree.children_peak),
                       "peak_rss_with_workers_mib": round(rss_tree.peak)}
    t = time.perf_counter()
    engine.graph(wait=True)
    report["index"]["graph_load_s"] = round(time.perf_counter() - t, 2)
    queries = (Path(args.queries).read_text().splitlines() if args.queries else default_queries(engine.store.query))
    queries = [q for q in queries if q.strip()]
    with PeakRSS() as rss_serve:
        for q in queries[:3]:  # warm caches (graph load, model session)
            Workspace.single(engine).packet(q)
        lat_packet, lat_context = [], []
        for q in queries:
            t = time.perf_counter()
            Workspace.single(engine).packet(q)
            lat_packet.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            Workspace.single(engine).context(q)
            lat_context.append((time.perf_counter() - t) * 1000)
    report["latency_ms"] = {"packet": percentiles(lat_packet), "context": percentiles(lat_context),
                            "serving_peak_rss_mib": round(rss_serve.peak)}
    report["incremental_one_file_ms"] = _one_file_update(engine, 0 if args.code_only else 2)
    fresh = [q for q in default_queries(engine.store.query, n=80) if q not in set(queries)]  # not asked yet
    report["after_a_save_ms"] = _after_saves(engine, fresh, 0 if args.code_only else 2)
    report["floor"] = _floor(engine, queries)
    engine.close()
    report["speed_probe_ms"]["end"] = speed_probe()
    report["restarted"] = _restarted_process(args, work, queries)
    print(json.dumps(report, indent=1))
    return 0


def _restarted_process(args, work: Path, queries: list[str]) -> dict:
    """The restarted phase in a process of its own: what a server started again on this index (a
    new session's, the usual start) holds, without the indexing's memory in its arenas."""
    listed = work / "restarted-queries.txt"
    listed.write_text("\n".join(queries))
    command = [sys.executable, "-m", "mcp_retrieval.bench", "scale", "--root", args.root, "--work", str(work),
               "--queries", str(listed), "--restarted", "--embedder", args.embedder]
    if args.no_dense:
        command.append("--no-dense")
    if args.cache_dir:
        command += ["--cache-dir", args.cache_dir]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1:] or ["exit " + str(done.returncode)]}
    return json.loads(done.stdout)


def _restarted(cfg: Config, queries: list[str]) -> dict:
    """A server's start on a complete index, as `serve` warms it (the sync finds nothing to do; the
    graph, path resolver and vector mirror loaded), then every question asked once: resident
    memory idle after the start and at its peak while answering."""
    with PeakRSS() as rss:
        engine = Engine(cfg)
        engine.indexer.sync()
        engine.graph(wait=True)
        engine.retriever.warm()
        idle = psutil.Process().memory_info().rss / 2**20
        for q in queries:
            Workspace.single(engine).packet(q)
            Workspace.single(engine).context(q)
        engine.close()
    return {"idle_rss_mib": round(idle), "peak_rss_mib": round(rss.peak), "questions": len(queries)}


def _probe_file(engine: Engine) -> tuple[str, Path]:
    """A file to save (a Python one when there is one): any language, since a blank line changes
    the file's hash, which is what sync reads."""
    paths = engine.store.all_paths()
    path = next((p for p in paths if p.endswith(".py")), paths[0])
    return path, engine.config.root / path


def _save(engine: Engine, path: str, data: bytes, max_priority: int) -> None:
    """Write the file and bring the index up to date as the watcher does: by its path, then vectors."""
    (engine.config.root / path).write_bytes(data)
    engine.indexer.sync([path])
    engine.indexer.embed_pending(max_priority=max_priority)


def _ms(call) -> float:
    t = time.perf_counter()
    call()
    return (time.perf_counter() - t) * 1000


def _one_file_update(engine: Engine, max_priority: int) -> float:
    path, target = _probe_file(engine)
    original = target.read_bytes()
    try:
        return round(_ms(lambda: _save(engine, path, original + b"\n\n", max_priority)), 1)
    finally:
        target.write_bytes(original)
        engine.indexer.sync([path])


def _after_saves(engine: Engine, queries: list[str], max_priority: int, rounds: int = 5) -> dict:
    """The first `packet` and `context` after each of `rounds` saves (a file synced by its path,
    its vectors made, as the watcher does), each a question not asked before: what an agent that
    edits and then asks waits for (the code graph reloads behind, BENCHMARKS 55g-h)."""
    path, target = _probe_file(engine)
    original = target.read_bytes()
    workspace = Workspace.single(engine)
    times: dict[str, list[float]] = {"packet": [], "context": []}
    try:
        for n, (q1, q2) in enumerate(zip(queries[0::2], queries[1::2])):
            if n == rounds:
                break
            engine.graph(wait=True)  # the previous round's reload done: each round starts alike
            for tool, question, blank_lines in (("packet", q1, n + 1), ("context", q2, n + 20)):
                _save(engine, path, original + b"\n" * blank_lines, max_priority)
                times[tool].append(_ms(lambda: getattr(workspace, tool)(question)))
    finally:
        target.write_bytes(original)
        engine.indexer.sync([path])
    return {tool: percentiles(t) if t else None for tool, t in times.items()}


def _floor(engine: Engine, queries: list[str]) -> dict:
    """What the parts can do on their own, on the same data."""
    out: dict = {}
    lex = engine.indexer.lexical
    times = []
    for q in queries:
        t = time.perf_counter()
        lex.search(q, 60)
        times.append((time.perf_counter() - t) * 1000)
    out["tantivy_query_ms"] = percentiles(times)
    if engine.embedder is not None and engine.indexer.vectors is not None:
        sample = [c.header + "\n" + c.text for c in
                  engine.store.chunks_by_id([r[0] for r in engine.store.query("SELECT id FROM chunks LIMIT 200")]).values()]
        t = time.perf_counter()
        engine.embedder.embed(sample)
        out["fastembed_chunks_per_s"] = round(len(sample) / (time.perf_counter() - t), 1)
        vec = engine.embedder.embed([queries[0]])[0]
        times = []
        for _ in range(20):
            t = time.perf_counter()
            engine.indexer.vectors.search(np.asarray(vec), 60)
            times.append((time.perf_counter() - t) * 1000)
        out["lancedb_query_ms"] = percentiles(times)
    return out
