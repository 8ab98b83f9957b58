"""`python -m mcp_retrieval.bench ab`: one rule on and off, in one process, question by question.

Every rule that can be switched off is a field of the root's `Rules` (`rules.environment_set_aside`,
`rules.continuations`; rules.py), and every tuning constant a module-level name read at call time
(`continuation.MAX_SHARE`). This checks each question out and indexes it once, then answers it
twice — arm `served` with the rules and constants as the code has them, arm `flipped` with each
boolean negated (or set to the value given) — so the
two columns differ by the rule alone (`--weight tier=VALUE` flips a fusion tier's weight the same
way): separate runs differ by about a question at Acc@5 through
the index state a run leaves behind (docs/BENCHMARKS-history.md 19a).

`--each` gives every switch and weight an arm of its own (named by its spec), all answered from
the one checkout and index: a rule audit costs one indexing pass, not one per rule.

`--tool packet` scores file ranking (`bench swebench`'s Acc@k and MRR) and `lead_hit`, the share of
fixed files shown whose first item holds a changed line; `--tool context` scores
windows (`bench tokens`' gold-function hit, gold-line and gold-file recall) at each `--budgets`.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import json
import math
import statistics
import sys
from pathlib import Path

from mcp_retrieval.bench import read_rows, select_rows
from mcp_retrieval.bench.checkout import opened_instances
from mcp_retrieval.bench.swebench import gold_files, packet_items, score as file_score
from mcp_retrieval.bench.tokens import context_window, gold_functions, score as window_score

PACKET_KEYS = ("acc@1", "acc@3", "acc@5", "acc@10", "mrr", "lead_hit")
CONTEXT_KEYS = ("func_hit", "line_recall", "file_recall", "first_file", "tokens")


class Switch:
    """`module.NAME` (a boolean, flipped) or `module.NAME=value` (a Python literal) in `mcp_retrieval`,
    NAME possibly an attribute path (`rerank.WEIGHTS.test_factor=1.0`); `rules.name[=value]`
    changes a field of each engine's `Config.rules` instead."""

    def __init__(self, spec: str):
        name, eq, value = spec.partition("=")
        parts = name.split(".")
        for cut in range(len(parts) - 1, 0, -1):  # the longest importable module, then attributes
            try:
                self.module = importlib.import_module("mcp_retrieval." + ".".join(parts[:cut]))
                break
            except ImportError:
                continue
        else:
            raise ValueError(f"{spec}: no module mcp_retrieval.{parts[0]}")
        self.is_rule = cut == 1 and parts[0] == "rules"
        owner = self.module.DEFAULT if self.is_rule else self.module
        *path, self.attr = parts[cut:]
        for attr in path:
            owner = getattr(owner, attr, None)
        if owner is None or not hasattr(owner, self.attr):
            raise ValueError(f"{spec}: mcp_retrieval has no {name}")
        self.owner = owner
        self.served = getattr(owner, self.attr)
        if eq:
            self.flipped = ast.literal_eval(value)
        elif isinstance(self.served, bool):
            self.flipped = not self.served
        else:
            raise ValueError(f"{spec}: not a boolean switch; give the other value as {name}=VALUE")

    def set(self, arm: str, engine=None) -> None:
        value = self.served if arm == "served" else self.flipped
        if not self.is_rule:
            setattr(self.owner, self.attr, value)
        elif engine is not None:
            engine.config.rules = engine.config.rules.with_changes(**{self.attr: value})


