"""The code-aware analyser shared by indexing and querying.

Tantivy's built-in tokenizers do not split `getHTTPResponse` or `merge_environment_settings`,
so analysis happens here, in Python, and Tantivy indexes the result with its whitespace
tokenizer. Using one function for documents and queries keeps the two sides identical.
Every identifier yields itself (lowercased) and, when compound, its parts.
"""

from __future__ import annotations

import functools
import re
from collections import Counter

from py_rust_stemmers import SnowballStemmer

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+(?:\.[0-9]+)*")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
# Where a camelCase name's words meet (`getHTTPResponse` -> get|HTTP|Response), for the readers
# that rewrite a name rather than split it into terms (the static embedder, Elixir's file names).
CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
MAX_TERM_LEN = 64
# English function words: dropped from queries (never from the index), where a pasted bug report
# would otherwise spend most of its clauses on "the", "is", "when".
STOPWORDS = frozenset("""a an and are as at be been being but by can could did do does for from had has have how i if
in into is it its just like may me might my no not of on or our should so some such than that the their them then
there these they this those to too us was we were what when where which while who why will with would you your
also any all get got one two use used using very want""".split())


_STEMMER = SnowballStemmer("english")


@functools.lru_cache(maxsize=50_000)
def stem(word: str) -> str:
    """A word's English (Snowball) stem, for the readers that let `parsing` meet `parse`: the file
    ranker's covers and know/miss. The index itself holds words unstemmed (BENCHMARKS-history 8a)."""
    return _STEMMER.stem_word(word)


def split_identifier(ident: str) -> list[str]:
    """`getHTTPResponse_code` -> ['get', 'http', 'response', 'code']."""
    parts: list[str] = []
    for piece in ident.split("_"):
        parts.extend(p.lower() for p in _CAMEL.findall(piece))
    return [p for p in parts if p]


def terms(text: str) -> list[str]:
    """Index terms of a text: whole identifiers plus their compound parts, lowercased."""
    out: list[str] = []
    for token in _IDENT.findall(text):
        if len(token) <= MAX_TERM_LEN:
            out.extend(_token_terms(token))
    return out


def term_set(text: str) -> set[str]:
    """`set(terms(text))`, each distinct identifier split once (a chunk repeats its names)."""
    return {t for token in set(_IDENT.findall(text)) if len(token) <= MAX_TERM_LEN for t in _token_terms(token)}


@functools.lru_cache(maxsize=1 << 16)
def _token_terms(token: str) -> tuple[str, ...]:
    """One identifier's terms (itself, then its parts). Cached: a code base reuses a small
    vocabulary, and splitting every occurrence again was most of the analyser's time."""
    whole = token.lower().strip("_") or token.lower()
    if token[0].isdigit():
        return (whole,)
    parts = split_identifier(token)
    if len(parts) > 1 or (parts and parts[0] != whole):
        return (whole, *(p for p in parts if p != whole))
    return (whole,)


def path_terms(path: str) -> list[str]:
    """Terms of a workspace path: directories, file stem and their identifier parts."""
    return terms(re.sub(r"[/\\.\-]", " ", path))


def query_terms(text: str, limit: int = 256) -> Counter[str]:
    """Distinct query terms with their counts, the `limit` most frequent (then first seen)."""
    counts = Counter(t for t in terms(text) if t not in STOPWORDS)
    if len(counts) <= limit:
        return counts
    return Counter(dict(counts.most_common(limit)))

