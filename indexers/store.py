"""The manifest and chunk store: one SQLite database in the index directory.

Tables: `files` (the manifest: path, size, mtime, sha256), `chunks` (location, symbol, text,
tokens, whether its vector is in LanceDB), `symbols` and `edges` (the code graph), `meta`.
A file's rows are replaced in one transaction, after its Tantivy commit: the manifest is
written last, so a crash leaves the file looking unindexed and the next run redoes it.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from mcp_retrieval.indexers.chunk import Chunk
from mcp_retrieval.indexers.languages import is_test_chunk
from mcp_retrieval.indexers.transactions import write_transaction

PRIORITY_LAST = 3  # embed order: 0 code, 1 tests, 2 prose, 3 generated (see `embed_priority`)

SCHEMA_VERSION = 2
IN_BATCH = 500  # values of one `IN (...)` list (`Store._rows_in`)

_DDL = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY, size INTEGER, mtime_ns INTEGER, sha256 TEXT, language TEXT, indexed_at REAL);
CREATE TABLE IF NOT EXISTS chunks (
    id TEXT PRIMARY KEY, path TEXT, start_line INTEGER, end_line INTEGER, symbol TEXT, kind TEXT,
    language TEXT, header TEXT, text TEXT, sha256 TEXT, tokens INTEGER, embedded INTEGER DEFAULT 0,
    priority INTEGER DEFAULT 0);
CREATE INDEX IF NOT EXISTS chunks_path ON chunks(path);
CREATE INDEX IF NOT EXISTS chunks_pending ON chunks(embedded, priority);
CREATE TABLE IF NOT EXISTS symbols (
    id TEXT PRIMARY KEY, path TEXT, name TEXT, qualname TEXT, kind TEXT, start_line INTEGER, end_line INTEGER);
CREATE INDEX IF NOT EXISTS symbols_path ON symbols(path);
CREATE INDEX IF NOT EXISTS symbols_name ON symbols(name);
CREATE INDEX IF NOT EXISTS symbols_qualname ON symbols(qualname);
-- a dotted name's last part finds its definitions; file rows (named `x.py`, qualified as the module)
-- are matched apart (see `Store.definitions_ending`)
CREATE INDEX IF NOT EXISTS symbols_name_nocase ON symbols(name COLLATE NOCASE);
CREATE INDEX IF NOT EXISTS symbols_files ON symbols(qualname, path, start_line) WHERE kind='file';
CREATE TABLE IF NOT EXISTS edges (
    path TEXT, source TEXT, target TEXT, type TEXT, line INTEGER);
-- by path: a changed file's rows are replaced (the type column came with a per-question read of a
-- file's imports, since dropped; an index on (path, type) serves a path alone as well)
DROP INDEX IF EXISTS edges_path;
CREATE INDEX IF NOT EXISTS edges_path_type ON edges(path, type);
"""


@dataclass(frozen=True)
class FileRecord:
    path: str
    size: int
    mtime_ns: int
    sha256: str


@dataclass(frozen=True)
class StoredChunk:
    id: str
    path: str
    start_line: int
    end_line: int
    symbol: str | None
    kind: str
    language: str
    header: str
    text: str
    sha256: str
    tokens: int
    embedded: bool
    priority: int = 0  # embed order class: 0 code, 1 tests, 2 prose, 3 generated


_CHUNK_COLUMNS = "id, path, start_line, end_line, symbol, kind, language, header, text, sha256, tokens, embedded"
_READ_COLUMNS = _CHUNK_COLUMNS + ", priority"


