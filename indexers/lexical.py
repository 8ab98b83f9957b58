"""Tantivy lexical index over chunks (BM25), fed by the code-aware analyser.

One document per chunk: `id` and `path` as raw stored terms (for lookups and deletes),
`body` (header + text), `symbol` and `pathtok` analysed by `indexers.analysis`. Writes go
through `LexicalIndex.replace`, one commit per batch; a crash before the commit leaves the
previous commit intact (Tantivy's own guarantee).
"""

from __future__ import annotations

import json
import logging
import math
import shutil
import threading
import time
from collections.abc import Iterable
from pathlib import Path

import tantivy

from mcp_retrieval.indexers.analysis import path_terms, query_terms, stem, terms
from mcp_retrieval.indexers.chunk import Chunk

# Bump when `terms`/`path_terms` change what a document indexes: every file is then re-analysed once.
# (English stems were tried in session 3 and dropped: docs/BENCHMARKS-history.md 8a.)
ANALYZER_VERSION = "1"
FIELD_BOOSTS = {"body": 1.0, "symbol": 2.0, "pathtok": 1.5}
_WRITER_HEAP = 64_000_000
log = logging.getLogger(__name__)


def _schema() -> tantivy.Schema:
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("id", stored=True, tokenizer_name="raw")
    sb.add_text_field("path", stored=True, tokenizer_name="raw")
    sb.add_text_field("body", stored=False, tokenizer_name="whitespace", index_option="freq")
    sb.add_text_field("symbol", stored=False, tokenizer_name="whitespace", index_option="freq")
    sb.add_text_field("pathtok", stored=False, tokenizer_name="whitespace", index_option="freq")
    return sb.build()


RECENT_QUERIES = 8  # built BM25 queries kept by text (`LexicalIndex._query`)
STEM_FORMS = 200  # the commonest terms beginning with a word's stem that `known` stems