class Weight:
    """`tier=value`: the flipped arm fuses `tier` at `value` (the served arm at the engine's own weight).

    A tier the served configuration does not name stays unnamed in the served arm: the pipeline
    runs an optional tier only when its weight is set, while fusion weighs an unnamed tier that
    did run at 1.0 — recording that 1.0 as the served weight once ran a new tier at 1.0 in the
    "served" arm (BENCHMARKS 32b)."""

    def __init__(self, spec: str):
        self.tier, eq, value = spec.partition("=")
        try:
            self.flipped = float(value)
        except ValueError:
            raise ValueError(f"{spec}: give a tier and its weight, e.g. dense=0.4") from None
        self.served: dict[int, float | None] = {}  # engine -> its own weight, None: not named

    def set(self, arm: str, engine) -> None:
        weights = engine.config.tier_weights
        served = self.served.setdefault(id(engine), weights.get(self.tier))
        if arm == "served" and served is None:
            weights.pop(self.tier, None)
        else:
            weights[self.tier] = served if arm == "served" else self.flipped


def _set_arm(changes: list, arm: str, engine) -> None:
    for change in changes:
        change.set(arm, engine)


def _arms(changes: list, specs: list[str], each: bool) -> list[tuple[str, list]]:
    """(arm name, the changes it flips): one `flipped` arm with them all, or with `each` one arm
    per change named by its spec."""
    return list(zip(specs, ([c] for c in changes))) if each else [("flipped", changes)]


def _answer(engine, row: dict, tool: str, budgets: list[int]) -> dict | None:
    query = row["problem_statement"]
    if tool == "packet":
        items, _ = packet_items(engine, query)
        files = list(dict.fromkeys(i.path for i in items))
        gold = gold_files(row)
        leads = {}
        for i in items:
            if i.path in gold:
                leads.setdefault(i.path, [i.start_line, i.end_line, i.symbol])
        return {**file_score(files, gold), "lead_hit": lead_hit(items, gold_functions(engine, row)[1]),
                "ranks": [files.index(g) + 1 if g in files else None for g in gold], "leads": leads}
    funcs, lines = gold_functions(engine, row)
    if not lines:
        return None
    files = gold_files(row)
    out = {}
    for b in budgets:
        shown, tokens = context_window(engine, query, b)
        out[str(b)] = {**window_score(shown, funcs, lines, files), "tokens": tokens}
    return out


def lead_hit(items, lines: dict[str, set[int]]) -> float:
    """Of the fixed files `packet` shows, the share whose first item holds a line the fix changed
    (or a line of a gold function): is the pointer to a right file a pointer to the right place?
    NaN when it shows none."""
    leads: dict[str, object] = {}
    for item in items:
        leads.setdefault(item.path, item)
    shown = [p for p in lines if p in leads]
    if not shown:
        return float("nan")
    return sum(any(leads[p].start_line <= n <= leads[p].end_line for n in lines[p]) for p in shown) / len(shown)


def _cells(result: dict, tool: str) -> dict[str, float]:
    """A question's numbers as flat `key` (packet) or `budget key` (context) cells."""
    if tool == "packet":
        return {k: result.get(k, math.nan) for k in PACKET_KEYS}  # results saved before `lead_hit`: NaN
    return {f"{b} {k}": v[k] for b, v in result.items() for k in CONTEXT_KEYS}


