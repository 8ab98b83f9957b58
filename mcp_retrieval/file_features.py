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

import functools
import math
import re
from collections import Counter
from collections.abc import Sequence

from mcp_retrieval.indexers.analysis import STOPWORDS, split_identifier, stem, terms
from mcp_retrieval import rules
from mcp_retrieval.indexers.languages import PROSE_LANGUAGES, is_test_chunk, is_test_path
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
    "test",            # a test file, by its path (not one defining the identifier the question is)
    "prose",           # documentation (markdown, rst, text)
    "aside",           # under docs/, examples/, vendor/, scripts/, build/ ...
    "minority_lang",   # not the language most of the pool is in (C with C++, TypeScript with TSX)
    "depth_log",       # log(1 + folders above it)
    "path_cover",      # share of the question's words its path holds
    "stem_cover",      # share of its file name's words the question holds
    "symbol_cover",    # best share of a chunk's definition-name words the question holds
    "exact_name",      # the question is one identifier and a chunk defines it or the file is named so
    "folder_head",     # best_rel of the strongest other of the first five files in its folder (a package)
    # the three covers again with every word cut to its English stem: "argument validation" meets
    # `Validate.java`, "how routes are registered" `register_route` (docs/BENCHMARKS-history.md 41d)
    "path_cover_stemmed",    # path_cover, every word cut to its stem
    "stem_cover_stemmed",    # stem_cover, every word cut to its stem
    "symbol_cover_stemmed",  # symbol_cover, every word cut to its stem
    # what the file says, not only what it is called: a central file (`StringUtils.java` for "null-safe
    # string operations") holds the question's words in its code where its name does not (53d, 53e)
    "text_cover",      # the question's first 24 stems its chunks' first 1,000 characters hold, the rarer the more
)
TEXT_CHARS = 1000  # of each chunk's text `text_cover` reads (training pools keep as much: training.collect)
TEXT_STEMS = 24  # the question's first this many stems are looked for (a pasted issue's title and opening)
LONG_QUESTION_WORDS = 40  # more question words than this: a pasted issue or commit message (q_long)
QUESTION_FEATURES = ("q_short", "q_long", "q_identifier")  # <= 6 words; long; one identifier
# features that matter differently for a short question (a name, a few words) and a pasted issue
CROSSED = ("best_rel", "file_rank_inv", "path_cover", "stem_cover", "symbol_cover", "tier_lexical", "tier_path",
           "tier_symbol", "tier_history", "test", "aside", "minority_lang")
FEATURES = (*BASE_FEATURES, *QUESTION_FEATURES, *(f"{f}*q_short" for f in CROSSED), *(f"{f}*q_long" for f in CROSSED))


def question_words(query: str) -> set[str]:
    return set(_question_words_in_order(query))


def _question_words_in_order(query: str) -> list[str]:
    return [t for t in terms(query) if len(t) >= 3 and t not in STOPWORDS and not t.isdigit()]


def lone_identifier(query: str) -> bool:
    """The question is one identifier (`RouterGroup`, `pkg.mod.func`) of three or more characters."""
    stripped = query.strip()
    return bool(_IDENTIFIER.match(stripped)) and len(stripped) >= 3


def is_long_question(query: str) -> bool:
    return len(question_words(query)) > LONG_QUESTION_WORDS


@functools.lru_cache(maxsize=50_000)
def _words(text: str) -> frozenset[str]:
    """The identifier parts of a path, file name or definition name (paths repeat across calls)."""
    return frozenset(w for w in split_identifier(text) if len(w) >= 2)


@functools.lru_cache(maxsize=50_000)
def _stems(text: str) -> frozenset[str]:
    """`_words`, each cut to its English stem (Snowball)."""
    return frozenset(stem(w) for w in _words(text))


def _text_covers(qstems: Sequence[str], by_file: dict) -> dict:
    """Each file's `text_cover`: the question's stems found in its pooled chunks (headers and first
    TEXT_CHARS, lowercased) as substrings — a stem is a word's start, so `pars` meets `parse`,
    `parser` and `parseConfig` — each weighted by its rarity among the pool's files (1 + log((1 +
    files) / (1 + files holding it))), over the weight of them all. A word every pooled file says
    ("plugin" in a plugin manager) counts for little; one only a few say, for much (53e)."""
    held = {}
    for key, chunks in by_file.items():
        seen = "\n".join(f"{c.chunk.header}\n{c.chunk.text[:TEXT_CHARS]}" for c in chunks).lower()
        held[key] = [q for q in qstems if q in seen]
    files_holding = Counter(q for found in held.values() for q in found)
    weight = {q: 1.0 + math.log((1 + len(by_file)) / (1 + files_holding[q])) for q in qstems}
    total = sum(weight.values())
    return {key: (sum(weight[q] for q in found) / total if total else 0.0) for key, found in held.items()}


def _cover(part: frozenset[str] | set[str], whole: frozenset[str] | set[str]) -> float:
    return len(part & whole) / len(part) if part else 0.0


