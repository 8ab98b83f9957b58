"""SWE-bench localisation benchmark: does `packet`, given the raw issue text, put the files the
real fix touched first?

    python -m mcp_retrieval.bench swebench --instances ../shared/eval/swebench_dev.jsonl \\
        --repo psf/requests=/path/to/requests.git --repo pallets/flask=/path/to/flask.git ... \\
        --work /tmp/swebench-work [--modes bm25_file,lexical,dense,rrf,rerank,full] [--no-dense | --embedder minilm]

For each instance the repository is put at `base_commit` (incrementally), the index is updated
incrementally, and each mode ranks files; a whole-file BM25 baseline is computed in the same run.
Modes: `lexical` (chunk BM25 only), `dense` (vectors only), `rrf` (both, fused), `anchors` (+ path
and symbol anchors), `rerank` (+ the structural reranker), `full` (+ the history tier and graph fusion:
the default); `nodecomp` is `rerank` without the deterministic decompose stage, `nohistory` is
`full` without the history tier, `nomessage` is `full` without the quoted-message tier and
`nocode` is `full` without the quoted-source tier (none of them in the default set). The history is read from the git
directory given for the repository, at the instance's base commit: nothing later is visible.
Reports file Acc@1/3/5/10 (all gold files within k), Recall@k, MRR, function-level hits and
packet latency per mode, as a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

from mcp_retrieval.bench import read_rows, select_rows
from mcp_retrieval.bench.checkout import opened_instances
from mcp_retrieval.bench.filebm25 import FileBM25
from mcp_retrieval.config import Config
from mcp_retrieval.engine import Engine
from mcp_retrieval.rerank import IdentityReranker, StructuralReranker
from mcp_retrieval.workspace import Workspace

KS = (1, 3, 5, 10)
ALL_MODES = ("bm25_file", "lexical", "dense", "rrf", "anchors", "rerank", "full")
# rerank without decompose; full without the history tier; full without the quoted-message tier;
# full without the dense tier;
# graphpacket: full with the graph stage in packet;
# title / title_turns: full asked only the first line, without / with the rest as `recent_turns`
EXTRA_MODES = ("nodecomp", "nohistory", "nomessage", "nocode", "nodense", "graphpacket", "title", "title_turns")


DENSE_TIERS = ("dense", "dense_title")  # the tiers that read vectors


def mode_settings(mode: str, base: dict[str, float]) -> tuple[dict[str, float], bool, bool]:
    """(tier weights, graph on, structural rerank on) for an ablation mode, from the served weights
    `base` (every tier the server has, so a new tier is never left out of `full`); in the
    single-source modes every tier not named is off."""
    only = {"lexical": ("lexical",), "dense": DENSE_TIERS, "rrf": ("lexical", *DENSE_TIERS)}.get(mode)
    if only is not None:
        return {t: (w if t in only else 0.0) for t, w in base.items()}, False, False
    weights = dict(base)
    if mode == "anchors":
        return {**weights, "history": 0.0}, False, False
    if mode in ("rerank", "nodecomp"):
        return {**weights, "history": 0.0}, False, True
    if mode == "nohistory":
        return {**weights, "history": 0.0}, True, True
    if mode == "nomessage":
        return {**weights, "message": 0.0}, True, True
    if mode == "nocode":
        return {**weights, "code": 0.0}, True, True
    if mode == "nodense":
        return {**weights, **dict.fromkeys(DENSE_TIERS, 0.0)}, True, True
    return weights, True, True  # full


def as_conversation(statement: str) -> tuple[str, list[str]]:
    """An issue as a short question and the conversation before it: the first line is the question,
    the rest (up to 5,000 characters) five earlier messages of at most 1,000 characters."""
    title, _, body = statement.strip().partition("\n")
    body = body.strip()[:5000]
    return title.strip() or statement[:200], [body[i:i + 1000] for i in range(0, len(body), 1000)]


def packet_items(engine: Engine, query: str, recent_turns: list[str] | None = None) -> tuple[list, float]:
    """`packet`'s 50 items for `query`, and the milliseconds it took."""
    t0 = time.perf_counter()
    packet = Workspace.single(engine).packet(query, max_items=50, recent_turns=recent_turns)
    return packet.items, (time.perf_counter() - t0) * 1000


