"""The rest of a split definition, for `context`'s pool.

The chunker cuts a definition too long for one chunk into pieces at statement boundaries
(`indexers.chunk._split_large`); each piece is retrieved on its own merits. A question often
matches one piece (the part that names what it asks about) while the fix lands in the next, and
a window that shows the second half of `Session.request` without its first half answers half of
it. So a piece in the head of the pool brings its sibling pieces along, just below it: the
assembler then shows the whole definition when the budget has room, and otherwise the next
candidate as before. Definitions bigger than MAX_SHARE of the budget are left alone — a
500-line docstring-heavy entry point (`latex`, `lambdify`) would fill the window with prose, and
in a wide window a long constructor brought whole by its pieces (weak ones among them, each at
SHARE of the best) pushes the other files' candidates out (docs/BENCHMARKS-history.md 33f, 35d).

Pure but for the `pieces_of` callback, which reads the stored chunks of one definition.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from mcp_retrieval.indexers.store import StoredChunk
from mcp_retrieval import scoring
from mcp_retrieval.retrieve import Candidate

HEAD = 12  # pieces among the first this many candidates bring their siblings
SHARE = 0.9  # a sibling piece ranks at this share of the piece that brought it
MAX_SHARE = 0.4  # the whole definition must cost at most this share of the budget (0.5 until 33f, 0.3 until 35d)
ADJACENT = 2  # pieces of one definition follow each other within this many lines


def definition_pieces(chunk: StoredChunk, file_chunks: Sequence[StoredChunk]) -> list[StoredChunk]:
    """The contiguous run of same-symbol, same-kind chunks around `chunk` (itself included), in
    line order; just `[chunk]` when it is not a piece of a split definition. `file_chunks`: the
    file's chunks, or only those of `chunk`'s symbol and kind."""
    same = [c for c in file_chunks if c.symbol == chunk.symbol and c.kind == chunk.kind]
    same.sort(key=lambda c: c.start_line)
    at = next((i for i, c in enumerate(same) if c.id == chunk.id), None)
    if at is None:
        return [chunk]
    lo = hi = at
    while lo > 0 and 0 <= same[lo].start_line - same[lo - 1].end_line <= ADJACENT:
        lo -= 1
    while hi + 1 < len(same) and 0 <= same[hi + 1].start_line - same[hi].end_line <= ADJACENT:
        hi += 1
    return same[lo:hi + 1]


def with_continuations(candidates: Sequence[Candidate], budget: int,
                       pieces_of: Callable[[str, StoredChunk], Sequence[StoredChunk]]) -> list[Candidate]:
    """The pool with each head piece's siblings at SHARE of its score (added when missing, raised
    when lower), best first. `pieces_of(root, chunk)`: the stored chunks of `chunk`'s definition
    (its file, symbol and kind)."""
    pool = list(candidates)
    by_id = {(c.root, c.chunk.id): c for c in pool}
    stored: dict[tuple, Sequence[StoredChunk]] = {}  # a definition's pieces, read once for all its heads
    for c in pool[:HEAD]:  # a copy: the pieces appended below are not heads
        if not c.chunk.symbol:
            continue
        key = (c.root, c.chunk.path, c.chunk.symbol, c.chunk.kind)
        if key not in stored:
            stored[key] = pieces_of(c.root, c.chunk)
        run = definition_pieces(c.chunk, stored[key])
        if len(run) < 2 or sum(p.tokens for p in run) > MAX_SHARE * budget:
            continue
        target = SHARE * c.score
        for piece in run:
            other = by_id.get((c.root, piece.id))
            if other is None:
                other = Candidate(chunk=piece, root=c.root)
                pool.append(other)
                by_id[(c.root, piece.id)] = other
            elif other.score >= target:
                continue
            scoring.inherit(other, target)
            other.why.append(f"the rest of {c.chunk.symbol}")
    return sorted(pool, key=lambda c: (-c.score, c.root, c.chunk.id))
