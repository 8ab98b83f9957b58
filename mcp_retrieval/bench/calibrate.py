"""Abstain calibration: evidence for real questions (SWE-bench dev issues, which all have an
answer in their repository) versus off-topic questions (which have none), per repository.

    python -m mcp_retrieval.bench calibrate --instances ../shared/eval/swebench_dev.jsonl \\
        --work /tmp/swebench-work
    python -m mcp_retrieval.bench calibrate --semble ../shared/eval/semble_dev --work /tmp/semble-work

Uses the indexes a `swebench` run left in `--work` (each repository at its last dev commit).
Prints, for each group, the evidence values and how many `decide` turns into know or miss.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Iterator
from pathlib import Path

from mcp_retrieval import decide
from mcp_retrieval.config import Config
from mcp_retrieval.engine import Engine

# 16 questions about what no code workspace holds: the first 8 since the first calibration, the
# rest added with the semble_dev calibration (BENCHMARKS 38c)
OFF_TOPIC = [
    "recipe for banana bread with walnuts",
    "who won the football world cup in 1998",
    "zqxv wplk frrbz qorp",
    "how do I configure a kubernetes ingress controller with TLS",
    "translate good morning into Portuguese",
    "what is the capital of Mongolia",
    "best hiking trails near the lake district",
    "my cat keeps knocking cups off the table",
    "bluetooth low energy device pairing",
    "GPU shader compilation for the graphics pipeline",
    "audio sample rate conversion and resampling",
    "PDF font embedding and glyph subsetting",
    "3D mesh triangulation and normals",
    "payroll tax withholding calculation",
    "genome sequence alignment scoring",
    "spacecraft orbit propagation",
]


def evidence(engine: Engine, query: str) -> tuple[decide.Evidence | None, tuple[bool, bool]]:
    """The question's evidence, and (vectors searched, their similarity decides alone)."""
    ranked = engine._rank(query, [], None, None)
    vectors = ranked.has_vectors, ranked.similarity_decides
    if not ranked.candidates:
        return None, vectors
    return engine.evidence(query, ranked, ranked.candidates), vectors


def semble_engines(data: Path, work: Path, embedder: str = "none") -> Iterator[tuple[dict, Engine]]:
    """(repository, engine) over each index `bench semble` (or `training.collect semble`) built
    under `work` with `embedder` (each repository's `benchmark_root` at its revision); each engine
    is closed when the next is asked for."""
    folder = {"none": "index", "minilm": "index-vec"}.get(embedder, f"index-{embedder}")
    for repo in json.loads((data / "repos.json").read_text()):
        index = work / folder / repo["name"]
        if not index.is_dir():
            continue
        tree = work / "trees" / repo["name"]
        cfg = Config.resolve(tree / repo["benchmark_root"] if repo.get("benchmark_root") else tree, index,
                             persist_sessions=False, embedder=embedder)
        cfg.cache_dir = work / "cache"
        engine = Engine(cfg)
        try:
            yield repo, engine
        finally:
            engine.close()


def _semble_groups(data: Path, work: Path, groups: dict[str, list], embedder: str = "none") -> None:
    """semble_dev's questions (all answerable) and the off-topic ones, over `semble_engines`."""
    for repo, engine in semble_engines(data, work, embedder):
        for q in json.loads((data / "annotations" / f"{repo['name']}.json").read_text()):
            groups["dev"].append(evidence(engine, q["query"]))
        for q in OFF_TOPIC:
            groups["off_topic"].append(evidence(engine, q))


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m mcp_retrieval.bench calibrate")
    ap.add_argument("--instances", default=None, help="SWE-bench-format questions (the dev file)")
    ap.add_argument("--semble", default=None, help="or the semble_dev folder: its questions over the indexes "
                                                   "`bench semble` left in --work")
    ap.add_argument("--work", required=True)
    ap.add_argument("--embedder", default="none", choices=("none", "static", "minilm"),
                    help="with --semble: the dense tier of the indexes read (their folder under --work)")
    args = ap.parse_args(argv)
    work = Path(args.work)
    groups: dict[str, list] = {"dev": [], "off_topic": []}
    if args.semble:
        _semble_groups(Path(args.semble), work, groups, args.embedder)
    rows = [json.loads(x) for x in Path(args.instances).read_text().splitlines() if x.strip()] if args.instances else []
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
        decisions = [decide.decide(e, *v) for e, v in evs]
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
