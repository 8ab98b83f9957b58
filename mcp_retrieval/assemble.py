"""Stage 6: pack the ranked pool into a token budget.

Greedy MMR (relevance vs. redundancy, λ≈0.7) over token-shingle Jaccard — no embeddings, so it
reproduces byte for byte; near-duplicates (Jaccard ≥ 0.9 to a chosen chunk) are dropped; chunks
already delivered in the session become pointer stubs that cost a few tokens; the strongest
evidence is seated first. Pure: no I/O.
"""

from __future__ import annotations

import functools
import html
from collections.abc import Sequence
from dataclasses import dataclass

from indexers.analysis import terms
from mcp_retrieval.neutralize import neutralize
from mcp_retrieval.retrieve import Candidate

HEADER_TOKENS = 24  # the legibility header line each chunk carries in the window
STUB_TOKENS = 30
SHINGLE = 3


@dataclass
class Placed:
    candidate: Candidate
    stub: bool  # True: delivered earlier in this session, sent as a pointer


@functools.lru_cache(maxsize=20_000)
def shingles(text: str) -> frozenset[int]:
    """Hashed 3-grams of the text's terms (cached: the same chunks recur across calls)."""
    words = terms(text)
    if len(words) < SHINGLE:
        return frozenset({hash(tuple(words))}) if words else frozenset()
    return frozenset(hash(tuple(words[i: i + SHINGLE])) for i in range(len(words) - SHINGLE + 1))


def jaccard(a: frozenset[int], b: frozenset[int]) -> float:
    if not a or not b:
        return 0.0
    inter = len(a & b) if len(a) < len(b) else len(b & a)
    return inter / (len(a) + len(b) - inter)


def assemble(candidates: Sequence[Candidate], *, budget: int, max_chunks: int, delivered: set[str] = frozenset(),
             lam: float = 0.7, near_duplicate: float = 0.9) -> list[Placed]:
    """Choose what goes into the window. Full-text tokens never exceed `budget`."""
    if not candidates:
        return []
    top = max(c.score for c in candidates) or 1.0
    pool = list(candidates)
    grams = {id(c): shingles(c.chunk.text) for c in pool}
    chosen: list[Placed] = []
    redundancy = {id(c): 0.0 for c in pool}  # max similarity to anything chosen so far
    used = 0
    full = 0
    while pool and full < max_chunks:
        values = [lam * (c.score / top) - (1 - lam) * redundancy[id(c)] for c in pool]
        best = pool.pop(values.index(max(values)))  # first of equals: ties keep rank order
        if redundancy[id(best)] >= near_duplicate:
            continue
        g = grams[id(best)]
        stub = best.chunk.sha256 in delivered
        cost = STUB_TOKENS if stub else best.chunk.tokens + HEADER_TOKENS
        if used + cost > budget:
            continue  # too big for what is left; a smaller one may still fit
        chosen.append(Placed(best, stub))
        used += cost
        for c in pool:
            redundancy[id(c)] = max(redundancy[id(c)], jaccard(grams[id(c)], g))
        if not stub:
            full += 1
        elif sum(p.stub for p in chosen) >= max_chunks:
            pool = [c for c in pool if c.chunk.sha256 not in delivered]
    chosen.sort(key=lambda p: (-p.candidate.score, p.candidate.chunk.id))
    return chosen


def _attr(value: object) -> str:
    return html.escape(neutralize(str(value)), quote=True).replace("&lt;", "‹").replace("&gt;", "›")


def header_line(p: Placed) -> str:
    c = p.candidate.chunk
    attrs = {"path": c.path, "lines": f"{c.start_line}-{c.end_line}"}
    if c.symbol:
        attrs["symbol"] = c.symbol
    attrs["tiers"] = ",".join(p.candidate.tiers)
    attrs["score"] = f"{p.candidate.score:.3f}"
    if p.stub:
        attrs["sha256"] = c.sha256[:16]
        attrs["note"] = "delivered earlier in this session; reread it if it is no longer in your context"
    tag = "stub" if p.stub else "chunk"
    return f"<mcp-retrieval:{tag} " + " ".join(f'{k}="{_attr(v)}"' for k, v in attrs.items()) + "/>"


def render_window(placed: Sequence[Placed]) -> str:
    """The window: one legibility header per chunk; indexed text neutralised on the way out."""
    parts: list[str] = []
    for p in placed:
        parts.append(header_line(p))
        if not p.stub:
            parts.append(neutralize(p.candidate.chunk.text))
    return "\n".join(parts)


def no_match_window(reason: str, escalate_to: str) -> str:
    return f'<mcp-retrieval:no_match reason="{reason}" escalate_to="{escalate_to}" do_not_answer="true"/>'