class LexicalIndex:
    def __init__(self, directory: Path):
        directory.mkdir(parents=True, exist_ok=True)
        self.schema = _schema()
        self.directory = directory
        self.index = tantivy.Index(self.schema, path=str(directory))
        self._lock = threading.Lock()
        self._queries: dict[str, object] = {}  # question text -> its built query, newest last
        self._queries_lock = threading.Lock()

    def reopen(self, *, empty: bool = False) -> None:
        """Read the index from disk again (a part may have changed under it); `empty` starts over."""
        with self._lock:
            if empty:
                shutil.rmtree(self.directory, ignore_errors=True)
                self.directory.mkdir(parents=True, exist_ok=True)
            self.index = tantivy.Index(self.schema, path=str(self.directory))
            with self._queries_lock:
                self._queries.clear()

    def replace(self, paths: Iterable[str], chunks: Iterable[Chunk], *, everything: bool = False) -> None:
        """Delete every document of `paths` (or all of them), add `chunks`, commit once."""
        with self._lock:
            writer = self.index.writer(heap_size=_WRITER_HEAP, num_threads=1)
            try:
                if everything:
                    writer.delete_all_documents()
                for path in paths:
                    writer.delete_documents_by_term("path", path)
                for chunk in chunks:
                    writer.add_document(tantivy.Document(
                        id=chunk.id,
                        path=chunk.path,
                        body=" ".join(terms(chunk.header + "\n" + chunk.text)),
                        symbol=" ".join(terms(chunk.symbol or "")),
                        pathtok=" ".join(path_terms(chunk.path)),
                    ))
                writer.commit()
                writer.wait_merging_threads()
            except BaseException:
                writer.rollback()
                raise
            finally:
                del writer  # releases Tantivy's writer lock
        self.index.reload()

    def deleted_share(self) -> float:
        """The share of documents deleted but still in the index: Tantivy drops a deleted
        document only when its segment merges; until then every search steps over it and its
        terms still count in BM25's statistics (a search on sympy 42% deleted took 3.2 ms, 1.8
        rebuilt; BENCHMARKS 29b). Read from the index's meta.json; 0.0 if it cannot be read."""
        try:
            segments = json.loads((self.directory / "meta.json").read_text())["segments"]
            total = sum(s["max_doc"] for s in segments)
            deleted = sum((s.get("deletes") or {}).get("num_deleted_docs", 0) for s in segments)
        except (OSError, ValueError, KeyError, TypeError):
            return 0.0
        return deleted / total if total else 0.0

    def rebuild(self, chunks: Iterable[Chunk]) -> None:
        """Replace every document by `chunks` in one commit, leaving no deleted document behind
        (a crash before the commit keeps the index as it was)."""
        t0 = time.perf_counter()
        share = self.deleted_share()
        self.replace([], chunks, everything=True)
        log.info("lexical index rebuilt (%.0f%% of its documents were deleted) in %.1f s",
                 100 * share, time.perf_counter() - t0)

    def _query(self, query: str):
        """The BM25 query for `query`, built once for the last few texts: one question is searched
        whole, then within each file it names and among the files history suggests, and building
        it (analysing a long report's terms) cost as much as a search (BENCHMARKS 26b)."""
        with self._queries_lock:
            if query in self._queries:
                return self._queries[query]
        built = self._build_query(query)
        with self._queries_lock:
            self._queries[query] = built
            while len(self._queries) > RECENT_QUERIES:
                self._queries.pop(next(iter(self._queries)))
        return built

    def _build_query(self, query: str):
        counts = query_terms(query)
        if not counts:
            return None
        clauses = []
        for term, count in counts.items():
            weight = 1.0 + math.log(count)
            for field, boost in FIELD_BOOSTS.items():
                q = tantivy.Query.term_query(self.schema, field, term)
                clauses.append((tantivy.Occur.Should, tantivy.Query.boost_query(q, boost * weight)))
        return tantivy.Query.boolean_query(clauses)

    def search_all_terms(self, text: str, limit: int) -> list[tuple[str, float]]:
        """(chunk id, BM25 score) of chunks whose body holds every term of `text`, best first: the
        few that can hold it verbatim (the index keeps no positions for a phrase query)."""
        counts = query_terms(text)
        if not counts:
            return []
        return self._run(tantivy.Query.boolean_query([(tantivy.Occur.Must, tantivy.Query.term_query(self.schema, "body", t))
                                                      for t in counts]), limit, None)

    def best_in_files(self, query: str, paths: list[str], scan: int = 40) -> dict[str, str]:
        """The best-matching chunk id of each file in `paths`, from one search over them all (a
        search per file cost 12 query builds and searches: 34 against 5 ms on sympy); a file crowded
        out of the first `scan` hits per file is searched alone. Files with no match are left out."""
        query_obj = self._query(query)
        if query_obj is None or not paths:
            return {}
        files = tantivy.Query.boolean_query([(tantivy.Occur.Should, tantivy.Query.term_query(self.schema, "path", p))
                                             for p in dict.fromkeys(paths)])
        searcher = self.index.searcher()
        result = searcher.search(tantivy.Query.boolean_query([(tantivy.Occur.Must, files),
                                                              (tantivy.Occur.Must, query_obj)]), max(1, scan * len(paths)))
        best: dict[str, str] = {}
        for _, address in result.hits:
            doc = searcher.doc(address)
            best.setdefault(doc["path"][0], doc["id"][0])
            if len(best) == len(paths):
                break
        for path in set(paths) - set(best):  # crowded out of the scan by long files: ask that file alone
            if hit := self._run(query_obj, 1, path):
                best[path] = hit[0][0]
        return best

    def search(self, query: str, limit: int = 60, *, path: str | None = None) -> list[tuple[str, float]]:
        """(chunk id, BM25 score), best first; `path` restricts the search to one file."""
        query_obj = self._query(query)
        return [] if query_obj is None else self._run(query_obj, limit, path)

    def _run(self, query_obj, limit: int, path: str | None) -> list[tuple[str, float]]:
        if path is not None:
            query_obj = tantivy.Query.boolean_query([
                (tantivy.Occur.Must, tantivy.Query.term_query(self.schema, "path", path)),
                (tantivy.Occur.Must, query_obj)])
        searcher = self.index.searcher()
        result = searcher.search(query_obj, limit)
        return [(searcher.doc(address)["id"][0], float(score)) for score, address in result.hits]

    def known(self, words: Iterable[str]) -> int:
        """How many of `words` (analysed terms, as `terms` makes them) some document's body holds,
        as written or in another form of the same English stem (`parsing` where the code says
        `parse`, `serialization` where it says `serialize`)."""
        searcher = self.index.searcher()
        return sum(searcher.doc_freq("body", w) > 0 or _known_by_stem(searcher, w) for w in words)

    def num_docs(self) -> int:
        self.index.reload()
        return self.index.searcher().num_docs


def _known_by_stem(searcher, word: str) -> bool:
    return next(stem_forms(searcher, word), None) is not None


def stem_forms(searcher, word: str):
    """(term, chunks holding it) of the body terms that share `word`'s English stem: the terms
    that begin with the stem (the term dictionary walked from it, at most STEM_FORMS of them),
    each stemmed in turn. A stem ending in `i` is walked without it: Snowball writes a final `y`
    as `i`, so `applied` and `apply` share `appli`, which `apply` does not begin with."""
    root = stem(word)
    prefix = root[:-1] if root.endswith("i") else root
    if len(prefix) < 3:
        return
    yield from ((term, count) for term, count in searcher.terms_with_prefix("body", prefix, limit=STEM_FORMS)
                if stem(term) == root)
