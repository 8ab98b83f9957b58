"""Result shapes of the public contract (CONTRACT.md), as pydantic models."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, Field, PrivateAttr, model_serializer

Tier = Literal["lexical", "title", "code", "dense", "dense_title", "path", "symbol", "message", "history", "graph", "rerank"]


class Compact(BaseModel):
    """Optional fields are sent only when they say something: a field with a default is left out
    while it is null (or a false flag listed in `_FLAGS`). Required fields are always sent, null or
    not, so the structured content still validates against the tool's output schema. This keeps
    the structured content close to the text content in size (docs/CONTRACT.md, "One copy")."""

    _FLAGS: ClassVar[tuple[str, ...]] = ()

    @model_serializer(mode="wrap")
    def _compact(self, handler):
        data = handler(self)
        fields = type(self).model_fields
        for name in list(data):
            field = fields.get(name)
            if field is None or field.is_required():
                continue
            if data[name] is None or (name in self._FLAGS and data[name] is False):
                del data[name]
        return self._trim(data)

    def _trim(self, data: dict) -> dict:
        """A subclass's last say on its serialised form."""
        return data


class Know(Compact):
    """The answer holds. `confidence` is what an agent reads; the evidence behind it (`top_score`,
    `score_gap`, `lexical_dense_agree`, `path_match`) comes with `debug: true` (see ChunkOut):
    `path_match` repeats the first chunk's path, a tenth of a 256-token window's structured content."""
    found: Literal[True] = True
    confidence: float
    top_score: float | None = Field(None, description="the best candidate's score; with debug")
    score_gap: float | None = Field(None, description="its lead over the next; with debug")
    lexical_dense_agree: bool | None = Field(None, description="lexical and vector search agree on it; with debug")
    path_match: str | None = Field(None, description="the file the question names, where the best chunk is; with debug")


class Miss(Compact):
    found: Literal[False] = False
    # Bad input is a tool error, never a miss; every value below is produced (docs/CONTRACT.md).
    reason: Literal["abstain", "empty_index", "stale", "indexing", "not_found"]
    escalate_to: Literal["grep", "reindex", "ask_user"]
    detail: str | None = None
    suggestions: list[str] | None = None


class IndexStatus(Compact):
    version: str
    files: int
    chunks: int
    pending_changes: int = Field(description="files changed on disk or queued but not yet indexed")
    vectors_pending: int = Field(0, description="chunks without a vector yet; in a workspace that runs without "
                                 "vectors every chunk (its state is then lexical_only)")
    last_updated: str | None = None
    state: Literal["ready", "indexing", "empty", "lexical_only"] = "ready"
    roots: list["RootStatus"] | None = Field(None, description="per root, when the workspace has several")
    store: str | None = Field(None, description="a replica: whether its object store answers, else null")
    unavailable: list[str] | None = Field(None, description="roots listed but not served, each `name: why`")
    repairs: list[str] | None = Field(None, description="index parts found damaged at start and rebuilt")

    def settled(self, vectors_off: bool = False) -> bool:
        """Ready and current: nothing being indexed or waiting for it, every vector made (none to
        make when the workspace runs without vectors: `lexical_only` is then its steady state), a
        replica's store answering. A `context` result leaves such a status out (it says nothing new)."""
        steady = "lexical_only" if vectors_off else "ready"
        return (self.state == steady and not self.pending_changes and (vectors_off or not self.vectors_pending)
                and (self.store is None or self.store.startswith("reachable")) and not self.repairs)


class RootStatus(BaseModel):
    name: str
    path: str
    files: int
    chunks: int
    pending_changes: int
    vectors_pending: int
    state: Literal["ready", "indexing", "empty", "lexical_only"]


class Stage(BaseModel):
    name: str
    status: Literal["done", "skipped", "error"]
    ms: float
    detail: str | None = None


class Debug(Compact):
    rewrite: dict | None = None
    candidate_pool: int = 0
    graph_added: int = 0
    reranker: Literal["cross-encoder", "structural", "none"] = "none"
    assembled_tokens: int = 0
    query_class: str | None = None
    anchors: dict | None = None
    stages: list[Stage] = Field(default_factory=list)


