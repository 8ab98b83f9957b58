"""Stage 3b: weighted Reciprocal Rank Fusion. Pure: ranks in, scores out; raw scores never added."""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def rrf(ranked: Mapping[str, Sequence[str]], weights: Mapping[str, float], k: int = 20) -> dict[str, float]:
    """score(d) = sum over tiers t of w_t / (k + rank_t(d)), rank starting at 1.

    Only ranks matter, so any monotone rescaling of a tier's raw scores leaves the result unchanged.
    """
    scores: dict[str, float] = {}
    for tier, ids in ranked.items():
        weight = weights.get(tier, 1.0)
        if weight <= 0:
            continue
        seen: set[str] = set()
        rank = 0
        for doc in ids:
            if doc in seen:  # a duplicate keeps its best rank
                continue
            seen.add(doc)
            rank += 1
            scores[doc] = scores.get(doc, 0.0) + weight / (k + rank)
    return scores


def order(scores: Mapping[str, float]) -> list[str]:
    """Ids by descending score, ties broken by id so the order is reproducible."""
    return sorted(scores, key=lambda d: (-scores[d], d))


def pool(scores: Mapping[str, float], ranked: Mapping[str, Sequence[str]], weights: Mapping[str, float], k: int,
         size: int, adding_only: Sequence[str] = ()) -> list[str]:
    """The first `size` ids by fused score (`scores`: `rrf` of `ranked`), then any of the first
    `size` of the fusion without the `adding_only` tiers that those left out: such tiers add ids
    to the pool and never push one out (the dense tiers: the file ranker learned on pools without
    vectors; docs/BENCHMARKS-history.md 42h)."""
    head = order(scores)[:size]
    if any(tier in ranked for tier in adding_only):
        chosen = set(head)
        rest = {tier: ids for tier, ids in ranked.items() if tier not in adding_only}
        head += [doc for doc in order(rrf(rest, weights, k))[:size] if doc not in chosen]
    return head
