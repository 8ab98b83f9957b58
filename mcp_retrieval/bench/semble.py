"""The peer benchmark of everyday questions: semble's code-search annotations, semble's metric.

    python -m mcp_retrieval.bench semble --data ../shared/eval/semble_dev \\
        --mirrors /work/.mirror --work /tmp/semble-work [--vectors [--embedder minilm|static]] [--only chi,click] \\
        [--tool packet|context] [--out rows.jsonl]

Each repository of `repos.json` is put at its pinned revision from its git directory under
`--mirrors` (`owner+name/repo`, as the fetch tool lays them out; when the pinned revision is not
in the snapshot, the snapshot's HEAD is used and the table says so; `--tree NAME=DIR` indexes a
folder instead, such as a release's sources when a snapshot is too large to fetch), only its `benchmark_root`
subtree is indexed (the annotations' paths are relative to it), and each query is asked of
`packet` for ten items (`--tool context`: a 6,000-token `context` window, its chunks in the order
it shows them: how the window an agent reads ranks the same answers). Scored with semble's
NDCG@10 (`ndcg10`; the folder's README): a target is found at the first item whose path matches
it (equal, or one ends with the other) and whose lines overlap its span when it has one; targets found at the same rank count once; the ideal list has
min(10, targets) hits. Per repository the mean over its queries; per language and overall the mean
over repositories; by category the mean over repositories of per-repository category means.
Printed beside semble's published figures (`published.json`), with the share of `miss` answers.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from mcp_retrieval.bench.commits import mirror_git_dir
from mcp_retrieval.workspace import Workspace

K = 10
CONTEXT_BUDGET = 6000  # `--tool context`: the window an agent asks for by default


def _targets(q: dict) -> list[tuple[str, int | None, int | None]]:
    out = []
    for t in [*q.get("relevant", []), *q.get("secondary", [])]:
        if isinstance(t, str):
            out.append((t, None, None))
        else:
            out.append((t["path"], t.get("start_line"), t.get("end_line")))
    return out


def _path_matches(a: str, b: str) -> bool:
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def ndcg10(results: list[tuple[str, int, int]], targets: list[tuple[str, int | None, int | None]]) -> float:
    """semble's NDCG@10: `results` are (path, start, end) in rank order."""
    if not targets:
        return 0.0
    found_ranks = set()
    for path, start, end in targets:
        for rank, (rpath, rstart, rend) in enumerate(results[:K], 1):
            if not _path_matches(rpath, path):
                continue
            if start is not None and end is not None and (rend < start or rstart > end):
                continue
            found_ranks.add(rank)
            break
    dcg = sum(1.0 / math.log2(r + 1) for r in found_ranks)
    ideal = sum(1.0 / math.log2(r + 1) for r in range(1, min(K, len(targets)) + 1))
    return dcg / ideal


def _open_repo(repo: dict, mirrors: Path, work: Path, vectors: bool, embedder: str = "static",
               tree: Path | None = None):
    from mcp_retrieval.bench.checkout import checkout
    from mcp_retrieval.config import Config
    from mcp_retrieval.engine import Engine
    from mcp_retrieval.indexers.listing import rev_parse
    from mcp_retrieval.indexers.store import PRIORITY_LAST

    git_dir = mirror_git_dir(mirrors, repo["url"].split("github.com/")[1].removesuffix(".git"))
    if tree is not None:
        note = f"tree {tree}, not the pinned revision"
    elif not git_dir.is_dir():
        return None, "no snapshot"
    else:
        revision, note = repo["revision"], ""
        if rev_parse(git_dir, f"{revision}^{{commit}}") is None:
            revision, note = "HEAD", "pinned revision not in the snapshot: HEAD used"
        tree = work / "trees" / repo["name"]
        checkout(git_dir, revision, tree)
    root = tree / repo["benchmark_root"] if repo.get("benchmark_root") else tree
    embedder = embedder if vectors else "none"
    folder = {"none": "index", "minilm": "index-vec"}.get(embedder, f"index-{embedder}")
    cfg = Config.resolve(root, work / folder / repo["name"], persist_sessions=False, embedder=embedder)
    cfg.cache_dir = work / "cache"
    engine = Engine(cfg)
    t0 = time.perf_counter()
    engine.indexer.sync()
    engine.indexer.embed_pending(max_priority=PRIORITY_LAST)
    engine.graph(wait=True)
    return (engine, time.perf_counter() - t0), note


def _ranked(workspace: Workspace, query: str, tool: str) -> tuple[list[tuple[str, int, int]], bool]:
    """(path, start, end) in rank order, and whether the answer was a miss: `packet`'s items, or
    the chunks of a `context` window of CONTEXT_BUDGET tokens in the order it shows them."""
    if tool == "packet":
        packet = workspace.packet(query, max_items=K)
        return [(i.path, i.start_line, i.end_line) for i in packet.items], packet.know is None
    window = workspace.context(query, budget_tokens=CONTEXT_BUDGET)
    return [(c.path, c.start_line, c.end_line) for c in window.chunks], window.know is None


