"""Which chunk of a file `packet` shows first: a learned order of each file's pooled chunks.

`packet` hands the agent places to read; its first item of a file is where the agent looks first.
By chunk score alone that is often a short chunk whose few words are the question's (BM25's length
normalisation: a three-line `__aenter__` over the method that does the work) — on mined fix commits
the highest-scored chunk of a fixed file held a changed line half the time where some pooled chunk
of it did 0.89 of the time (docs/BENCHMARKS.md 67a). A linear model over a chunk's score relative
to its file's best, its lexical and title ranks, its length and kind, and how much of the question
its name and text hold orders each file's chunks; it was trained on those mined commits' pools with the changed
lines as labels (`training/train_lead_chunk.py`, folds grouped by repository) and ships as
`weights/lead_chunk.json`. The order of files is the file ranker's and is not touched here.

Pure: reads only the candidates and the question.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

from mcp_retrieval.file_features import (TEXT_CHARS, TEXT_STEMS, _cover, _question_words_in_order, _words,
                                         lone_identifier)
from mcp_retrieval.file_scorer import FileRanker, load
from mcp_retrieval.indexers.analysis import stem
from mcp_retrieval.retrieve import Candidate

MODEL_FILE = "lead_chunk.json"
FEATURES = (
    "rel",           # the chunk's score / its file's best chunk's
    "is_best",       # it is that best chunk
    "rank_inv",      # 1 / (1 + its place in the file by score)
    "tier_lexical",  # 1 / its rank in the lexical tier (0: not found there)
    "tier_title",    # 1 / its rank in the title tier
    "lines_log",     # log(1 + its lines)
    "type",          # a class or type definition (its members are often chunks of their own)
    "head",          # the file's head before its first definition (imports, module docs)
    "symbol_cover",  # share of its definition name's words the question holds
    "named",         # the question spells its definition's name
    "text_cover",    # share of the question's first stems its header and text hold
)


@functools.lru_cache(maxsize=1)
def shipped() -> FileRanker | None:
    return load(MODEL_FILE, FEATURES, "a file's chunks shown by score")


class Question:
    """What the features read of a question, worked out once for all its files."""

    def __init__(self, query: str):
        in_order = _question_words_in_order(query)
        self.words = set(in_order)
        self.lead_stems = list(dict.fromkeys(stem(w) for w in in_order))[:TEXT_STEMS]
        self.lowered = query.lower()


def chunk_features(question: Question, chunks: Sequence[Candidate]) -> list[list[float]]:
    """One row of FEATURES per chunk of one file."""
    best = max(c.score for c in chunks)
    place = {id(c): n for n, c in enumerate(sorted(chunks, key=lambda c: -c.score))}
    stems = question.lead_stems
    rows = []
    for c in chunks:
        seen = f"{c.chunk.header}\n{c.chunk.text[:TEXT_CHARS]}".lower()
        name = (c.chunk.symbol or "").rsplit(".", 1)[-1]
        lexical, title = c.ranks.get("lexical"), c.ranks.get("title")
        rows.append([c.score / best if best > 0 else 1.0, float(c.score >= best), 1.0 / (1 + place[id(c)]),
                     1.0 / lexical if lexical else 0.0, 1.0 / title if title else 0.0,
                     math.log1p(c.chunk.end_line - c.chunk.start_line + 1),
                     float(c.chunk.kind in ("class", "type")), float(c.chunk.kind == "module"),
                     _cover(_words(name), question.words) if name else 0.0,
                     float(bool(name) and name.lower() in question.lowered),
                     sum(s in seen for s in stems) / len(stems) if stems else 0.0])
    return rows


def within_files(model: FileRanker, query: str) -> Callable[[list[Candidate]], list[Candidate]] | None:
    """The order `file_rank.rank_files` shows one file's chunks in (given best score first): the
    model's, ties by score. A chunk moved ahead of a higher-scored one says so in its `why`.
    None (by score) for a question that is one identifier: the model learned from commit messages,
    never a bare name, and for `Axios` it put a long method of `Axios.js` before the class's own
    definition, which the symbol tier had first (docs/BENCHMARKS.md 67a)."""
    if lone_identifier(query):
        return None
    question = Question(query)

    def order(chunks: list[Candidate]) -> list[Candidate]:
        if len(chunks) < 2:
            return chunks
        scores = model.scores(chunk_features(question, chunks))
        ordered = [chunks[i] for i in sorted(range(len(chunks)), key=lambda i: (-scores[i], i))]
        if ordered[0] is not chunks[0]:
            ordered[0].why.append("first in its file by the learned chunk order")
        return ordered
    return order