def report(results: list[dict], tool: str, arm: str = "flipped") -> str:
    cells = [(_cells(r["served"], tool), _cells(r[arm], tool)) for r in results]
    keys = list(cells[0][0]) if cells else []
    scored = [k for k in keys if not k.endswith("tokens")]

    def mean(arm, key):
        vals = [c for cell in cells if not math.isnan(c := cell[arm][key])]
        return statistics.fmean(vals) if vals else float("nan")
    lines = [f"questions: {len(results)}", "", f"| | served | {arm} |", "|---|---|---|"]
    lines += [f"| {k} | {mean(0, k):.3f} | {mean(1, k):.3f} |" for k in keys]
    moved = [(r, s, f, ks) for r, (s, f) in zip(results, cells) if (ks := [k for k in scored if abs(s[k] - f[k]) > 1e-9])]
    lines += ["", f"| better / worse in {arm} | " + " | ".join(scored) + " |", "|---|" + "---|" * len(scored),
              "| questions | " + " | ".join(f"{sum(f[k] > s[k] + 1e-9 for s, f in cells)} / "
                                           f"{sum(f[k] < s[k] - 1e-9 for s, f in cells)}" for k in scored) + " |"]
    lines += ["", f"moved ({len(moved)}):"]
    for r, s, f, ks in moved:
        if tool == "packet":
            lines.append(f"- {r['instance_id']}: gold ranks {r['served']['ranks']} served, {r[arm]['ranks']} {arm}")
        else:
            lines.append(f"- {r['instance_id']}: " + ", ".join(f"{k} {s[k]:.2f}/{f[k]:.2f}" for k in ks) + f" (served/{arm})")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m mcp_retrieval.bench ab")
    ap.add_argument("--instances", required=True)
    ap.add_argument("--repo", action="append", default=[], help="owner/name=/path/to/git/dir (repeatable)")
    ap.add_argument("--work", default="/tmp/mcp-retrieval-ab")
    ap.add_argument("--weight", action="append", default=[], help="tier=VALUE: a fusion weight for the flipped arm")
    ap.add_argument("--switch", action="append", default=[],
                    help="module.NAME (a boolean, flipped) or module.NAME=VALUE, in mcp_retrieval (repeatable)")
    ap.add_argument("--each", action="store_true", help="one arm per switch and weight instead of one with all")
    ap.add_argument("--tool", choices=("packet", "context"), default="packet")
    ap.add_argument("--budgets", default="1000,4000", help="context windows' budgets")
    ap.add_argument("--per-repo", type=int, default=None)
    ap.add_argument("--dense", action="store_true",
                    help="embed every chunk, as the server does (default: no vectors, fast)")
    ap.add_argument("--dense-code-only", action="store_true",
                    help="with --dense, embed only non-test source chunks (before session 55 --dense did; a "
                         "reused work folder then also holds whatever vectors its cache restores: 59f)")
    ap.add_argument("--embedder", choices=("static", "minilm"), default="static", help="the dense tier's model, with --dense")
    ap.add_argument("--out", default=None, help="per-question results as JSON lines")
    args = ap.parse_args(argv)
    try:  # each has `set(arm, engine)`: a module switch ignores the engine, a weight is the engine's
        changes = [Switch(s) for s in args.switch] + [Weight(w) for w in args.weight]
    except ValueError as e:
        ap.error(str(e))
    if not changes:
        ap.error("give at least one --switch or --weight")
    arms = _arms(changes, args.switch + args.weight, args.each)
    budgets = [int(b) for b in args.budgets.split(",") if b]
    repos = dict(r.split("=", 1) for r in args.repo)
    rows = select_rows(read_rows(args.instances), repos, args.per_repo)
    work, engines, results = Path(args.work), {}, []
    out = open(args.out, "w") if args.out else None
    try:
        for row, engine, _, _, _ in opened_instances(rows, repos, work, engines, no_dense=not args.dense,
                                                     max_priority=0 if args.dense_code_only else None,
                                                     embedder=args.embedder):
            if args.tool == "context":
                engine.graph(wait=True)  # as a server up a while: graph fusion reads the graph
            result = {"instance_id": row["instance_id"], "repo": row["repo"]}
            _set_arm(changes, "served", engine)
            result["served"] = _answer(engine, row, args.tool, budgets)
            for name, flips in arms:
                _set_arm(flips, "flipped", engine)
                result[name] = _answer(engine, row, args.tool, budgets)
                _set_arm(flips, "served", engine)
            if result["served"] is None:
                print(f"{row['instance_id']}: no gold lines resolved; skipped", file=sys.stderr)
                continue
            results.append(result)
            if out:
                out.write(json.dumps(result) + "\n")
                out.flush()
            print(row["instance_id"], file=sys.stderr, flush=True)
    finally:
        for change in changes:
            if isinstance(change, Switch):  # module state outlives the run; the engines close below
                change.set("served")
        if out:
            out.close()
        for engine, _ in engines.values():
            engine.close()
    print("\n\n".join(report(results, args.tool, name) for name, _ in arms))
    return 0
