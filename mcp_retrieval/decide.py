"""Stage 7: know or miss, with a confidence computed from the evidence.

Evidence for the top candidate: how much of the question's vocabulary it covers, how similar
it is by meaning (dense cosine), whether lexical and dense agree on the head, whether it sits
in a file the question names, and the score gap to the runner-up. Weak on both the lexical
and the semantic side, with no exact anchor, is `miss` (abstain) — not a broad fallback.
Thresholds were calibrated with `python -m mcp_retrieval.bench calibrate`: the 62 SWE-bench dev
issues (all answerable: lowest unanchored semantic match 0.61, lowest anchored 0.43) against 72
off-topic questions over the same nine indexes (highest semantic match 0.33, coverage up to
0.5) — see docs/BENCHMARKS-history.md, "Abstain calibration".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mcp_retrieval.indexers.analysis import STOPWORDS, terms
from mcp_retrieval.models import Know, Miss
from mcp_retrieval.retrieve import Candidate

MIN_COVERAGE = 0.30
COVERAGE_TERMS = 8
MIN_DENSE = 0.40
# Without vectors a short everyday question ("radix tree path matching") rarely finds most of its
# words in one chunk, though the workspace uses them; an off-topic one ("the capital of
# Mongolia") uses words the workspace never does. So a question most of whose words the
# workspace knows, and whose first three chunks together hold some of them, is answered too
# (semble_dev without vectors: misses 31 -> 10 of 397; off-topic questions answered 11 -> 14 of
# 187; docs/BENCHMARKS-history.md 38c). A word counts as known in another form of its English stem
# too (`parsing` where the code says `parse`): misses 4 -> 0 with the static model, 9 -> 3
# without vectors, off-topic questions answered 11 -> 21 and 13 -> 21 of 320 (docs/BENCHMARKS.md 44c).
MIN_KNOWN_WORDS = 2 / 3
MIN_HEAD_COVERAGE = 0.2
HEAD_CHUNKS = 3



@dataclass(frozen=True)
class Evidence:
    coverage: float
    dense_top: float
    agree: bool
    anchored: bool
    path_match: str | None
    top_score: float
    gap: float
    known_words: float = 1.0  # share of the question's words the lexical index holds anywhere
    head_coverage: float = 0.0  # coverage by the first HEAD_CHUNKS chunks together


def salient_terms(query: str) -> set[str]:
    return {t for t in terms(query) if len(t) >= 3 and t not in STOPWORDS and not t.isdigit()}


def gather(query: str, ranked: Sequence[Candidate], anchors_hit: set[str], anchored_files: set[str],
           restatements: Sequence[str] = (), known: Callable[[set[str]], int] | None = None) -> Evidence:
    """`restatements`: the host model's rewrite and the facets (sub-queries) of the question; the
    top chunk's coverage is the best over the question and these (a two-facet question's best
    chunk answers one facet). `known`: how many of some words the workspace's lexical index holds."""
    top = ranked[0]
    have = set(terms(top.chunk.header + "\n" + top.chunk.text))
    wanted = salient_terms(query)
    coverage = max(_coverage(words, have) for words in (wanted, *map(salient_terms, restatements)))
    head: set[str] = set()
    for c in ranked[:HEAD_CHUNKS]:
        head |= set(terms(c.chunk.header + "\n" + c.chunk.text))
    known_words = known(wanted) / len(wanted) if known is not None and wanted else 1.0
    dense_top = max((c.raw.get("dense", 0.0) for c in ranked[:10]), default=0.0)
    head_lex = {c.chunk.id for c in sorted(ranked, key=lambda c: c.ranks.get("lexical", 10**6))[:5] if "lexical" in c.raw}
    head_dense = {c.chunk.id for c in sorted(ranked, key=lambda c: c.ranks.get("dense", 10**6))[:5] if "dense" in c.raw}
    second = ranked[1].score if len(ranked) > 1 else 0.0
    gap = (top.score - second) / top.score if top.score > 0 else 0.0
    anchored = bool(anchors_hit & {c.chunk.id for c in ranked[:10]})
    path_match = top.chunk.path if top.chunk.path in anchored_files else None
    return Evidence(coverage, dense_top, bool(head_lex & head_dense), anchored, path_match, top.score, gap,
                    known_words, _coverage(wanted, head))


def _coverage(wanted: set[str], have: set[str]) -> float:
    # A pasted issue has hundreds of terms and no chunk holds them all: cover a handful to count as evidence.
    return min(1.0, len(wanted & have) / min(len(wanted), COVERAGE_TERMS)) if wanted else 0.0


def decide(ev: Evidence, has_vectors: bool, similarity_decides: bool = True) -> Know | Miss:
    """Anchored evidence is always `know`; so is a question whose words the workspace holds (the
    lexical evidence), or, with a sentence model's vectors (`similarity_decides`; not the static
    token table, whose cosines are high for any text), one whose meaning a chunk matches. Weak on
    both is a miss. (Until session 36, with every chunk embedded the dense match decided alone:
    semble_dev's eight small repositories with MiniLM, misses 2 -> 0 of 155, off-topic questions
    answered 1 -> 6 of 128; docs/BENCHMARKS.md 40e.)"""
    dense = has_vectors and similarity_decides and ev.dense_top >= MIN_DENSE
    lexical = ev.coverage >= MIN_COVERAGE or (ev.known_words >= MIN_KNOWN_WORDS
                                              and ev.head_coverage >= MIN_HEAD_COVERAGE)
    weak = not (ev.anchored or lexical or dense)
    if weak:
        return Miss(reason="abstain", escalate_to="ask_user",
                    detail=f"weak evidence: covers {ev.coverage:.0%} of the question's terms, "
                           f"best semantic match {ev.dense_top:.2f}")
    dense_part = max(0.0, min(1.0, (ev.dense_top - 0.2) / 0.5)) if has_vectors else ev.coverage
    confidence = 0.4 * ev.coverage + 0.3 * dense_part + 0.1 * ev.agree + 0.15 * ev.anchored + 0.05 * min(1.0, ev.gap * 5)
    return Know(confidence=round(max(0.05, min(1.0, confidence)), 3), top_score=round(ev.top_score, 4),
                score_gap=round(ev.gap, 4), lexical_dense_agree=ev.agree, path_match=ev.path_match)
