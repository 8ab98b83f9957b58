"""What the chunk ranker knows about each candidate chunk of a question, for `context`'s window.

The file ranker (`file_features`, `file_scorer`) says which files answer; a window is judged by
the definitions it shows, and a fix's function is often its file's second or third match. A chunk
is described by its own scores (relative to the pool's best and to its file's best, its place in
its file), its file's learned share and hand-set file score, each tier's rank, its kind and size,
whether it is test or prose, and how the question's words meet its definition's name. Weights
are learned from the chunks real fixes changed (training/train_chunk_ranker.py).

Pure: reads only the candidates, the question and the file shares.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from mcp_retrieval.file_features import TIERS, question_words, symbol_words
from mcp_retrieval.file_rank import file_scores as hand_file_scores
from mcp_retrieval.indexers.analysis import stem
from mcp_retrieval.indexers.languages import PROSE_LANGUAGES, is_test_chunk
from mcp_retrieval.retrieve import Candidate

KINDS = ("function", "method", "class", "module", "window", "section")
CHUNK_FEATURES = (
    "score_rel",        # its score / the pool's best
    "fused_rel",        # its fused rank score / the pool's best
    "file_share",       # its file's learned share (1 for the best file; `file_scorer.file_scores`)
    "file_hand_rel",    # its file's hand-set score / the best file's (best chunk and a share of the next two)
    "in_file_rel",      # its score / its file's best chunk's
    "in_file_place_inv",  # 1 / (1 + its place among its file's chunks)
    "tokens_log",       # log(1 + its tokens)
    *(f"kind_{k}" for k in KINDS),
    *(f"tier_{t}" for t in TIERS),  # 1 / that tier's rank for it (0: not found)
    "test",             # a test file or test definition
    "prose",            # documentation
    "symbol_cover",     # share of its definition name's words the question holds
    "symbol_cover_stemmed",  # the same, every word cut to its stem
)


def chunk_features(query: str, candidates: Sequence[Candidate],
                   shares: Mapping[tuple[str, str], float]) -> list[list[float]]:
    """One row of CHUNK_FEATURES per candidate, in order."""
    if not candidates:
        return []
    top = max(c.score for c in candidates) or 1.0
    fused_top = max(c.fused for c in candidates) or 1.0
    hand = hand_file_scores(candidates)
    hand_top = max(hand.values()) or 1.0
    by_file: dict[tuple[str, str], list[Candidate]] = {}
    for c in sorted(candidates, key=lambda c: -c.score):
        by_file.setdefault((c.root, c.chunk.path), []).append(c)
    place = {id(c): n for chunks in by_file.values() for n, c in enumerate(chunks)}
    words = question_words(query)
    stems = frozenset(stem(w) for w in words)
    rows = []
    for c in candidates:
        key = (c.root, c.chunk.path)
        best = by_file[key][0].score or 1.0
        name = (c.chunk.symbol or "").rsplit(".", 1)[-1]
        own, own_stems = symbol_words(name)
        rows.append([c.score / top, c.fused / fused_top, shares.get(key, 0.0), hand[key] / hand_top,
                     c.score / best, 1.0 / (1 + place[id(c)]), math.log1p(c.chunk.tokens or 1),
                     *(float(c.chunk.kind == k) for k in KINDS),
                     *(1.0 / c.ranks[t] if c.ranks.get(t) else 0.0 for t in TIERS),
                     float(is_test_chunk(c.chunk.path, c.chunk.symbol, c.chunk.language)),
                     float(c.chunk.language in PROSE_LANGUAGES),
                     len(own & words) / len(own) if own else 0.0,
                     len(own_stems & stems) / len(own_stems) if own_stems else 0.0])
    return rows