class Store:
    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._lock = threading.RLock()
        self._path = path
        self._bulk: sqlite3.Connection | None = None  # the big reads' own connection (`_bulk_rows`)
        self._bulk_lock = threading.Lock()
        self._counts: dict[str, int] | None = None
        self._counts_key: int | None = None
        with self._lock:
            version = self._version()
            if version is not None and version != str(SCHEMA_VERSION):  # older layout: rebuild from scratch
                for table in ("meta", "files", "chunks", "symbols", "edges"):
                    self._db.execute(f"DROP TABLE IF EXISTS {table}")
            self._db.executescript(_DDL)
            if self.get_meta("schema_version") is None:
                self.set_meta("schema_version", str(SCHEMA_VERSION))

    def _version(self) -> str | None:
        try:
            row = self._db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        except sqlite3.OperationalError:
            return None
        return row[0] if row else None

    def close(self) -> None:
        with self._lock:
            self._db.close()
        with self._bulk_lock:
            if self._bulk is not None:
                self._bulk.close()
                self._bulk = None

    # --- meta --------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    # --- manifest ----------------------------------------------------------------------
    def files(self, paths: Sequence[str] | None = None) -> dict[str, FileRecord]:
        """The record of every indexed file, or of those of `paths` the index holds."""
        if paths is None:
            with self._lock:
                rows = self._db.execute("SELECT path, size, mtime_ns, sha256 FROM files").fetchall()
            return {r[0]: FileRecord(*r) for r in rows}
        return {r[0]: FileRecord(*r) for r in self._rows_in("SELECT path, size, mtime_ns, sha256 FROM files", "path", paths)}

    def files_under(self, scopes: Sequence[str]) -> dict[str, FileRecord]:
        """The records of the indexed files at or below these workspace paths (a folder's files by
        a range on the primary key: `dir/` <= path < `dir0`, since "0" follows "/")."""
        out: dict[str, FileRecord] = {}
        for scope in dict.fromkeys(s.strip("/") for s in scopes):
            rows = self.query("SELECT path, size, mtime_ns, sha256 FROM files WHERE path = ? OR (path >= ? AND path < ?)",
                              (scope, scope + "/", scope + "0"))
            out.update((r[0], FileRecord(*r)) for r in rows)
        return out

    @contextmanager
    def _transaction(self):
        """A write of many rows in one commit (`write_transaction`), under this store's lock."""
        with self._lock:
            try:
                with write_transaction(self._db) as cur:
                    yield cur
            finally:
                self._counts = None

    def file(self, path: str) -> FileRecord | None:
        return self.files([path]).get(path)

    def touch_files(self, records: Sequence[FileRecord]) -> None:
        """Same content, new stat: update size/mtime only."""
        with self._transaction() as cur:
            cur.executemany("UPDATE files SET size=?, mtime_ns=? WHERE path=?",
                            [(r.size, r.mtime_ns, r.path) for r in records])

    def replace_files(self, removed: Iterable[str], records: Sequence[tuple[FileRecord, str]],
                      chunks: Sequence[tuple[Chunk, int]], symbols: Sequence[tuple], edges: Sequence[tuple],
                      embedded_ids: set[str] = frozenset()) -> None:
        """Atomically replace everything stored for these files (manifest row last). When files
        come or go, `paths_changed` is stamped in the same transaction (`paths_stamp`); when their
        definitions or references changed, not only their lines, `graph_changed` or
        `references_changed` (`graph_stamp`)."""
        paths = list(dict.fromkeys([*removed, *(r.path for r, _ in records)]))
        with self._transaction() as cur:
            listed = {r[0] for r in self._rows_in("SELECT path FROM files", "path", paths)}  # in this transaction
            reshaped = self._graph_change(paths, symbols, edges)
            for table in ("chunks", "symbols", "edges", "files"):
                cur.executemany(f"DELETE FROM {table} WHERE path=?", [(p,) for p in paths])
            cur.executemany(
                f"INSERT OR REPLACE INTO chunks({_CHUNK_COLUMNS}, priority) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                [(c.id, c.path, c.start_line, c.end_line, c.symbol, c.kind, c.language, c.header, c.text,
                  c.sha256, tokens, int(c.id in embedded_ids), embed_priority(c)) for c, tokens in chunks])
            cur.executemany("INSERT OR REPLACE INTO symbols VALUES (?,?,?,?,?,?,?)", symbols)
            cur.executemany("INSERT INTO edges VALUES (?,?,?,?,?)", edges)
            now = time.time()
            cur.executemany("INSERT OR REPLACE INTO files VALUES (?,?,?,?,?,?)",
                            [(r.path, r.size, r.mtime_ns, r.sha256, lang, now) for r, lang in records])
            if listed != {r.path for r, _ in records}:
                cur.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('paths_changed', ?)", (repr(now),))
            if reshaped == "definitions" or listed != {r.path for r, _ in records}:
                cur.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('graph_changed', ?)", (repr(now),))
            elif reshaped == "references":
                cur.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('references_changed', ?)", (repr(now),))
        self.set_meta("last_updated", str(time.time()))

    def _graph_change(self, paths: Sequence[str], symbols: Sequence[tuple], edges: Sequence[tuple]) -> str | None:
        """What writing these rows for `paths` changes of the code graph, lines aside: its
        "definitions" (id, name, qualified name, kind; `symbols` rows are (id, path, name,
        qualname, kind, start, end)), only its "references" (path, source, target, type), or
        nothing (None)."""
        definitions = {(s[0], s[2], s[3], s[4]) for s in symbols}
        if set(self._rows_in("SELECT id, name, qualname, kind FROM symbols", "path", paths)) != definitions:
            return "definitions"  # (a first index: every batch, without reading its references)
        if set(self._rows_in("SELECT path, source, target, type FROM edges", "path", paths)) != {e[:4] for e in edges}:
            return "references"
        return None

    def graph_stamp(self) -> tuple[str | None, str | None]:
        """When a write last changed the code graph's definitions (or files came or went), and when
        one last changed only references (`replace_files`); a write that moved only lines leaves
        both."""
        return self.get_meta("graph_changed"), self.get_meta("references_changed")

    # --- chunks ------------------------------------------------------------------------
    def chunks_by_id(self, ids: Sequence[str]) -> dict[str, StoredChunk]:
        return {row[0]: _stored(row) for row in self._rows_in(f"SELECT {_READ_COLUMNS} FROM chunks", "id", ids)}

    def chunks_for_path(self, path: str) -> list[StoredChunk]:
        with self._lock:
            rows = self._db.execute(f"SELECT {_READ_COLUMNS} FROM chunks WHERE path=? ORDER BY start_line",
                                    (path,)).fetchall()
        return [_stored(r) for r in rows]

    def chunks_of_definition(self, path: str, symbol: str, kind: str) -> list[StoredChunk]:
        """The chunks of `path` that belong to definition `symbol` of `kind` (a split definition's
        pieces; usually one), by start line: a file's other chunks and their texts are not read."""
        with self._lock:
            rows = self._db.execute(f"SELECT {_READ_COLUMNS} FROM chunks WHERE path=? AND symbol=? AND kind=? "
                                    "ORDER BY start_line", (path, symbol, kind)).fetchall()
        return [_stored(r) for r in rows]

    def iter_chunks(self, batch: int = 2_000):
        """Every chunk, by rowid in batches (the lexical index's rebuild reads them all once)."""
        for row in self._by_rowid(f"SELECT rowid, {_READ_COLUMNS} FROM chunks WHERE rowid > ? "
                                  "ORDER BY rowid LIMIT ?", batch):
            yield _stored(row[1:])

    def chunk_at(self, path: str, line: int) -> tuple[str, int, str] | None:
        """(id, start line, text) of the chunk holding `line` of `path`: the innermost, i.e. the
        latest-starting one (a class header and its members overlap)."""
        with self._lock:
            return self._db.execute("SELECT id, start_line, text FROM chunks WHERE path=? AND start_line<=? "
                                    "AND end_line>=? ORDER BY start_line DESC LIMIT 1", (path, line, line)).fetchone()

    def chunk_spans(self, paths: Sequence[str]) -> dict[str, list[tuple[int, int, str]]]:
        """path -> (start line, end line, id) of each of its chunks."""
        spans: dict[str, list[tuple[int, int, str]]] = {}
        for cid, path, start, end in self._rows_in("SELECT id, path, start_line, end_line FROM chunks", "path", paths):
            spans.setdefault(path, []).append((start, end, cid))
        return spans

    def ids_in_languages(self, ids: Sequence[str], languages: Sequence[str]) -> set[str]:
        """The ones of `ids` whose chunks are in one of `languages`."""
        if not ids or not languages:
            return set()
        return {row[0] for row in self.query(f"SELECT id FROM chunks WHERE id IN ({','.join('?' * len(ids))}) AND "
                                             f"language IN ({','.join('?' * len(languages))})", (*ids, *languages))}

    def embed_inputs(self) -> Iterator[tuple[str, str]]:
        """(header, text) of every chunk: what its vector was made from."""
        for row in self._by_rowid("SELECT rowid, header, text FROM chunks WHERE rowid > ? ORDER BY rowid LIMIT ?", 2_000):
            yield row[1:]

    def chunk_ids_for_paths(self, paths: Sequence[str]) -> list[str]:
        out: list[str] = []
        with self._lock:
            for p in paths:
                out.extend(r[0] for r in self._db.execute("SELECT id FROM chunks WHERE path=?", (p,)))
        return out

    def pending_chunks(self, limit: int, max_priority: int = PRIORITY_LAST) -> list[StoredChunk]:
        """Chunks without vectors, code first, then tests, prose, generated (see `embed_priority`)."""
        with self._lock:
            rows = self._db.execute(f"SELECT {_READ_COLUMNS} FROM chunks WHERE embedded=0 AND priority<=? "
                                    "ORDER BY priority LIMIT ?", (max_priority, limit)).fetchall()
        return [_stored(r) for r in rows]

    def mark_all_unembedded(self) -> None:
        with self._lock:
            self._db.execute("UPDATE chunks SET embedded=0")
            self._counts = None

    def mark_embedded(self, ids: Sequence[str]) -> None:
        with self._transaction() as cur:
            cur.executemany("UPDATE chunks SET embedded=1 WHERE id=?", [(i,) for i in ids])

    def counts(self) -> dict[str, int]:
        """Row counts, cached between writes (answers ask on every call): this process's writes
        drop the cache; another process's (a second server on this index, its writer) change
        SQLite's `data_version`, which is the cache's key."""
        with self._lock:
            version = self._db.execute("PRAGMA data_version").fetchone()[0]
            if self._counts is None or version != self._counts_key:
                self._counts_key = version
                self._counts = self._count()
            return dict(self._counts)

    def _count(self) -> dict[str, int]:
        with self._lock:
            files = self._db.execute("SELECT COUNT(*) FROM files").fetchone()[0]
            chunks = self._db.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
            pending = self._db.execute("SELECT COUNT(*) FROM chunks WHERE embedded=0").fetchone()[0]
            symbols = self._db.execute("SELECT COUNT(*) FROM symbols").fetchone()[0]
        return {"files": files, "chunks": chunks, "vectors_pending": pending, "symbols": symbols}

    def edge_count(self) -> int:
        """Raw graph edges. Not among `counts`: it walks an index of every edge (6 ms on sympy's
        469k, against 0.01 for each of the others), and `counts` runs after every change."""
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM edges").fetchone()[0]

    def definitions_ending(self, qualified: str, limit: int = 5) -> list[tuple[str, int]]:
        """(path, first line) of the first `limit` symbols whose qualified name is `qualified` or ends
        with `.qualified` (ASCII case aside, as LIKE matches): a definition by its last name part
        (indexed), a module by its file row. One `qualname LIKE '%.x'` over the table was a full
        scan — 6 ms a query on sympy's 35k symbols, a third of `packet`'s time (BENCHMARKS 11d)."""
        last, suffix = qualified.rsplit(".", 1)[-1], "%." + qualified
        with self._lock:
            return self._db.execute(
                "SELECT path, start_line FROM ("
                " SELECT rowid AS r, path, start_line FROM symbols"
                "  WHERE name=? COLLATE NOCASE AND (qualname=? OR qualname LIKE ?)"
                " UNION SELECT rowid, path, start_line FROM symbols"
                "  WHERE kind='file' AND (qualname=? OR qualname LIKE ?)"
                ") ORDER BY r LIMIT ?", (last, qualified, suffix, qualified, suffix, limit)).fetchall()

    def paths_stamp(self) -> str | None:
        """Changes when files come or go (not when one is edited); None for an index written
        before the stamp existed."""
        return self.get_meta("paths_changed")

    def all_paths(self) -> list[str]:
        with self._lock:
            return [r[0] for r in self._db.execute("SELECT path FROM files ORDER BY path")]

    # --- symbols and graph -------------------------------------------------------------
    def _rows_in(self, select: str, column: str, values: Sequence) -> Iterator[tuple]:
        """The rows of `select ... WHERE column IN values`, asked IN_BATCH values at a time (SQLite
        builds before 3.32 take at most 999 parameters a statement)."""
        values = list(values)
        for i in range(0, len(values), IN_BATCH):
            part = values[i: i + IN_BATCH]
            yield from self.query(f"{select} WHERE {column} IN ({','.join('?' * len(part))})", part)

    def query(self, sql: str, params: Sequence = ()) -> list[tuple]:
        """Read-only SQL under the store's lock: for the methods here and for the benchmarks; the
        server's query modules call the named methods instead, so the schema lives in this file."""
        with self._lock:
            return self._db.execute(sql, params).fetchall()

    def symbols(self) -> list[tuple]:
        """(id, path, name, qualname, kind, start line, end line) of every symbol, by path and line."""
        return self._bulk_rows("SELECT id, path, name, qualname, kind, start_line, end_line FROM symbols "
                               "ORDER BY path, start_line", ())

    def symbol_lines(self) -> dict[str, tuple[int, int]]:
        """id -> (start line, end line) of every symbol (the graph's nodes after a save moved them)."""
        return {r[0]: (r[1], r[2]) for r in self._bulk_rows("SELECT id, start_line, end_line FROM symbols", ())}

    def definition_counts(self, names: Sequence[str]) -> dict[str, int]:
        """name -> how many definitions (not files) carry it, for the names that have any."""
        if not names:
            return {}
        return dict(self.query(f"SELECT name, COUNT(*) FROM symbols WHERE kind!='file' AND name IN "
                               f"({','.join('?' * len(names))}) GROUP BY name", list(names)))

    def definitions_named(self, names: Sequence[str]) -> list[tuple[str, str, int]]:
        """(name, path, first line) of every definition of one of `names`."""
        if not names:
            return []
        return self.query(f"SELECT name, path, start_line FROM symbols WHERE kind!='file' AND name IN "
                          f"({','.join('?' * len(names))})", list(names))

    def iter_edges(self, imports: bool, batch: int = 20_000):
        """(path, source, target, type) of the import edges, or of all others, in rowid batches:
        sympy has 600k raw edges, and holding them at once cost ~200 MB that Python's allocator
        then kept for the server's life."""
        for row in self._by_rowid("SELECT rowid, path, source, target, type FROM edges WHERE rowid > ? AND "
                                  f"type {'=' if imports else '!='} 'import' ORDER BY rowid LIMIT ?", batch):
            yield row[1:]

    def edges_of(self, paths: Sequence[str]) -> list[tuple]:
        """(path, source, target, type) of these files' raw edges, in the order `iter_edges` reads
        them (by rowid)."""
        rows = sorted(self._rows_in("SELECT rowid, path, source, target, type FROM edges", "path", paths))
        return [r[1:] for r in rows]

    def paths_indexed_after(self, moment: float) -> list[str]:
        """The files written after `moment` (a `time.time()`), by this process or another."""
        return [r[0] for r in self.query("SELECT path FROM files WHERE indexed_at > ?", (moment,))]

    def _by_rowid(self, sql: str, batch: int):
        """The rows of `sql` (rowid first; its parameters the last rowid seen and the batch size),
        `batch` at a time, so a caller walking a big table never holds it whole."""
        last = 0
        while True:
            rows = self._bulk_rows(sql, (last, batch))
            if not rows:
                return
            last = rows[-1][0]
            yield from rows

    def _bulk_rows(self, sql: str, params: Sequence) -> list[tuple]:
        """Rows of a whole-table read (the code graph's reload, the lexical rebuild) on a connection
        of their own: WAL lets it read beside the questions' connection, which a graph reload after
        every save otherwise held for seconds on a large tree (`context` waited behind it,
        BENCHMARKS 55h). A read connection only: every write goes through `_db`."""
        with self._bulk_lock:
            if self._bulk is None:
                self._bulk = sqlite3.connect(str(self._path), check_same_thread=False, isolation_level=None)
                self._bulk.execute("PRAGMA query_only=ON")
            return self._bulk.execute(sql, params).fetchall()


def embed_priority(chunk: Chunk) -> int:
    """0: source code, 1: tests, 2: prose and unparsed text, 3: generated files — the order
    vectors fill in (generated code is searchable lexically at once; its vectors wait)."""
    if chunk.generated:
        return PRIORITY_LAST
    if chunk.kind in ("section", "window"):
        return 2
    return 1 if is_test_chunk(chunk.path, chunk.symbol, chunk.language) else 0


def _stored(row: tuple) -> StoredChunk:
    return StoredChunk(row[0], row[1], row[2], row[3], row[4], row[5], row[6], row[7], row[8], row[9], row[10],
                       bool(row[11]), row[12] if len(row) > 12 and row[12] is not None else 0)
