"""`packet`'s candidates beyond the pool in Go and Rust: the other files of a leading file's
package (Go: its folder) or module tree (Rust: its folder and the one above, where its `mod.rs`,
`lib.rs` and sibling modules live).

A Go package or a Rust module tree is one unit of code, and a fix that touches one of its files
often touches another the question never names (`axum/src/routing/future.rs` beside
`routing/mod.rs`). Retrieval finds files that share the question's words or meaning, so a fifth
of Rust's and Go's fixed files never entered the pool (docs/BENCHMARKS.md 39d). Of the pool's first
HEAD files, those in these languages bring the indexed files of those folders that are not in the
pool join it, each as its best chunk for the question (one search restricted to them; a file
with no match at all stays out), found by the `module` tier and scored as the pooled chunk whose
lexical match is nearest theirs: the file ranker weighs them (`tier_module`, `folder_head`, their
score, the question's words in their path and names), trained on pools that hold them.

Pure but for the two lookups it is handed (the engine's folder listing and lexical search).
"""

from __future__ import annotations

import bisect
import posixpath
from collections.abc import Callable, Sequence

from mcp_retrieval.indexers.languages import is_test_chunk
from mcp_retrieval.retrieve import Candidate

SUFFIXES = (".go", ".rs")
HEAD = 3  # the pool's first files: those in Go or Rust bring their packages
MAX_ADDED = 24  # at most this many neighbours join (a package of 300 files adds its best matches)


def _folders(path: str) -> list[str]:
    """The folders of `path`'s package: its own, and for Rust the parent module's as well."""
    folder = posixpath.dirname(path)
    if path.endswith(".rs") and folder:
        return [folder, posixpath.dirname(folder)]
    return [folder]


def with_module_neighbours(candidates: Sequence[Candidate], files_in: Callable[[str], list[str]],
                           best_chunks: Callable[[list[str]], list]) -> list[Candidate]:
    """`candidates` with the module neighbours of their leading Go/Rust files after them.

    `files_in(folder)`: the indexed files directly in a folder. `best_chunks(paths)`: (the best
    chunk for the question, its BM25 score) of each path that matches it at all, best first."""
    pooled = {c.chunk.path for c in candidates}
    head = [p for p in list(dict.fromkeys(c.chunk.path for c in candidates))[:HEAD] if p.endswith(SUFFIXES)]
    wanted: list[str] = []
    for path in head:
        suffix = posixpath.splitext(path)[1]
        for folder in _folders(path):
            wanted += [p for p in files_in(folder) if p.endswith(suffix) and p not in pooled and p not in wanted
                       and not is_test_chunk(p, None, "go" if suffix == ".go" else "rust")]
    if not wanted:
        return list(candidates)
    # on the pool's scale: the score of the pooled chunk whose lexical match is nearest its own
    scale = sorted((c.raw["lexical"], c.score) for c in candidates if "lexical" in c.raw)
    added = [Candidate(chunk=chunk, raw={"module": bm25}, ranks={"module": i + 1}, score=_on_scale(bm25, scale),
                       why=["in the package of a leading file"])
             for i, (chunk, bm25) in enumerate(best_chunks(wanted)[:MAX_ADDED])]
    return [*candidates, *added]


def _on_scale(bm25: float, scale: list[tuple[float, float]]) -> float:
    """The score of the pooled chunk whose BM25 match is nearest `bm25` (0 without any)."""
    if not scale:
        return 0.0
    i = bisect.bisect_left(scale, (bm25, float("-inf")))
    near = [scale[j] for j in (i - 1, i) if 0 <= j < len(scale)]
    return min(near, key=lambda t: abs(t[0] - bm25))[1]
