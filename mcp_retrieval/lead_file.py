"""The lead file's own best matches, for `context`'s pool.

The pool is the head of one ranking over the whole workspace: a chunk that is the third-best
match for the question inside the file everything points at can rank 80th overall, below the
near misses of a dozen other files, and never reach the window. The function the fix changes is
often such a chunk: a helper beside the entry point the question names (`convert_to` ->
`_get_conversion_matrix_for_expr`), the method of the right class that shares fewer words with
the report than its neighbours. Localisation in two steps (the file, then the place inside it)
reads the file that leads the pool on its own: its best BM25 matches for the question join the
pool just below the file's best chunk (added when missing, raised when lower) — in a window over
ABOVE_BUDGET tokens only: in a 1,000-token window they took the place of the second file's best
chunk (docs/BENCHMARKS-history.md 27a).

Pure but for the `matches_in` callback, which searches one file.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from mcp_retrieval import rules
from mcp_retrieval.indexers.store import StoredChunk
from mcp_retrieval.retrieve import Candidate

ABOVE_BUDGET = 2000  # windows of more tokens than this read the lead file on its own
FILES = 1  # how many leading files are searched on their own
DEPTH = 3  # each one's best matches that join the pool
SHARE = 0.8  # the first of them ranks at this share of its file's best chunk, the next lower
STEP = 0.05  # each further match a little lower, so the file's own order is kept


def with_lead_file_matches(candidates: Sequence[Candidate], budget: int,
                           matches_in: Callable[[str, str, int], Sequence[StoredChunk]]) -> list[Candidate]:
    """The pool, best first, with the best matches inside its first FILES files."""
    pool = list(candidates)
    if not rules.current().lead_file_matches or budget <= ABOVE_BUDGET or not pool:
        return pool
    by_id = {(c.root, c.chunk.id): c for c in pool}
    leads: dict[tuple[str, str], float] = {}
    for c in pool:  # best first: a file's first candidate is its best
        leads.setdefault((c.root, c.chunk.path), c.score)
        if len(leads) == FILES:
            break
    for (root, path), best in leads.items():
        for n, chunk in enumerate(matches_in(root, path, DEPTH)):
            target = best * (SHARE - STEP * n)
            other = by_id.get((root, chunk.id))
            if other is None:
                other = Candidate(chunk=chunk, root=root)
                pool.append(other)
                by_id[(root, chunk.id)] = other
            elif other.score >= target:
                continue
            other.score = target
            other.why.append("among the best matches inside the leading file")
    return sorted(pool, key=lambda c: (-c.score, c.root, c.chunk.id))
