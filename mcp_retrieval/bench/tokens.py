"""How much of the answer a `context` window holds per token: the recall-vs-tokens frontier.

    python -m mcp_retrieval.bench tokens --instances ../shared/eval/swebench_dev.jsonl \\
        --repo owner/name=/path/to/git/dir ... [--budgets 1000,2000,4000,8000] [--per-repo N] [--no-dense]

Gold lines: for the Python file, the lines of the functions named in `gold_spans` (resolved
through the index's symbol table at the base commit); for the multilingual file, the old-side
lines the patch hunks change (for a pure insertion, the line it follows). Gold functions: the
`gold_spans` definitions, or the innermost definitions holding gold lines.

Per budget it reports: gold-function hit rate (at least half of a gold function's lines shown in
full text), gold-line recall, gold-file recall (a gold file with any line shown), whether the
window opens with a gold file (`first_file`: the first file an agent reads) and the tokens
actually shown, for `context` and two baselines packed by the same count with the same headers:
BM25 over function-level chunks (lexical tier only, rank order, no MMR, no excerpts) and BM25
over whole files (each file's head, as many lines as fit).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from mcp_retrieval.bench import read_rows, select_rows
from mcp_retrieval.indexers.tokens import budget_tokens
from mcp_retrieval import assemble
from mcp_retrieval.bench.checkout import opened_instances
from mcp_retrieval.bench.filebm25 import FileBM25
from mcp_retrieval.bench.swebench import gold_files
from mcp_retrieval.engine import Engine
from mcp_retrieval.retrieve import Candidate
from mcp_retrieval.workspace import Workspace

_ELIDED = re.compile(r"^⋯ lines (\d+)-(\d+) elided ⋯$")


def patch_lines(patch: str) -> dict[str, set[int]]:
    """Old-side line numbers each file's hunks change (a pure insertion marks the line before)."""
    out: dict[str, set[int]] = defaultdict(set)
    path, line = None, 0
    for raw in patch.splitlines():
        if raw.startswith("--- "):
            path = raw[6:] if raw.startswith("--- a/") else None
            continue
        if raw.startswith("+++ ") or path is None:
            continue
        m = assemble.HUNK_HEADER.match(raw)
        if m:
            line = int(m.group(1))
            continue
        if raw.startswith("-"):
            out[path].add(line)
            line += 1
        elif raw.startswith("+"):
            out[path].add(max(1, line - 1))
        else:
            line += 1
    return dict(out)


def gold_functions(engine: Engine, row: dict) -> tuple[list[tuple[str, int, int]], dict[str, set[int]]]:
    """([(path, start, end)] gold definitions, {path: gold lines})."""
    funcs: list[tuple[str, int, int]] = []
    if row.get("gold_spans"):
        for path, names in row["gold_spans"].items():
            for name in names:
                hit = engine.store.query("SELECT start_line, end_line FROM symbols WHERE path=? AND (qualname=? OR "
                                         "qualname LIKE ?) ORDER BY end_line - start_line LIMIT 1",
                                         (path, name, "%." + name))
                if hit:
                    funcs.append((path, hit[0][0], hit[0][1]))
        lines = defaultdict(set)
        for path, start, end in funcs:
            lines[path].update(range(start, end + 1))
        return funcs, dict(lines)
    lines = {p: ls for p, ls in patch_lines(row.get("patch_text", "")).items() if p in set(gold_files(row))}
    for path, wanted in lines.items():
        defs = engine.store.query("SELECT start_line, end_line FROM symbols WHERE path=? AND kind!='file'", (path,))
        for start, end in {min(((s, e) for s, e in defs if s <= ln <= e), key=lambda se: se[1] - se[0],
                               default=None) for ln in wanted} - {None}:
            funcs.append((path, start, end))
    return funcs, lines


def shown_lines(path: str, start: int, text: str) -> set[int]:
    """Line numbers a chunk's shown text covers (elision marks skip their range)."""
    out, line = set(), start
    for row in text.split("\n"):
        m = _ELIDED.match(row)
        if m:
            line = int(m.group(2)) + 1
            continue
        out.add(line)
        line += 1
    return out


