"""A file's module-level code after its definitions, in `context`'s pool.

The lines outside any definition (a module's docstring, its imports, top-level statements) are a
chunk of their own (`kind` "module"). They match whatever the question names that the file
imports, and the path tier ranks them first for a file the question names, so a tight window
spent 150-400 tokens on an import block ahead of the function the fix changes (requests-2674:
`adapters.py` lines 1-40 before `HTTPAdapter.send`). Here such a chunk ranks just below the best
definition of its file that is in the pool; a file with no definition in the pool keeps its
module chunk where it was (it is then the file's only evidence). The file's own standing is
unchanged: its best chunk keeps its score.

Pure: candidates in, candidates out.
"""

from __future__ import annotations

from collections.abc import Sequence

from mcp_retrieval import rules
from mcp_retrieval.retrieve import Candidate

BELOW = 0.99  # the module chunk's share of its file's best definition


def after_definitions(candidates: Sequence[Candidate]) -> list[Candidate]:
    """Candidates best first, each module chunk below its file's best definition in the pool."""
    if not rules.current().module_heads_after_definitions:
        return list(candidates)
    best: dict[tuple[str, str], float] = {}
    for c in candidates:
        if c.chunk.kind != "module":
            key = (c.root, c.chunk.path)
            best[key] = max(best.get(key, c.score), c.score)
    for c in candidates:
        top = best.get((c.root, c.chunk.path))
        if c.chunk.kind == "module" and top is not None and c.score >= top:
            c.score = BELOW * top
            c.why.append("module-level code, after the file's definitions")
    return sorted(candidates, key=lambda c: (-c.score, c.root, c.chunk.id))