def rank_files(engine: Engine, query: str, recent_turns: list[str] | None = None) -> tuple[list[str], list[str], float]:
    items, ms = packet_items(engine, query, recent_turns)
    files = list(dict.fromkeys(i.path for i in items))
    symbols = [f"{i.path}::{i.symbol}" for i in items[:10] if i.symbol]
    return files, symbols, ms


def gold_files(row: dict) -> list[str]:
    """Files scored as gold: `gold_code_files` (multilingual file: source files the fix changed that
    exist at the base commit) when present, else `gold_files` (the Python file)."""
    return list(row["gold_code_files"] if "gold_code_files" in row else row["gold_files"])


def score(files: list[str], gold: list[str]) -> dict[str, float]:
    out = {}
    for k in KS:
        top = set(files[:k])
        out[f"acc@{k}"] = float(all(g in top for g in gold))
        out[f"recall@{k}"] = sum(g in top for g in gold) / len(gold)
    ranks = [files.index(g) + 1 for g in gold if g in files]
    out["mrr"] = 1.0 / min(ranks) if ranks else 0.0
    return out


def function_hits(symbols: list[str], spans: dict[str, list[str]]) -> float:
    wanted = [(path, name) for path, names in spans.items() for name in names]
    if not wanted:
        return float("nan")
    found = 0
    for path, name in wanted:
        for s in symbols:
            spath, _, sym = s.partition("::")
            if spath == path and (sym == name or name.startswith(sym + ".") or sym.startswith(name + ".")):
                found += 1
                break
    return found / len(wanted)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m mcp_retrieval.bench swebench")
    ap.add_argument("--instances", required=True)
    ap.add_argument("--repo", action="append", default=[], help="owner/name=/path/to/git/dir (repeatable)")
    ap.add_argument("--work", default="/tmp/mcp-retrieval-swebench")
    ap.add_argument("--modes", default=",".join(ALL_MODES))
    ap.add_argument("--no-dense", action="store_true", help="lexical + anchors + graph only (fast)")
    ap.add_argument("--embedder", choices=("static", "minilm"), default="static", help="the dense tier's model")
    ap.add_argument("--dense-code-only", action="store_true",
                    help="embed only non-test source chunks (vectors for tests and prose left pending)")
    ap.add_argument("--only", default=None, help="comma-separated repos to run")
    ap.add_argument("--per-repo", type=int, default=None,
                    help="at most this many instances per repository (the first by instance id)")
    ap.add_argument("--out", default=None, help="write per-instance results as JSON lines here")
    args = ap.parse_args(argv)
    repos = dict(r.split("=", 1) for r in args.repo)
    modes = [m for m in args.modes.split(",") if m]
    if unknown := set(modes) - set(ALL_MODES) - set(EXTRA_MODES):
        ap.error(f"unknown modes {sorted(unknown)}; choose from {', '.join(ALL_MODES + EXTRA_MODES)}")
    rows = read_rows(args.instances)
    if args.only:
        rows = [r for r in rows if r["repo"] in args.only.split(",")]
    rows = select_rows(rows, repos, args.per_repo)
    work = Path(args.work)
    engines: dict[str, tuple[Engine, FileBM25]] = {}
    results: list[dict] = []
    out_file = open(args.out, "w") if args.out else None
    for row, engine, file_bm25, moved, index_s in opened_instances(
            rows, repos, work, engines, no_dense=args.no_dense, max_priority=0 if args.dense_code_only else None,
            embedder=args.embedder):
        repo = row["repo"]
        defaults = Config.resolve(engine.config.root)
        base_weights, base_graph_in_packet = dict(defaults.tier_weights), defaults.graph_in_packet
        gold = gold_files(row)
        if not gold:
            print(f"{row['instance_id']}: no gold file exists at the base commit; skipped", file=sys.stderr)
            continue
        result = {"instance_id": row["instance_id"], "repo": repo, "gold": gold, "modes": {},
                  "language": row.get("language_group") or row.get("language") or "Python",
                  "index_s": round(index_s, 1), "checkout": moved}
        for mode in modes:
            if mode == "bm25_file":
                t1 = time.perf_counter()
                files = file_bm25.search(row["problem_statement"], 50)
                symbols, ms = [], (time.perf_counter() - t1) * 1000
            else:
                if mode == "dense" and args.no_dense:
                    continue
                weights, graph, structural = mode_settings(mode, base_weights)
                engine.config.tier_weights, engine.config.graph = weights, graph
                # packet's graph stage as served (off by default), or forced on by `graphpacket`
                engine.config.graph_in_packet = graph and (mode == "graphpacket" or base_graph_in_packet)
                engine.reranker = StructuralReranker() if structural else IdentityReranker()
                engine.config.decompose = mode != "nodecomp"
                if mode in ("title", "title_turns"):
                    title, turns = as_conversation(row["problem_statement"])
                    files, symbols, ms = rank_files(engine, title, turns if mode == "title_turns" else None)
                else:
                    files, symbols, ms = rank_files(engine, row["problem_statement"])
            m = score(files, gold)
            m["func_hits"] = function_hits(symbols, row.get("gold_spans") or {})
            m["ms"] = ms
            m["top5"] = files[:5]
            result["modes"][mode] = m
        results.append(result)
        if out_file:
            out_file.write(json.dumps(result) + "\n")
            out_file.flush()
        full = result["modes"].get(modes[-1], {})
        print(f"{row['instance_id']:40} idx {index_s:6.1f}s  " +
              " ".join(f"{m}:{int(result['modes'][m]['acc@5'])}" for m in result["modes"]) +
              f"  gold={gold[0]} top={full.get('top5', [''])[:2]}", file=sys.stderr, flush=True)
    print(report(results, modes))
    for engine, _ in engines.values():
        engine.close()
    return 0


