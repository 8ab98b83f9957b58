"""File-level order for `packet`: pointers grouped by file, files ranked by their evidence.

Chunk scores alone let one long file crowd a packet (its ten similar chunks push the second and
third file of a multi-file fix out of the first items). `packet` scores files with the learned
file ranker (`file_scorer`), and `context` weighs each chunk by its file's learned share
(`with_learned_files`); the hand-set file score here serves both when no model is loaded or with
`MCP_RETRIEVAL_FILE_RANKER=hand`: a file's best chunk plus a diminishing share of its next two
(several independent hits raise a file; a long file with many weak hits cannot outrun one strong
match: the extra is bounded at 35% of the best). Either way each file shows at most `per_file`
chunks before the next file gets its turn.

The Go/Rust folder lift that ran after the hand-set score (a file gained a share of the strongest
other head file of its package: docs/BENCHMARKS-history.md 9a) is the learned ranker's
`folder_head` feature now, and gone from the hand-set fallback (docs/BENCHMARKS-history.md 44b).
Near-duplicate chunks (identical files vendored twice) are shown once, as in `context`; of a
source chunk and its generated copy (an amalgamated header), the source.
Without the model, `context` reads the hand-set file evidence before it packs a window (`with_file_evidence`).
Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from mcp_retrieval import near_duplicates, rules, scoring
from mcp_retrieval.indexers.store import PRIORITY_LAST
from mcp_retrieval.retrieve import Candidate

SECOND_HIT_SHARE = 0.25
THIRD_HIT_SHARE = 0.10
FURTHER_CHUNK_SHARE = 0.5  # a file's 2nd chunk ranks as a file of half its score (BENCHMARKS 38a)
NEAR_DUPLICATE = 0.9  # the default; `packet` passes the configured rule `context` uses too


FileKey = tuple[str, str]  # (root name, path in that root)


def file_scores(candidates: Sequence[Candidate]) -> dict[FileKey, float]:
    by_file: dict[FileKey, list[float]] = {}
    for c in candidates:
        by_file.setdefault((c.root, c.chunk.path), []).append(c.score)
    out = {}
    for path, scores in by_file.items():
        top = sorted(scores, reverse=True)[:3] + [0.0, 0.0]
        out[path] = top[0] + SECOND_HIT_SHARE * top[1] + THIRD_HIT_SHARE * top[2]
    return out


def with_file_evidence(candidates: Sequence[Candidate]) -> list[Candidate]:
    """`context`'s pool, each chunk raised by what its file's other hits add to that file's score
    (`file_scores`: a quarter of the second best, a tenth of the third), best first. The chunk
    that answers often sits in a file with several matches while a lone match elsewhere outscores
    it by a little; a tight window then shows the lone match and not the answer. Every chunk of a
    file gains the same amount, so the order inside a file is kept (docs/BENCHMARKS-history.md 12b)."""
    scores = file_scores(candidates)
    best: dict[FileKey, float] = {}
    for c in candidates:
        key = (c.root, c.chunk.path)
        best[key] = max(best.get(key, c.score), c.score)
    for c in candidates:
        key = (c.root, c.chunk.path)
        if (extra := scores[key] - best[key]) > 0:
            scoring.share(c, extra)
            c.why.append("other matches in the same file")
    return _best_first(candidates)


def with_learned_files(candidates: Sequence[Candidate], shares: dict[FileKey, float]) -> list[Candidate]:
    """`context`'s pool, each chunk multiplied by its file's learned share (`file_scorer.file_scores`:
    1 for the best file), best first. On mined fix commits it brings more fixed files into a
    window than the hand-set evidence and as many fixed functions (docs/BENCHMARKS-history.md 54i). Every
    chunk of a file takes the same factor, so the order inside a file is kept."""
    for c in candidates:
        scoring.multiply(c, "file", shares[(c.root, c.chunk.path)])
    return _best_first(candidates)


# The factors that say what the caller asked for (a folder to prefer, the files of its recent turns)
# rather than what the question matched: the file ranker never sees them.
CALLER_FACTORS = ("path_prefix", "conversation")


def window_order(candidates: Sequence[Candidate], shares: dict[FileKey, float]) -> dict[FileKey, float]:
    """The order `context`'s window shows its files in: the learned share, times the caller's
    factors on the file's chunks (`path_prefix` lifts its folder's files there as in the pool)."""
    caller: dict[FileKey, float] = {}
    for c in candidates:
        key = (c.root, c.chunk.path)
        caller[key] = max(caller.get(key, 0.0), math.prod(c.factors.get(name, 1.0) for name in CALLER_FACTORS))
    return {key: share * caller.get(key, 1.0) for key, share in shares.items()}


def _best_first(candidates: Sequence[Candidate]) -> list[Candidate]:
    return sorted(candidates, key=lambda c: (-c.score, c.root, c.chunk.id))


def drop_near_duplicates(candidates: Sequence[Candidate], threshold: float) -> list[Candidate]:
    """Candidates in order, without any whose word 3-grams reach `threshold` Jaccard similarity
    with one kept before (`near_duplicates`: the whole pool measured at once). A generated copy
    (an amalgamated `singleheader/simdjson.h`, a bundle) comes after every hand-written chunk in
    that reading, so of two twins the source is the one kept, whichever scored higher."""
    order = list(range(len(candidates)))
    if rules.current().handwritten_twin_kept:
        order.sort(key=lambda i: candidates[i].chunk.priority == PRIORITY_LAST)  # stable: scores' order within each
    kept = near_duplicates.kept([candidates[i].chunk.text for i in order], threshold)
    return [candidates[i] for i in sorted(order[k] for k in kept)]


def rank_files(candidates: Sequence[Candidate], *, per_file: int,
               near_duplicate: float = NEAR_DUPLICATE,
               learned: Callable[[Sequence[Candidate]], dict[FileKey, float]] | None = None,
               within: Callable[[list[Candidate]], list[Candidate]] | None = None) -> list[Candidate]:
    """Candidates regrouped: files by score, within a file its chunks by score, at most
    `per_file` of them before every other file has had its turn; near-duplicates of a shown chunk
    dropped. `learned` (the file ranker: `file_scorer`) replaces the hand-set file score; `within`
    (the learned chunk order: `lead_chunk`) reorders each file's chunks, given best score first."""
    kept = drop_near_duplicates(candidates, near_duplicate)
    scores = learned(kept) if learned is not None else file_scores(kept)
    order = sorted(scores, key=lambda p: -scores[p])
    chunks: dict[FileKey, list[Candidate]] = {}
    for c in sorted(kept, key=lambda c: (-c.score, c.chunk.id)):
        chunks.setdefault((c.root, c.chunk.path), []).append(c)
    if within is not None:
        chunks = {key: within(group) for key, group in chunks.items()}
    return distinct_first(order, scores, chunks, per_file)


def distinct_first(order: list[FileKey], scores: dict[FileKey, float], chunks: dict[FileKey, list[Candidate]],
                   per_file: int) -> list[Candidate]:
    """Each file's best chunk at its file's place; its n-th further chunk at FURTHER_CHUNK_SHARE**n
    of the file's score, so it waits behind the other files scoring near its file (a question
    about one file, whose score stands far above the rest, still gets that file's chunks first).
    Beyond `per_file` chunks a file waits until every file has had its turn. Each candidate's
    `standing` is the score its place was given."""
    place = {key: i for i, key in enumerate(order)}
    head, rest = [], []
    for key in order:
        for n, c in enumerate(chunks[key]):
            c.standing = scores[key] * FURTHER_CHUNK_SHARE ** n
            (head if n < per_file else rest).append((c.standing, -place[key], n, c))
    head.sort(key=lambda t: (-t[0], -t[1], t[2]))
    return [t[3] for t in head] + [t[3] for t in sorted(rest, key=lambda t: (-t[1], t[2]))]