def score(shown: dict[str, set[int]], funcs, lines: dict[str, set[int]], files: list[str]) -> dict[str, float]:
    """`shown`: the window's lines by file, files in the order the window shows them (`first_file`:
    the window opens with a fixed file)."""
    gold_n = sum(len(v) for v in lines.values())
    hit_lines = sum(len(v & shown.get(p, set())) for p, v in lines.items())
    fn_hits = [len(set(range(s, e + 1)) & shown.get(p, set())) * 2 >= (e - s + 1) for p, s, e in funcs]
    return {"func_hit": statistics.fmean(fn_hits) if fn_hits else float("nan"),
            "line_recall": hit_lines / gold_n if gold_n else float("nan"),
            "file_recall": sum(bool(shown.get(f)) for f in files) / len(files),
            "first_file": float(next((p for p in shown if shown[p]), None) in files)}


STRUCTURED_RATIO: dict[int, list[float]] = defaultdict(list)  # budget -> structured / text chars, per context call


VARIANTS = {"context": {}, "compact": {"render": "compact"}, "floor3": {"seat_floor": 3}, "floor2": {"seat_floor": 2},
            "sig": {"signatures": True}}
CONFIG_VARIANTS = ("seat_floor", "signatures")  # set on the engine's config for the call, not passed as arguments


def context_window(engine: Engine, query: str, budget: int, variant: str = "context") -> tuple[dict[str, set[int]], int]:
    kwargs = dict(VARIANTS[variant])
    overrides = {k: kwargs.pop(k) for k in CONFIG_VARIANTS if k in kwargs}
    saved = {k: getattr(engine.config, k) for k in overrides}
    for k, v in overrides.items():
        setattr(engine.config, k, v)
    try:
        r = Workspace.single(engine).context(query, budget_tokens=budget, **kwargs)
    finally:
        for k, v in saved.items():
            setattr(engine.config, k, v)
    shown: dict[str, set[int]] = defaultdict(set)
    for c in r.chunks:
        if c.text:
            shown[c.path] |= shown_lines(c.path, c.start_line, c.text)
    for sig in r.signatures or []:  # a signature shows its definition's first line
        shown[sig.path].add(sig.line)
    if r.chunks and variant == "context":  # what the server sends: the window as text, the model (no
        # window) as structured content, serialised as on the wire (pydantic's JSON: compact, non-ASCII as is)
        wire = json.dumps(r.model_dump(mode="json"), separators=(",", ":"), ensure_ascii=False)
        STRUCTURED_RATIO[budget].append(len(wire) / max(1, len(r.window)))
    return shown, budget_tokens(r.window)


def chunk_bm25_window(engine: Engine, query: str, budget: int) -> tuple[dict[str, set[int]], int]:
    hits = engine.retriever.lexical_hits(query, 200)
    stored = engine.store.chunks_by_id([cid for cid, _ in hits])
    cands = [Candidate(chunk=stored[cid], score=s) for cid, s in hits if cid in stored]
    window = assemble.assemble(cands, budget=budget, max_chunks=64, lam=1.0, near_duplicate=1.01, head="know")
    shown: dict[str, set[int]] = defaultdict(set)
    for p in window.placed:
        shown[p.candidate.chunk.path] |= shown_lines(p.candidate.chunk.path, p.candidate.chunk.start_line, p.text)
    return shown, window.tokens


