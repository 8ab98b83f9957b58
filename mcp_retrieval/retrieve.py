"""Stage 3a: retrieve wide from every source — Tantivy BM25, LanceDB dense, and exact anchors
(paths, traceback frames, dotted modules, rarely-defined identifiers, quoted messages) — each a
ranked list."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import get_args

from mcp_retrieval import rules
from mcp_retrieval.indexers.embed import Embedder
from mcp_retrieval.indexers.languages import JS_SOURCE_EXTENSIONS, PROSE_LANGUAGES, is_test_chunk
from mcp_retrieval.indexers.lexical import LexicalIndex
from mcp_retrieval.indexers.store import Store, StoredChunk
from mcp_retrieval.indexers.symbols import module_suffixes
from mcp_retrieval.indexers.vectors import VectorIndex
from mcp_retrieval.extract import Anchors, fragment_variants
from mcp_retrieval.models import Tier

log = logging.getLogger(__name__)
QUERY_PIECE_CHARS = 1000  # of a long question, what the dense tier embeds (`query_head`)
MAX_SYMBOL_DEFS = 8  # a name defined in more places than this is noise, not an anchor
CHUNKS_PER_ANCHORED_FILE = 3
NAMED_MIN = 2.0  # symbol-tier weight from which a named definition takes a seat among its file's path hits
# Outside Python a lone word before a dot (`gin.Default`, `router.get`, `ctx.Header`) is a package,
# namespace or receiver, not a file: `gin.go` holding no `Default` is not what the question names.
# (`Rules.one_word_modules_only_python`; the rule below is a `Rules` switch too.)
# A written path names at most three files: `src/lib.rs` in a workspace of crates, or a bare
# `index.js`, `lib.rs`, `mod.rs`, `main.go`, `__init__.py` (any folder's), names none of them.
_GENERIC_FILE_STEMS = frozenset({"index", "lib", "mod", "main", "__init__"})
MESSAGE_SCAN = 50  # chunks read per quoted message fragment (the best of those holding all its words)
MAX_MESSAGE_FILES = 3  # a fragment in more code files than this is a common phrase, not a raise site
REEXPORTED_NAMES = 3  # names the workspace defines nowhere, looked up where they are re-exported
# A statement that makes a name defined elsewhere part of this module's interface, per language: a
# facade crate's `pub use axum_core::extract::{FromRequest, ...}`, `export { X } from '@scope/core'`,
# a package's `__init__.py` importing from a compiled or vendored module ("{}": the name).
_REEXPORT = {
    "rust": r"\bpub(?:\([^)]*\))?\s+use\s[^;]*?\b{}\b",
    "javascript": r"\bexport\s+(?:type\s+)?(?:\{{[^}}]*?\b{0}\b[^}}]*\}}\s*from\b|\*\s+as\s+{0}\b)",
    "python": r"(?m)^[ \t]*from\s+[\w.]+\s+import\s+(?:\([^)]*?|[^\n]*?)\b{}\b",
}
_REEXPORT_LANGUAGE = {"rust": "rust", "javascript": "javascript", "typescript": "javascript", "tsx": "javascript",
                      "python": "python"}


@dataclass
class Candidate:
    chunk: StoredChunk
    raw: dict[str, float] = field(default_factory=dict)  # tier -> raw score from that source
    ranks: dict[str, int] = field(default_factory=dict)  # tier -> 1-based rank in that source
    fused: float = 0.0
    score: float = 0.0  # written by `scoring.rescore` only, from the evidence below
    why: list[str] = field(default_factory=list)
    root: str = ""  # the name of the root the chunk belongs to (several roots: one ranking)
    # the score's evidence (scoring.py): a candidate made with a score alone takes it as its base
    base: float | None = None
    factors: dict[str, float] = field(default_factory=dict)
    shared: float = 0.0
    inherited: float = 0.0
    cap: float | None = None
    # `packet`'s file order (file_rank.distinct_first): its file's score, halved for each further
    # chunk of the file before it; what an item's confidence reads, so it falls down the list
    standing: float | None = None

    def __post_init__(self) -> None:
        if self.base is None:
            self.base = self.score

    @property
    def tiers(self) -> list[str]:
        return [t for t in get_args(Tier) if t in self.raw]


def _js_variants(parts: list[str]) -> list[list[str]]:
    """A JS/TS path as written, then the sources a build or a package may have made it from:
    `plugin/utc.js` is also `plugin/utc.ts` and `plugin/utc/index.js` (and `.ts`)."""
    stem, dot, ext = parts[-1].rpartition(".")
    if not dot or "." + ext not in JS_SOURCE_EXTENSIONS:
        return [parts]
    out = [parts]
    out += [[*parts[:-1], stem + e] for e in JS_SOURCE_EXTENSIONS if e != "." + ext]
    out += [[*parts[:-1], stem, "index" + e] for e in JS_SOURCE_EXTENSIONS]
    return out


def _file_name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


class PathResolver:
    """Map paths and dotted module names as written in a question onto indexed files."""

    def __init__(self, paths: list[str]):
        self.paths = paths  # in the index's order (by path), as every list below
        self.known = frozenset(paths)  # membership tests on the answer path (the history tier)
        self._by_name: dict[str, list[str]] = {}
        self._by_module: dict[str, list[str]] = {}
        for p in paths:
            for table, key in self._entries(p):
                table.setdefault(key, []).append(p)

    def updated(self, paths: list[str]) -> "PathResolver":
        """The resolver of a new path list, made from this one by the files that came or went (the
        maps a fresh build makes, at the cost of the change: a new file in babel's 27,575 cost a
        194 ms rebuild). This one is left as it was: a question may be reading it."""
        known = frozenset(paths)
        added, removed = sorted(known - self.known), self.known - known
        if len(added) + len(removed) > len(paths) // 4:  # a checkout: building anew costs no more
            return PathResolver(paths)
        new = PathResolver([])
        new.paths, new.known = paths, known
        new._by_name, new._by_module = dict(self._by_name), dict(self._by_module)
        for p in removed:
            for table, key in new._entries(p):
                if kept := [q for q in table.get(key, ()) if q != p]:
                    table[key] = kept
                else:
                    table.pop(key, None)
        for p in added:
            for table, key in new._entries(p):
                table[key] = sorted([*table.get(key, ()), p])
        return new

    def _entries(self, path: str):
        """(map, key) of every place `path` is listed: its file name, each of its module suffixes."""
        yield self._by_name, _file_name(path)
        for suffix in module_suffixes(path):
            yield self._by_module, suffix

    def resolve_path(self, written: str) -> list[str]:
        parts = [p for p in written.replace("\\", "/").split("/") if p and p != "."]
        if "node_modules" in parts:  # a published package's path: what follows `node_modules/<pkg>/`
            parts = parts[len(parts) - parts[::-1].index("node_modules") + 1:]
        if not parts:
            return []
        for variant in _js_variants(parts):
            candidates = self._by_name.get(variant[-1], [])
            generic = variant[-1].rsplit(".", 1)[0] in _GENERIC_FILE_STEMS
            for size in range(len(variant), 0, -1):
                suffix = "/".join(variant[-size:])
                hits = [c for c in candidates if c == suffix or c.endswith("/" + suffix)]
                if rules.current().strict_path_match and (len(hits) > 3 or (size == 1 and generic)):
                    break  # shorter suffixes only match more files
                if hits and (size > 1 or len(hits) <= 3):
                    return hits[:3]
        return []

    def resolve_module(self, dotted: str) -> list[str]:
        """The files a dotted name names: the longest prefix that is a module (`pkg.mod.Name` ->
        `pkg/mod.py`)."""
        parts = dotted.split(".")
        for size in range(len(parts), 0, -1):
            hits = self._by_module.get(".".join(parts[:size]), [])
            if size == 1 and len(hits) > 2:  # a common stem names nothing in particular
                continue
            if size == 1 and rules.current().one_word_modules_only_python:
                hits = [h for h in hits if h.endswith((".py", ".pyi"))]
            if hits:
                return hits[:2]
        return []


class Retriever:
    def __init__(self, store: Store, lexical: LexicalIndex, vectors: Callable[[], VectorIndex | None],
                 embedder: Embedder | None):
        """`vectors`: the vector table (None without a model), opened on first call (`Indexer.open_vectors`)."""
        self.store = store
        self.lexical = lexical
        self._vectors = vectors
        self.embedder = embedder
        self._resolver: PathResolver | None = None
        self._resolver_key: str | None = None

    def resolver(self) -> PathResolver:
        """The path resolver of the indexed files. It reads only their paths, so after an index
        change it is rebuilt only when files came or went: a saved file's edit keeps it (the
        rebuild cost the first question after every save 50-150 ms on a 5,000-file tree), and the
        paths are read again only then (reading them cost that question ~1 ms on sympy)."""
        key = self.store.paths_stamp() or self.store.get_meta("last_updated")
        if self._resolver is None or key != self._resolver_key:
            paths = self.store.all_paths()
            if self._resolver is None:
                self._resolver = PathResolver(paths)
            elif paths != self._resolver.paths:
                self._resolver = self._resolver.updated(paths)
            self._resolver_key = key
        return self._resolver

    @property
    def vectors(self) -> VectorIndex | None:
        return self._vectors()

    def warm(self) -> None:
        """Read now what the next question would otherwise read first: the path resolver (36 ms on
        sympy) and the vector mirror (0.2 s; BENCHMARKS 62a)."""
        self.resolver()
        if (vectors := self.vectors) is not None:
            vectors.warm()

    # --- sources --------------------------------------------------------------------------
    def lexical_hits(self, text: str, limit: int) -> list[tuple[str, float]]:
        return self.lexical.search(text, limit)

    def dense_hits_many(self, texts: Sequence[str], limit: int) -> list[list[tuple[str, float]]]:
        """Each text's chunks by cosine, best first (a long text: its head, `query_head`). Every
        text is embedded and searched in one call: the search reads the whole vector mirror once
        per call."""
        if self.vectors is None or self.embedder is None or not self.vectors.has_rows():
            return [[] for _ in texts]
        heads = [query_head(text) for text in texts]
        asked = [i for i, head in enumerate(heads) if head]
        out: list[list[tuple[str, float]]] = [[] for _ in texts]
        if asked:
            found = self.vectors.search_many(self.embedder.embed([heads[i] for i in asked]), limit)
            for i, hits in zip(asked, found):  # best first, at most `limit` (search_many)
                out[i] = hits
        return out

    def path_hits(self, anchors: Anchors, query: str,
                  named: dict[str, float] | None = None) -> tuple[list[tuple[str, float]], list[str]]:
        """Chunks of files the question names (the files it links or points at by line — where
        the reporter says to look —, then frames deepest first, then paths, then modules): in
        each file, the functions its frames name, then the chunks holding the lines it points at
        (a link's lines; a frame's line when its function is not one of the file's definitions —
        a nested `wrapper`, a runtime that prints no function), then the definitions the question
        names (`named`: the symbol tier's chunk scores), then the file's best lexical matches."""
        resolver = self.resolver()
        files: list[str] = []
        pointed: dict[str, list[tuple[int, int, str | None]]] = {}  # path -> (first, last, frame function)
        for written, first, last in anchors.links:
            for path in resolver.resolve_path(written):
                files.append(path)
                pointed.setdefault(path, []).append((first, last, None))
        for written, line, func in anchors.frames:
            for path in resolver.resolve_path(written):
                files.append(path)
                pointed.setdefault(path, []).append((line, line, func))
        for written in [*anchors.active_files, *anchors.paths]:
            files.extend(resolver.resolve_path(written))
        for dotted in anchors.dotted:
            files.extend(resolver.resolve_module(dotted))
        files = list(dict.fromkeys(files))[:12]
        frame_funcs = {f[2] for f in anchors.frames if f[2]}
        hits: list[tuple[str, float]] = []
        for rank, path in enumerate(files):
            chunks = self.store.chunks_for_path(path)
            in_frames = [c.id for c in chunks if c.symbol and c.symbol.rsplit(".", 1)[-1] in frame_funcs]
            defined = {c.symbol.rsplit(".", 1)[-1] for c in chunks if c.symbol}
            lines = [(first, last) for first, last, func in pointed.get(path, ()) if func is None or func not in defined]
            at_lines = [c.id for c in chunks if any(c.start_line <= last and first <= c.end_line for first, last in lines)]
            # a rare name mentioned twice, or a dotted one (`Card._format_float`): the function the
            # question is about, often shorter than the file's wordiest chunks (BENCHMARKS 13a)
            in_question = sorted((c.id for c in chunks if named.get(c.id, 0) >= NAMED_MIN), key=lambda cid: -named[cid]) \
                if named else []
            ids = list(dict.fromkeys([*in_frames, *at_lines, *in_question]))
            if len(ids) < CHUNKS_PER_ANCHORED_FILE:  # searched only when the file's seats are not yet filled
                ids = list(dict.fromkeys([*ids, *(cid for cid, _ in self.lexical.search(
                    query, CHUNKS_PER_ANCHORED_FILE, path=path))]))
            ids = ids[:CHUNKS_PER_ANCHORED_FILE]
            if not ids and chunks:
                ids = [chunks[0].id]
            hits.extend((cid, 1.0 / (1 + rank)) for cid in ids)
        return hits, files

    def history_hits(self, history, query: str, limit: int = 12) -> tuple[list[tuple[str, float]], dict[str, str]]:
        """The best chunk of each file past commits like this question touched, and each such
        chunk's reason (the matching commit's subject)."""
        evidence = history.files_for(query, self.resolver().known, limit)
        hits: list[tuple[str, float]] = []
        why: dict[str, str] = {}
        best = self.lexical.best_in_files(query, [ev.path for ev in evidence])
        for ev in evidence:
            cid = best.get(ev.path) or next((c.id for c in self.store.chunks_for_path(ev.path)), None)
            if cid is not None:
                hits.append((cid, ev.score))
                why[cid] = f"past commits touching this file match the question (e.g. {ev.subject[:80]!r})"
        return hits, why

    def message_hits(self, anchors: Anchors) -> list[tuple[str, float]]:
        """Chunks of code (not tests, not prose) that hold a literal part of a message the question quotes
        (an exception, warning, `error:` or panic line) verbatim: the format string at the raise
        or log site (shortened by a word when a value filled in without quotes ends or starts the
        fragment: `fragment_variants`). Found among the chunks that hold all of its words; a fragment
        held by more than MAX_MESSAGE_FILES files points nowhere and is dropped. Longer fragments
        first (a longer verbatim match is the rarer one). A long command-line option the question
        names (`--collect-only`) counts the same way where the code declares it as a string."""
        found: list[tuple[str, list[StoredChunk]]] = []  # (the literal matched, the chunks holding it)
        for fragment in anchors.messages:
            for variant in fragment_variants(fragment):  # the whole fragment, else without an end word
                if holding := self._holding(variant):
                    found.append((variant, holding))
                    break
        found += [(option, self._holding(option, quoted=True)) for option in anchors.options]
        scored: dict[str, float] = {}
        for literal, holding in found:
            if holding and len({c.path for c in holding}) <= MAX_MESSAGE_FILES:
                for c in holding:
                    scored[c.id] = max(scored.get(c.id, 0.0), float(len(literal)))
        return sorted(scored.items(), key=lambda kv: (-kv[1], kv[0]))

    def _holding(self, fragment: str, quoted: bool = False) -> list[StoredChunk]:
        """Code chunks (not tests, not prose) holding `fragment` verbatim (`quoted`: as a string
        literal of its own, `"--x"` or `'--x'`)."""
        forms = (f'"{fragment}"', f"'{fragment}'") if quoted else (fragment,)
        return [c for c in self._with_all_words(fragment)
                if any(f in c.text for f in forms) and c.language not in PROSE_LANGUAGES
                and not is_test_chunk(c.path, c.symbol, c.language)]

    def _with_all_words(self, text: str) -> list[StoredChunk]:
        """The first MESSAGE_SCAN chunks holding every word of `text` (BM25 order), read from the store."""
        hits = self.lexical.search_all_terms(text, MESSAGE_SCAN)
        stored = self.store.chunks_by_id([cid for cid, _ in hits])
        return [c for c in (stored.get(cid) for cid, _ in hits) if c is not None]

    def symbol_hits(self, anchors: Anchors) -> list[tuple[str, float]]:
        """Chunks defining names the question uses, rare names first (a handful of SQL queries
        per question, whatever its length)."""
        credits: list[tuple[str, int, float]] = []  # (path, definition line, weight)
        for dotted in anchors.dotted:
            parts = dotted.split(".")
            for size in (2, 3):
                if len(parts) >= size:
                    qual = ".".join(parts[-size:])
                    for path, line in self.store.definitions_ending(qual):
                        credits.append((path, line, 3.0))
        mentions = dict(anchors.identifiers.most_common(40))
        counts = self.store.definition_counts(list(mentions))
        credits += self._definition_credits(mentions, counts)
        scored = self._credit(credits)
        for cid, weight in self._reexport_credits(mentions, counts).items():
            scored[cid] = scored.get(cid, 0.0) + weight
        return sorted(scored.items(), key=lambda kv: (-kv[1], kv[0]))

    def _definition_credits(self, mentions: dict[str, int], counts: dict[str, int]) -> list[tuple[str, int, float]]:
        """(path, line, weight) of each definition of a rare name among `mentions` (name -> times the
        question uses it; `counts`: definitions of each; at most MAX_SYMBOL_DEFS), weighted uses (at
        most 4) / sqrt(definitions)."""
        rare = [n for n in mentions if 0 < counts.get(n, 0) <= MAX_SYMBOL_DEFS]
        return [(path, line, min(mentions[name], 4) / counts[name] ** 0.5)
                for name, path, line in self.store.definitions_named(rare)]

    def _reexport_credits(self, mentions: dict[str, int], counts: dict[str, int]) -> dict[str, float]:
        """Chunk id -> weight of the statements that re-export a name the workspace defines nowhere
        (`_REEXPORT`): a root that holds a facade crate or package but not the one defining its
        items (`axum/src` re-exports `FromRequest` from `axum-core`) has no other place for the
        name. Weighted as a definition is; the first REEXPORTED_NAMES such names are looked up."""
        missing = [n for n in mentions if not counts.get(n)][:REEXPORTED_NAMES]
        out: dict[str, float] = {}
        for name in missing:
            sites = [c for c in self._with_all_words(name) if _reexports(c, name)]
            if len(sites) > MAX_SYMBOL_DEFS:
                continue
            for c in sites:
                out[c.id] = out.get(c.id, 0.0) + min(mentions[name], 4) / len(sites) ** 0.5
        return out

    def _credit(self, credits: list[tuple[str, int, float]]) -> dict[str, float]:
        """Each definition's weight goes to the chunk holding its first line (the innermost,
        i.e. latest-starting, one), else to the next chunk of the file: the line may sit in a
        merged neighbour or a header piece."""
        spans = self.store.chunk_spans(sorted({path for path, _, _ in credits}))
        scored: dict[str, float] = {}
        for path, line, weight in credits:
            chunks = spans.get(path, [])
            holding = [c for c in chunks if c[0] <= line <= c[1]]
            after = [c for c in chunks if c[0] >= line]
            best = max(holding) if holding else min(after) if after else None
            if best is not None:
                scored[best[2]] = scored.get(best[2], 0.0) + weight
        return scored


def _reexports(chunk: StoredChunk, name: str) -> bool:
    """The chunk re-exports `name` in its language's way (a Python module only as a package's
    `__init__.py`)."""
    language = _REEXPORT_LANGUAGE.get(chunk.language)
    if language is None or (language == "python" and not chunk.path.endswith("__init__.py")):
        return False
    return re.search(_REEXPORT[language].format(re.escape(name)), chunk.text) is not None


def query_head(text: str) -> str:
    """What the dense tier embeds of a question: a short one whole; of a long one (a pasted
    report) its first paragraphs up to about QUERY_PIECE_CHARS, title first. Embedding the
    report's further pieces too cost 30 ms a question and lost more unseen questions than it
    found (BENCHMARKS-history 24b)."""
    text = text.strip()
    if len(text) <= QUERY_PIECE_CHARS:
        return text
    head = ""
    for para in (p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()):
        if head and len(head) + len(para) > QUERY_PIECE_CHARS:
            break
        head = (head + "\n\n" + para).strip()[: QUERY_PIECE_CHARS * 2]
    return head