def run_repo(repo: dict, queries: list[dict], mirrors: Path, work: Path, vectors: bool,
             embedder: str = "static", tree: Path | None = None, tool: str = "packet") -> dict:
    opened, note = _open_repo(repo, mirrors, work, vectors, embedder, tree)
    if opened is None:
        return {"name": repo["name"], "language": repo["language"], "skipped": note}
    engine, index_s = opened
    rows = []
    try:
        for q in queries:
            t0 = time.perf_counter()
            results, miss = _ranked(Workspace.single(engine), q["query"], tool)
            ms = (time.perf_counter() - t0) * 1000
            rows.append({"query": q["query"], "category": q["category"], "ndcg10": ndcg10(results, _targets(q)),
                         "miss": miss, "ms": ms, "files": list(dict.fromkeys(r[0] for r in results)),
                         "items": results})
    finally:
        engine.close()
    return {"name": repo["name"], "language": repo["language"], "note": note, "index_s": index_s, "rows": rows}


def summarise(repos: list[dict], published: dict) -> str:
    done = [r for r in repos if "rows" in r]
    lines = ["| repository | language | n | NDCG@10 | semble | miss | p50 ms | note |", "|---|---|---|---|---|---|---|---|"]
    for r in done:
        n = statistics.mean(x["ndcg10"] for x in r["rows"])
        r["ndcg10"] = n
        peer = published.get("repos", {}).get(r["name"], {}).get("semble", {}).get("ndcg10")
        r["semble"] = peer
        lines.append(f"| {r['name']} | {r['language']} | {len(r['rows'])} | {n:.3f} | "
                     f"{'' if peer is None else f'{peer:.3f}'} | {sum(x['miss'] for x in r['rows'])} | "
                     f"{statistics.median(x['ms'] for x in r['rows']):.0f} | {r.get('note', '')} |")
    for r in repos:
        if "skipped" in r:
            lines.append(f"| {r['name']} | {r['language']} | 0 | | | | | skipped: {r['skipped']} |")
    if not done:
        return "\n".join(lines)
    ours = statistics.mean(r["ndcg10"] for r in done)
    peers = [r["semble"] for r in done if r["semble"] is not None]
    n_q = sum(len(r["rows"]) for r in done)
    misses = sum(x["miss"] for r in done for x in r["rows"])
    peer_mean = f"{statistics.mean(peers):.3f}" if peers else "not published"
    lines.append(f"\n**Overall** (mean over {len(done)} repositories, {n_q} queries): NDCG@10 {ours:.3f}; "
                 f"semble on the same repositories {peer_mean}; miss {misses}/{n_q} ({misses / n_q:.1%})")
    by_cat = defaultdict(list)
    for r in done:
        cats = defaultdict(list)
        for x in r["rows"]:
            cats[x["category"]].append(x["ndcg10"])
        for c, v in cats.items():
            by_cat[c].append(statistics.mean(v))
    lines.append("By category: " + ", ".join(f"{c} {statistics.mean(v):.3f}" for c, v in sorted(by_cat.items())))
    by_lang = defaultdict(list)
    for r in done:
        by_lang[r["language"]].append((r["ndcg10"], r["semble"]))
    lines.append("By language: " + ", ".join(
        f"{lang} {statistics.mean(a for a, _ in v):.2f} ({statistics.mean(b for _, b in v if b is not None):.2f})"
        for lang, v in sorted(by_lang.items()) if any(b is not None for _, b in v)))
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m mcp_retrieval.bench semble")
    ap.add_argument("--data", default="../shared/eval/semble_dev")
    ap.add_argument("--mirrors", default="/work/.mirror", help="folder of owner+name/repo git directories")
    ap.add_argument("--work", default="/tmp/mcp-retrieval-semble")
    ap.add_argument("--vectors", action="store_true", help="with the dense tier (embeds every chunk first)")
    ap.add_argument("--embedder", default="static", choices=["static", "minilm"], help="the dense tier's model")
    ap.add_argument("--only", default=None, help="comma-separated repository names")
    ap.add_argument("--out", default=None, help="per-query results as JSON lines")
    ap.add_argument("--tree", action="append", default=[], metavar="NAME=DIR",
                    help="index DIR (the repository's top folder) for NAME instead of its snapshot, "
                         "e.g. a release's sources when the snapshot is too large to fetch")
    ap.add_argument("--tool", default="packet", choices=["packet", "context"],
                    help="rank by packet's items, or by the chunks of a 6,000-token context window in its order")
    args = ap.parse_args(argv)
    trees = dict(t.split("=", 1) for t in args.tree)
    data = Path(args.data)
    repos = json.loads((data / "repos.json").read_text())
    if args.only:
        wanted = set(args.only.split(","))
        repos = [r for r in repos if r["name"] in wanted]
    published = json.loads((data / "published.json").read_text())
    results = []
    for repo in repos:
        queries = json.loads((data / "annotations" / f"{repo['name']}.json").read_text())
        tree = Path(trees[repo["name"]]) if repo["name"] in trees else None
        result = run_repo(repo, queries, Path(args.mirrors), Path(args.work), args.vectors, args.embedder, tree,
                          args.tool)
        results.append(result)
        if "rows" in result:
            print(f"{repo['name']}: {statistics.mean(x['ndcg10'] for x in result['rows']):.3f} "
                  f"(indexed in {result['index_s']:.1f} s)", file=sys.stderr)
    if args.out:
        with open(args.out, "w") as fh:
            for r in results:
                for x in r.get("rows", []):
                    fh.write(json.dumps({"repo": r["name"], "language": r["language"], **x}) + "\n")
    print(summarise(results, published))
    return 0
