"""What the file ranker knows about each candidate file of a question: one feature vector per file.

The pipeline's stages (lexical, title, dense, path, symbol, history, graph, ...) each rank chunks;
fusion and the rerank stage turn that into one chunk score. A file is then described by its
chunks' scores relative to the pool's best, by the best rank each tier gave any of its chunks,
by what kind of file it is (test, prose, aside from the source tree, the pool's majority
language), by how the question's words meet its path and its definitions' names, and by the
question's shape (few words, one identifier). `file_scorer` weighs these with weights learned
from mined commit history (training/README.md); the names below are the model file's columns.

Pure: reads only the candidates and the question.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import PurePosixPath

from mcp_retrieval.indexers.analysis import STOPWORDS, split_identifier, terms
from mcp_retrieval.indexers.languages import PROSE_LANGUAGES, is_test_chunk
from mcp_retrieval.retrieve import Candidate

TIERS = ("lexical", "title", "code", "dense", "dense_title", "path", "symbol", "message", "history", "graph")
_ASIDE = re.compile(r"(?i)(^|/)(docs?|examples?|samples?|benchmarks?|bench|vendor|third_party|thirdparty|"
                    r"scripts?|tools?|contrib|fixtures?|testdata|build|dist|ci|\.github)/")
_IDENTIFIER = re.compile(r"^[A-Za-z_][\w.:$]*$")

BASE_FEATURES = (
    "best_rel",        # the file's best chunk score / the pool's best
    "second_rel",      # its second chunk's
    "third_rel",       # its third chunk's
    "file_rank_inv",   # 1 / (1 + the file's place by best chunk), 1 for the first file
    "chunks_log",      # log(1 + its chunks in the pool)
    *(f"tier_{t}" for t in TIERS),  # 1 / the best rank that tier gave any of its chunks (0: not found)
    "test",            # a test file or test definition
    "prose",           # documentation (markdown, rst, text)
    "aside",           # under docs/, examples/, vendor/, scripts/, build/ ...
    "minority_lang",   # not the language most of the pool is in
    "depth_log",       # log(1 + folders above it)
    "path_cover",      # share of the question's words its path holds
    "stem_cover",      # share of its file name's words the question holds
    "symbol_cover",    # best share of a chunk's definition-name words the question holds
    "exact_name",      # the question is one identifier and a chunk defines it or the file is named so
    "folder_head",     # best_rel of the strongest other of the first five files in its folder (a package)
)
QUESTION_FEATURES = ("q_short", "q_long", "q_identifier")  # <= 6 words; > 40 words (a pasted issue); one identifier
# features that matter differently for a short question (a name, a few words) and a pasted issue
CROSSED = ("best_rel", "file_rank_inv", "path_cover", "stem_cover", "symbol_cover", "tier_lexical", "tier_path",
           "tier_symbol", "tier_history", "test", "aside", "minority_lang")
FEATURES = (*BASE_FEATURES, *QUESTION_FEATURES, *(f"{f}*q_short" for f in CROSSED), *(f"{f}*q_long" for f in CROSSED))


def question_words(query: str) -> set[str]:
    return {t for t in terms(query) if len(t) >= 3 and t not in STOPWORDS and not t.isdigit()}


def _words(text: str) -> set[str]:
    return {w for w in split_identifier(text) if len(w) >= 2}


def _cover(part: set[str], whole: set[str]) -> float:
    return len(part & whole) / len(part) if part else 0.0


def file_features(query: str, candidates: Sequence[Candidate]) -> tuple[list[tuple[str, str]], list[list[float]]]:
    """(file keys `(root, path)` in order of first appearance, one row of FEATURES per file)."""
    if not candidates:
        return [], []
    top = max(c.score for c in candidates) or 1.0
    qwords = question_words(query)
    stripped = query.strip()
    is_identifier = bool(_IDENTIFIER.match(stripped)) and len(stripped) >= 3
    name = re.split(r"[.:$]+", stripped)[-1].lower() if is_identifier else ""
    short = float(len(qwords) <= 6)
    long = float(len(qwords) > 40)
    by_file: dict[tuple[str, str], list[Candidate]] = {}
    for c in candidates:
        by_file.setdefault((c.root, c.chunk.path), []).append(c)
    languages = Counter(c.chunk.language for c in candidates[:30] if c.chunk.language not in PROSE_LANGUAGES)
    majority = languages.most_common(1)[0][0] if languages else ""
    order = sorted(by_file, key=lambda k: -max(c.score for c in by_file[k]))
    place = {k: i for i, k in enumerate(order)}
    best_rel = {k: max(c.score for c in by_file[k]) / top for k in order}
    head_folders: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for k in order[:5]:
        head_folders.setdefault((k[0], str(PurePosixPath(k[1]).parent)), []).append(k)
    keys, rows = [], []
    for key, chunks in by_file.items():
        path = key[1]
        scores = sorted((c.score for c in chunks), reverse=True) + [0.0, 0.0]
        best = max(chunks, key=lambda c: c.score)
        pure = PurePosixPath(path)
        path_words = _words(" ".join(pure.parts))
        stem_words = _words(pure.stem)
        symbol_cover = max((_cover(_words(c.chunk.symbol.rsplit(".", 1)[-1]), qwords)
                            for c in chunks if c.chunk.symbol), default=0.0)
        exact = is_identifier and (pure.stem.lower() == name or any(
            c.chunk.symbol and c.chunk.symbol.rsplit(".", 1)[-1].lower() == name for c in chunks))
        base = {
            "best_rel": scores[0] / top, "second_rel": scores[1] / top, "third_rel": scores[2] / top,
            "file_rank_inv": 1.0 / (1 + place[key]), "chunks_log": math.log1p(len(chunks)),
            **{f"tier_{t}": max((1.0 / c.ranks[t] for c in chunks if c.ranks.get(t)), default=0.0) for t in TIERS},
            "test": float(is_test_chunk(path, best.chunk.symbol, best.chunk.language)),
            "prose": float(best.chunk.language in PROSE_LANGUAGES),
            "aside": float(bool(_ASIDE.search(path))),
            "minority_lang": float(bool(majority) and best.chunk.language != majority),
            "depth_log": math.log1p(len(pure.parts) - 1),
            "path_cover": _cover(qwords, path_words), "stem_cover": _cover(stem_words, qwords),
            "symbol_cover": symbol_cover, "exact_name": float(exact),
            "folder_head": max((best_rel[k] for k in head_folders.get((key[0], str(pure.parent)), []) if k != key),
                               default=0.0),
            "q_short": short, "q_long": long, "q_identifier": float(is_identifier),
        }
        row = [base[f] for f in (*BASE_FEATURES, *QUESTION_FEATURES)]
        row += [base[f] * short for f in CROSSED]
        row += [base[f] * long for f in CROSSED]
        keys.append(key)
        rows.append(row)
    return keys, rows