def file_bm25_window(engine: Engine, bm25: FileBM25, query: str, budget: int) -> tuple[dict[str, set[int]], int]:
    shown: dict[str, set[int]] = defaultdict(set)
    parts = ["know"]
    used = budget_tokens(parts[0])
    for path in bm25.search(query, 30):
        header = f'<mcp-retrieval:chunk path="{path}"/>'
        try:
            lines = (engine.config.root / path).read_text(errors="replace").split("\n")
        except OSError:
            continue
        room = budget - used - budget_tokens(header) - 2
        if room < 20:
            break
        keep, cost = [], 0
        for ln in lines:
            c = budget_tokens(ln) + 1
            if cost + c > room:
                break
            keep.append(ln)
            cost += c
        if not keep:
            continue
        parts += [header, "\n".join(keep)]
        used = budget_tokens("\n".join(parts))
        shown[path] |= set(range(1, len(keep) + 1))
    return shown, budget_tokens("\n".join(parts))


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m mcp_retrieval.bench tokens")
    ap.add_argument("--instances", required=True)
    ap.add_argument("--repo", action="append", default=[], help="owner/name=/path/to/git/dir (repeatable)")
    ap.add_argument("--work", default="/tmp/mcp-retrieval-tokens")
    ap.add_argument("--budgets", default="1000,2000,4000,8000")
    ap.add_argument("--per-repo", type=int, default=None)
    ap.add_argument("--no-dense", action="store_true")
    ap.add_argument("--dense-code-only", action="store_true",
                    help="embed source code only (tests, docs and generated files keep no vectors): fast re-checkouts")
    ap.add_argument("--out", default=None)
    ap.add_argument("--variants", default="context",
                    help=f"context windows to measure, comma-separated: {', '.join(VARIANTS)} (render and seat-floor ablations)")
    args = ap.parse_args(argv)
    variants = [v for v in args.variants.split(",") if v]
    if unknown := set(variants) - set(VARIANTS):
        ap.error(f"unknown variants {sorted(unknown)}")
    repos = dict(r.split("=", 1) for r in args.repo)
    budgets = [int(b) for b in args.budgets.split(",")]
    rows = select_rows(read_rows(args.instances), repos, args.per_repo)
    work = Path(args.work)
    engines: dict[str, tuple[Engine, FileBM25]] = {}
    results = []
    out = open(args.out, "w") if args.out else None
    for row, engine, bm25, _, _ in opened_instances(rows, repos, work, engines, no_dense=args.no_dense,
                                                    max_priority=0 if args.dense_code_only else None):
        repo = row["repo"]
        engine.graph(wait=True)  # as in a server that has been up a while: the closure reads the graph
        funcs, lines = gold_functions(engine, row)
        files = gold_files(row)
        if not lines or not files:
            print(f"{row['instance_id']}: no gold lines resolved; skipped", file=sys.stderr)
            continue
        query = row["problem_statement"]
        res = {"instance_id": row["instance_id"], "repo": repo, "by_budget": {}}
        for b in budgets:
            cell = {}
            windows = {v: context_window(engine, query, b, v) for v in variants}
            windows |= {"bm25_chunks": chunk_bm25_window(engine, query, b),
                        "bm25_files": file_bm25_window(engine, bm25, query, b)}
            for name, (shown, tokens) in windows.items():
                cell[name] = {**score(shown, funcs, lines, files), "tokens": tokens, "over_budget": tokens > b}
            res["by_budget"][b] = cell
        results.append(res)
        if out:
            out.write(json.dumps(res) + "\n")
            out.flush()
        c = res["by_budget"][budgets[-1]][variants[0]]
        print(f"{row['instance_id']:40} func {c['func_hit']:.2f} lines {c['line_recall']:.2f} "
              f"files {c['file_recall']:.2f}", file=sys.stderr, flush=True)
    print(report(results, budgets, variants))
    if STRUCTURED_RATIO:
        print("\n" + structured_report(STRUCTURED_RATIO))
    for engine, _ in engines.values():
        engine.close()
    return 0


def structured_report(ratios: dict[int, list[float]]) -> str:
    """Structured content against text content (characters, as on the wire), per budget and in all:
    #13 bounds it per call, and a small window amortises the fixed fields least."""
    def row(label, values):
        return f"| {label} | {len(values)} | {statistics.median(values):.3f} | {max(values):.3f} |"
    lines = ["| structured / text, context calls | calls | median | max |", "|---|---|---|---|"]
    lines += [row(f"budget {b}", ratios[b]) for b in sorted(ratios) if ratios[b]]
    return "\n".join(lines + [row("all", [r for values in ratios.values() for r in values])])


def report(results: list[dict], budgets: list[int], variants: list[str] = ("context",)) -> str:
    lines = [f"instances: {len(results)}", "",
             "| budget | method | gold-function hit | gold-line recall | gold-file recall | tokens shown (median) | over budget |",
             "|---|---|---|---|---|---|---|"]
    for b in budgets:
        for name in (*variants, "bm25_chunks", "bm25_files"):
            cells = [r["by_budget"][b][name] for r in results if b in r["by_budget"]] or \
                    [r["by_budget"][str(b)][name] for r in results]
            if not cells:
                continue

            def mean(key):
                vals = [c[key] for c in cells if c[key] == c[key]]
                return statistics.fmean(vals) if vals else float("nan")

            lines.append(f"| {b} | {name} | {mean('func_hit'):.3f} | {mean('line_recall'):.3f} | "
                         f"{mean('file_recall'):.3f} | {statistics.median(c['tokens'] for c in cells):.0f} | "
                         f"{sum(c['over_budget'] for c in cells)} |")
    return "\n".join(lines)