def report(results: list[dict], modes: list[str]) -> str:
    lines = [f"instances: {len(results)}", "",
             "| mode | Acc@1 | Acc@3 | Acc@5 | Acc@10 | Recall@5 | MRR | func hits@10 | p50 ms | p95 ms |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for mode in modes:
        ms = [r["modes"][mode] for r in results if mode in r["modes"]]
        if not ms:
            continue
        mean = lambda key: statistics.fmean(m[key] for m in ms)  # noqa: E731
        fh = [m["func_hits"] for m in ms if m["func_hits"] == m["func_hits"]]
        lat = sorted(m["ms"] for m in ms)
        p95 = lat[min(len(lat) - 1, int(round(0.95 * (len(lat) - 1))))]
        lines.append(f"| {mode} | {mean('acc@1'):.3f} | {mean('acc@3'):.3f} | {mean('acc@5'):.3f} | "
                     f"{mean('acc@10'):.3f} | {mean('recall@5'):.3f} | {mean('mrr'):.3f} | "
                     f"{statistics.fmean(fh) if fh else float('nan'):.3f} | {statistics.median(lat):.0f} | {p95:.0f} |")
    for key in ("language", "repo"):
        groups = defaultdict(list)
        for r in results:
            groups[r.get(key, "Python")].append(r)
        if key == "language" and len(groups) < 2:
            continue
        lines += ["", f"| {key} | n | " + " | ".join(f"{m} Acc@5" for m in modes) + " |",
                  "|---|---|" + "---|" * len(modes)]
        for name, rs in sorted(groups.items()):
            cells = []
            for m in modes:
                vals = [r["modes"][m]["acc@5"] for r in rs if m in r["modes"]]
                cells.append(f"{statistics.fmean(vals):.2f}" if vals else "-")
            lines.append(f"| {name} | {len(rs)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
