"""The whole-file BM25 baseline: one Tantivy document per file, same analyser as the product."""

from __future__ import annotations

from pathlib import Path

import tantivy

from mcp_retrieval.indexers.analysis import path_terms, query_terms, terms


class FileBM25:
    def __init__(self, directory: Path):
        directory.mkdir(parents=True, exist_ok=True)
        sb = tantivy.SchemaBuilder()
        sb.add_text_field("path", stored=True, tokenizer_name="raw")
        sb.add_text_field("body", stored=False, tokenizer_name="whitespace", index_option="freq")
        self.schema = sb.build()
        self.index = tantivy.Index(self.schema, path=str(directory))
        self.mtimes: dict[str, int] = {}

    def sync(self, root: Path, paths: list[str]) -> None:
        current = {}
        for p in paths:
            try:
                current[p] = (root / p).stat().st_mtime_ns
            except OSError:
                pass
        changed = [p for p, m in current.items() if self.mtimes.get(p) != m]
        removed = [p for p in self.mtimes if p not in current]
        if not changed and not removed:
            return
        writer = self.index.writer(heap_size=100_000_000, num_threads=1)
        for p in [*changed, *removed]:
            writer.delete_documents_by_term("path", p)
        for p in changed:
            text = (root / p).read_text(encoding="utf-8", errors="replace")
            writer.add_document(tantivy.Document(path=p, body=" ".join(path_terms(p) + terms(text))))
        writer.commit()
        writer.wait_merging_threads()
        del writer
        self.index.reload()
        self.mtimes = current

    def search(self, query: str, limit: int) -> list[str]:
        clauses = [(tantivy.Occur.Should, tantivy.Query.term_query(self.schema, "body", t)) for t in query_terms(query)]
        if not clauses:
            return []
        searcher = self.index.searcher()
        hits = searcher.search(tantivy.Query.boolean_query(clauses), limit).hits
        return [searcher.doc(a)["path"][0] for _, a in hits]