class ChunkOut(Compact):
    """A chunk of the window, as a program places it: where it is and what the window shows. The
    ranking evidence and accounting (`score`, `tiers`, `content_sha256`, `tokens`) come only with
    `debug: true` — the model does not need them, and sent always they made the structured content
    1.25-1.7x the window at 1-2k tokens (BENCHMARKS 10a); `packet` items carry them always."""
    root: str | None = Field(None, description="name of the workspace root holding the file; when it has several")
    path: str | None = Field(None, description="the file, relative to its root; absent when the chunk continues the "
                                               "previous chunk's file (as a header without `path` in the window)")
    start_line: int
    end_line: int
    symbol: str | None
    text: str | None = Field(description="what the window shows: the chunk, an excerpt or a diff; null for a stub")
    tokens: int | None = Field(None, description="what it costs in the window (an excerpt or diff: what it "
                                                 "delivers); with debug")
    score: float | None = Field(None, description="fused, reranked score; with debug")
    terms: dict[str, float] | None = Field(None, description="how the score was made (base, factors, the file's "
                                                             "share, an inherited floor); with debug")
    tiers: list[Tier] | None = Field(None, description="retrieval tiers that found it; with debug")
    content_sha256: str | None = Field(None, description="SHA-256 of the chunk's text in the index; with debug")
    delivered: bool = Field(False, description="true: a stub (delivered earlier in this session); absent when false")
    excerpt: bool = Field(False, description="true: part of the chunk, the rest marked elided (its code without "
                                             "comments and docstrings, or its signature and the lines around what "
                                             "matched); absent when false")
    diff: bool = Field(False, description="true: a unified diff against the text this session saw; absent when false")

    _FLAGS: ClassVar[tuple[str, ...]] = ("delivered", "excerpt", "diff")  # sent only when true


class SignatureOut(Compact):
    """A definition the delivered code calls or extends: its head line, not its body."""
    root: str | None = Field(None, description="name of the workspace root; when it has several")
    path: str
    line: int
    symbol: str
    text: str


class ContextResult(Compact):
    """Structured content of `context`. The rendered window (head line, headers, bodies, stubs) is
    the tool's text content and is not repeated here: each body travels once per channel."""
    know: Know | None = None
    miss: Miss | None = None
    chunks: list[ChunkOut] = Field(default_factory=list)
    signatures: list[SignatureOut] | None = Field(None, description="what the delivered code calls or extends, "
                                                  "in the window's room left; absent when none")
    index: IndexStatus | None = Field(None, description="the index's state: present when it is not settled (being "
                                      "indexed, changes or vectors pending, a replica's store unreachable) or with "
                                      "debug; absent, the index is ready and current (without vectors: lexical-only and current)")
    debug: Debug | None = None
    _window: str = PrivateAttr("")

    @property
    def window(self) -> str:
        """The rendered window (the text content), within `budget_tokens`."""
        return self._window

    @window.setter
    def window(self, text: str) -> None:
        self._window = text

    def _trim(self, data: dict) -> dict:
        """A chunk names its file only when the previous chunk was from another, as the window's
        headers do: consecutive chunks of one file repeated a path of up to ~70 characters each,
        which put the structured content at 1.22x the window on Java at 1k tokens (BENCHMARKS 11a)."""
        previous = None
        for chunk in data.get("chunks") or []:
            where = (chunk.get("root"), chunk.get("path"))
            if where == previous:
                chunk.pop("root", None)
                chunk.pop("path", None)
            previous = where
        return data


class PacketItem(Compact):
    root: str = Field(description="name of the workspace root holding the file")
    path: str
    start_line: int
    end_line: int
    symbol: str | None
    score: float
    confidence: float
    tiers: list[Tier]
    content_sha256: str
    fresh: bool
    action: Literal["trust", "reread", "refresh"]
    tokens: int
    why: str
    contributions: dict[str, float] | None = Field(None, description="with debug: the file ranker's features "
                                                   "that moved this item's file most (signed)")
    terms: dict[str, float] | None = Field(None, description="with debug: how the chunk's score was made (base, "
                                                             "factors)")


class PacketResult(Compact):
    know: Know | None = None
    miss: Miss | None = None
    items: list[PacketItem] = Field(default_factory=list)
    index: IndexStatus
    debug: Debug | None = None


class GraphNode(BaseModel):
    id: str
    kind: str
    name: str
    root: str
    path: str
    start_line: int
    end_line: int


class GraphEdge(BaseModel):
    source: str
    target: str
    type: str
    source_root: str  # the roots of the two nodes: ids are unique within a root, and an import
    target_root: str  # can cross from one root into another


class CommitOut(Compact):
    """A commit of HEAD's ancestry that touched the file asked about (relation `history`)."""
    root: str
    sha: str
    date: str = Field(description="commit date, UTC, YYYY-MM-DD")
    subject: str
    files: int = Field(description="how many files the commit touched")


class GraphResult(Compact):
    nodes: list[GraphNode] = Field(default_factory=list)
    edges: list[GraphEdge] = Field(default_factory=list)
    truncated: bool = False
    commits: list[CommitOut] | None = Field(None, description="relation `history`: commits touching the file, newest "
                                                              "first")
    history: str | None = Field(None, description="relations `history` and `changed_with`: the state of the history "
                                                  "index they read (e.g. why it is empty)")
    miss: Miss | None = None


class ReindexResult(BaseModel):
    files_scanned: int
    files_changed: int
    files_removed: int
    chunks_added: int
    chunks_removed: int
    chunks_embedded: int
    embeddings_reused: int
    duration_ms: float
    skipped: dict[str, int] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)
    background: bool = False
    index: IndexStatus