def _folder(path: str) -> str:
    return path.rpartition("/")[0]


def _file_stem(path: str) -> str:
    """The file name less its last suffix (`.bashrc` stays whole), as PurePosixPath.stem."""
    name = path.rpartition("/")[2]
    base, dot, _ = name.rpartition(".")
    return base if dot and base.strip(".") else name


# Languages one code base writes as one: a C++ project's `.h` headers read as C, a TypeScript
# project's `.tsx` components as TSX; neither is a minority language there (57h).
_FAMILY = {"cpp": "c", "tsx": "typescript"}


def _family(language: str) -> str:
    return _FAMILY.get(language, language)


_TIER_INDEX = {t: i for i, t in enumerate(TIERS)}
_COLUMNS = {f: i for i, f in enumerate((*BASE_FEATURES, *QUESTION_FEATURES))}
_CROSSED_COLUMNS = [_COLUMNS[f] for f in CROSSED]


def _test_file(path: str, best: Candidate) -> bool:
    """Whether a file reads as tests: by its path (`file_test_by_path`), so a Rust or Zig source
    file whose inline test module matched best is still the source it is; else by its best chunk."""
    if rules.current().file_test_by_path:
        return is_test_path(path)
    return is_test_chunk(path, best.chunk.symbol, best.chunk.language)


def file_features(query: str, candidates: Sequence[Candidate]) -> tuple[list[tuple[str, str]], list[list[float]]]:
    """(file keys `(root, path)` in order of first appearance, one row of FEATURES per file)."""
    if not candidates:
        return [], []
    top = max(c.score for c in candidates) or 1.0
    in_order = _question_words_in_order(query)
    qwords = set(in_order)
    qstems = frozenset(stem(w) for w in qwords)
    lead_stems = list(dict.fromkeys(stem(w) for w in in_order))[:TEXT_STEMS]
    stripped = query.strip()
    is_identifier = lone_identifier(query)
    name = re.split(r"[.:$]+", stripped)[-1].lower() if is_identifier else ""
    short = float(len(qwords) <= 6)
    long = float(len(qwords) > LONG_QUESTION_WORDS)
    by_file: dict[tuple[str, str], list[Candidate]] = {}
    for c in candidates:
        by_file.setdefault((c.root, c.chunk.path), []).append(c)
    languages = Counter(_family(c.chunk.language) for c in candidates[:30] if c.chunk.language not in PROSE_LANGUAGES)
    majority = languages.most_common(1)[0][0] if languages else ""
    best_score = {k: max(c.score for c in chunks) for k, chunks in by_file.items()}
    order = sorted(by_file, key=lambda k: -best_score[k])
    place = {k: i for i, k in enumerate(order)}
    head_folders: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for k in order[:5]:
        head_folders.setdefault((k[0], _folder(k[1])), []).append(k)
    keys, rows = [], []
    text_cover = _text_covers(lead_stems, by_file)
    for key, chunks in by_file.items():
        path = key[1]
        scores = sorted((c.score for c in chunks), reverse=True) + [0.0, 0.0]
        best = max(chunks, key=lambda c: c.score)
        tiers = [0.0] * len(TIERS)
        symbol_cover, symbol_cover_stemmed, exact = 0.0, 0.0, False
        for c in chunks:
            for tier, rank in c.ranks.items():
                i = _TIER_INDEX.get(tier)
                if i is not None and rank and 1.0 / rank > tiers[i]:
                    tiers[i] = 1.0 / rank
            if c.chunk.symbol:
                last = c.chunk.symbol.rsplit(".", 1)[-1]
                symbol_cover = max(symbol_cover, _cover(_words(last), qwords))
                symbol_cover_stemmed = max(symbol_cover_stemmed, _cover(_stems(last), qstems))
                exact = exact or (is_identifier and last.lower() == name)
        file_stem = _file_stem(path)
        exact = exact or (is_identifier and file_stem.lower() == name)
        row = [scores[0] / top, scores[1] / top, scores[2] / top, 1.0 / (1 + place[key]), math.log1p(len(chunks)),
               *tiers,
               float(_test_file(path, best) and not exact),
               float(best.chunk.language in PROSE_LANGUAGES),
               float(bool(_ASIDE.search(path))),
               float(bool(majority) and _family(best.chunk.language) != majority),
               math.log1p(path.count("/")),
               _cover(qwords, _words(path.replace("/", " "))), _cover(_words(file_stem), qwords),
               symbol_cover, float(exact),
               max((best_score[k] / top for k in head_folders.get((key[0], _folder(path)), []) if k != key),
                   default=0.0),
               _cover(qstems, _stems(path.replace("/", " "))), _cover(_stems(file_stem), qstems), symbol_cover_stemmed,
               text_cover[key],
               short, long, float(is_identifier)]
        row += [row[i] * short for i in _CROSSED_COLUMNS]
        row += [row[i] * long for i in _CROSSED_COLUMNS]
        keys.append(key)
        rows.append(row)
    return keys, rows
