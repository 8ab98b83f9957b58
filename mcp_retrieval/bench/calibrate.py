"""Abstain calibration: evidence for real questions (SWE-bench dev issues, which all have an
answer in their repository) versus off-topic questions (which have none), per repository.

    python -m mcp_retrieval.bench calibrate --instances ../shared/eval/swebench_dev.jsonl \\
        --work /tmp/swebench-work

Uses the indexes a `swebench` run left in `--work` (each repository at its last dev commit).
Prints, for each group, the evidence values and how many `decide` turns into know or miss.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from mcp_retrieval import decide
from mcp_retrieval.config import Config
from mcp_retrieval.engine import Engine

OFF_TOPIC = [
    "recipe for banana bread with walnuts",
    "who won the football world cup in 1998",
    "zqxv wplk frrbz qorp",
    "how do I configure a kubernetes ingress controller with TLS",
    "translate good morning into Portuguese",
    "what is the capital of Mongolia",
    "best hiking trails near the lake district",
    "my cat keeps knocking cups off the table",
]


def evidence(engine: Engine, query: str) -> tuple[decide.Evidence | None, bool]:
    ranked = engine._rank(query, [], None, None)
    if not ranked.candidates:
        return None, ranked.has_vectors
    return engine.evidence(query, ranked, ranked.candidates), ranked.has_vectors


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m mcp_retrieval.bench calibrate")
    ap.add_argument("--instances", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args(argv)
    rows = [json.loads(x) for x in Path(args.instances).read_text().splitlines() if x.strip()]
    work = Path(args.work)
    groups: dict[str, list] = {"dev": [], "off_topic": []}
    for repo in sorted({r["repo"] for r in rows}):
        slug = repo.replace("/", "__")
        if not (work / "index" / slug).is_dir():
            continue
        cfg = Config.resolve(work / "trees" / slug, work / "index" / slug, persist_sessions=False)
        cfg.cache_dir = work / "cache"
        engine = Engine(cfg)
        for r in rows:
            if r["repo"] == repo:
                groups["dev"].append(evidence(engine, r["problem_statement"]))
        for q in OFF_TOPIC:
            groups["off_topic"].append(evidence(engine, q))
        engine.close()
    report = {}
    for name, items in groups.items():
        evs = [(e, v) for e, v in items if e is not None]
        decisions = [decide.decide(e, v, vectors_complete=True) for e, v in evs]
        report[name] = {
            "n": len(items), "no_candidates": len(items) - len(evs),
            "know": sum(d.found for d in decisions),
            "coverage_median": round(statistics.median(e.coverage for e, _ in evs), 3) if evs else None,
            "coverage_min": round(min(e.coverage for e, _ in evs), 3) if evs else None,
            "dense_median": round(statistics.median(e.dense_top for e, _ in evs), 3) if evs else None,
            "dense_min": round(min(e.dense_top for e, _ in evs), 3) if evs else None,
            "dense_max": round(max(e.dense_top for e, _ in evs), 3) if evs else None,
            "anchored": sum(e.anchored for e, _ in evs),
            "weakest": sorted(((round(e.coverage, 2), round(e.dense_top, 2), e.anchored) for e, _ in evs),
                              key=lambda t: (t[2], t[0] + t[1]))[:12],
            "strongest": sorted(((round(e.coverage, 2), round(e.dense_top, 2), e.anchored) for e, _ in evs),
                                key=lambda t: (t[2], t[0] + t[1]))[-12:],
        }
    print(json.dumps(report, indent=1))
    return 0
