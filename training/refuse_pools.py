"""Re-fuse collected pools under other tier weights, without collecting them again.

    python -m training.refuse_pools STATIC_POOLS.jsonl --lexical LEXICAL_POOLS.jsonl \\
        --variant titled:dense=0 --variant long:dense=0,dense_title=0

A pool (`training.collect`) keeps each candidate's tier ranks and raw scores, so weighted RRF, the
rerank stage as `packet` runs it (the fused score over the pool's best, the test demotion) and the shipped file ranker can be
run again on it with other weights. A variant is `SCOPE:TIER=WEIGHT,...`, in force for the
questions of its scope: `all`, `short` (at most 6 question words), `medium`, `long` (over
`LONG_QUESTION_WORDS`) or `titled` (long, with a title: `rules.dense_by_title`'s scope), over the
weights served today (that rule included). As served, a tier at weight 0 still leaves
its ranks and raw scores on the candidates (know/miss reads them) but adds
nothing to the fused score, and a chunk only such tiers found leaves the pool.

Exact for lowering the dense tiers' weights: in `packet` they only add chunks to the pool
(`rules.vectors_only_add`), so the pool holds every chunk lower weights keep (with the served
weights the collected scores come back, tested). For any other tier, or a higher weight, a chunk
the collection left out of the pool cannot come in: read such a variant as a lower bound.
Reported per variant: file Acc@1 / Acc@5 / Recall@5 / MRR (semble_dev's pools: its NDCG@10),
and the questions better and worse than the pools as collected and than `--lexical`'s (the same
questions collected without vectors).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

from mcp_retrieval.bench.semble import ndcg10
from mcp_retrieval.classify import classify
from mcp_retrieval.config import Config
from mcp_retrieval.file_features import is_long_question, question_words
from mcp_retrieval.file_rank import rank_files
from mcp_retrieval.file_scorer import file_scores, shipped
from mcp_retrieval.question_parts import question_title
from mcp_retrieval.pipeline import fused_weights
from mcp_retrieval.rerank import StructuralReranker, signals_for
from mcp_retrieval.retrieve import Candidate
from training.train_file_ranker import candidates

SCOPES = ("all", "short", "medium", "long", "titled")
SHORT_QUESTION_WORDS = 6  # file_features' q_short


def parse_variant(text: str) -> tuple[str, dict[str, float]]:
    scope, _, pairs = text.partition(":")
    if scope not in SCOPES or not pairs:
        raise ValueError(f"a variant is SCOPE:TIER=WEIGHT,... with SCOPE one of {', '.join(SCOPES)}: {text!r}")
    weights = {}
    for pair in pairs.split(","):
        tier, _, weight = pair.partition("=")
        weights[tier.strip()] = float(weight)
    return scope, weights


def in_scope(scope: str, query: str) -> bool:
    if scope in ("all", "short", "medium"):
        words = len(question_words(query))
        return scope == "all" or (words <= SHORT_QUESTION_WORDS) == (scope == "short") and not is_long_question(query)
    return is_long_question(query) and (scope == "long" or question_title(query) is not None)


def served_weights(query: str) -> dict[str, float]:
    """The tier weights `packet` fuses this question with today."""
    return fused_weights(query, question_title(query), Config.__dataclass_fields__["tier_weights"].default_factory())


def refused(record: dict, weights: dict[str, float], k: int) -> list[Candidate]:
    """The record's pool fused under `weights` and reranked as `packet` reranks it."""
    kept = []
    for c in candidates(record):
        weighted = {t: r for t, r in c.ranks.items() if weights.get(t, 1.0) > 0}
        if not weighted:
            continue
        c.fused = sum(weights.get(t, 1.0) / (k + r) for t, r in weighted.items())
        kept.append(c)
    query = record["query"]
    signals = signals_for(query, [], classify(query).name, structural=False)
    return StructuralReranker().rerank(kept, signals)


def metrics(record: dict, pool: list[Candidate], model) -> dict[str, float]:
    ranked = rank_files(pool, per_file=3, learned=lambda kept: file_scores(model, record["query"], kept))
    if "targets" in record:  # semble_dev: its metric on the first ten items
        return {"ndcg10": ndcg10([(c.chunk.path, c.chunk.start_line, c.chunk.end_line) for c in ranked[:10]],
                                 [tuple(t) for t in record["targets"]])}
    files = list(dict.fromkeys(c.chunk.path for c in ranked))
    gold = record["gold_files"]
    ranks = [files.index(g) + 1 for g in gold if g in files]
    return {"acc1": float(all(g in files[:1] for g in gold)), "acc5": float(all(g in files[:5] for g in gold)),
            "recall5": sum(g in files[:5] for g in gold) / len(gold), "mrr": 1.0 / min(ranks) if ranks else 0.0}


def _key(record: dict) -> tuple[str, str]:
    return record["repo"], record["query"]


def compare(got: dict, base: dict) -> str:
    def moved(m):
        return (sum(got[q][m] > base[q][m] + 1e-9 for q in got), sum(got[q][m] < base[q][m] - 1e-9 for q in got))
    if "ndcg10" in next(iter(got.values())):
        return "NDCG@10 +{} -{}".format(*moved("ndcg10"))
    return "Acc@1 +{} -{}, Acc@5 +{} -{}".format(*moved("acc1"), *moved("acc5"))


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m training.refuse_pools", description=__doc__.split("\n")[0])
    ap.add_argument("pools", help="pools collected with a dense tier (training.collect --embedder ...)")
    ap.add_argument("--lexical", help="the same questions' pools collected without vectors")
    ap.add_argument("--variant", action="append", default=[], help="SCOPE:TIER=WEIGHT,... (repeatable)")
    args = ap.parse_args(argv)
    try:
        variants = [(v, *parse_variant(v)) for v in args.variant]
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    records = [r for r in map(json.loads, open(args.pools)) if r.get("gold_files") or r.get("targets")]
    lexical = {_key(r): r for r in map(json.loads, open(args.lexical))} if args.lexical else {}
    if lexical:
        records = [r for r in records if _key(r) in lexical]
    model, k = shipped(), Config.__dataclass_fields__["rrf_k"].default
    if not records:
        print("error: no question with an answer in the pools", file=sys.stderr)
        return 2
    print(f"{len(records)} questions, {sum(is_long_question(r['query']) for r in records)} long")

    def line(name: str, got: dict) -> None:
        figures = " / ".join(f"{statistics.mean(g[m] for g in got.values()):.3f}" for m in next(iter(got.values())))
        print(f"{name:32} {figures}" + (f"   vs collected: {compare(got, collected)}" if got is not collected else "")
              + (f"   vs lexical: {compare(got, plain)}" if lexical and got is not plain else ""))

    print(f"{'':32} " + ("NDCG@10" if "targets" in records[0] else "Acc@1 / Acc@5 / Recall@5 / MRR"))
    collected = {_key(r): metrics(r, candidates(r), model) for r in records}
    plain = {q: metrics(lexical[q], candidates(lexical[q]), model) for q in collected} if lexical else {}
    if lexical:
        line("lexical pools", plain)
    line("as collected", collected)
    line("re-fused as served today", {_key(r): metrics(r, refused(r, served_weights(r["query"]), k), model)
                                      for r in records})
    for name, scope, change in variants:
        def weights(query: str, scope=scope, change=change) -> dict[str, float]:
            return {**served_weights(query), **change} if in_scope(scope, query) else served_weights(query)
        line(name, {_key(r): metrics(r, refused(r, weights(r["query"]), k), model) for r in records})
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
