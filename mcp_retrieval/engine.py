"""The Engine: every tool as a plain Python method (no `mcp` import here).

The server, the CLI and the benchmark all call this class. It owns the index (through
`indexers.update.Indexer`), runs the answer pipeline, applies the agent contract (session
stubs, freshness gate, control-tag neutralisation, know/miss) and keeps the index fresh in
the background (vectors fill in behind lexical; the watcher feeds `notify_changed`).
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath

from mcp_retrieval.indexers.embed import EmbeddingCache, MiniLMEmbedder, ModelUnavailable
from mcp_retrieval.indexers.graph import RELATIONS, CodeGraph
from mcp_retrieval.indexers.history import History
from mcp_retrieval.indexers.analysis import terms
from mcp_retrieval.indexers.memory import return_freed_memory
from mcp_retrieval.indexers.tokens import budget_counts
from mcp_retrieval.indexers.update import IndexBusy, Indexer
from mcp_retrieval import assemble, decide, file_rank
from mcp_retrieval.config import Config
from mcp_retrieval.freshness import Fresh, FreshnessGate
from mcp_retrieval.models import (ChunkOut, ContextResult, Debug, GraphEdge, GraphNode, GraphResult, IndexStatus, Know,
                                  Miss, PacketItem, PacketResult, ReindexResult)
from mcp_retrieval.pipeline import Ranked, rank
from mcp_retrieval.rerank import CrossEncoderReranker, IdentityReranker, ZScoreReranker
from mcp_retrieval.retrieve import Candidate, Retriever
from mcp_retrieval.sampling import HostOutcome, SamplingPlanner
from mcp_retrieval.session import SessionRegister
from mcp_retrieval.stages import StageLog
from mcp_retrieval.validate import BadRequest, check_int, check_paths, check_query, check_session

log = logging.getLogger("mcp_retrieval")
VERSION = "0.1.0"
TASKS = ("explain", "edit", "debug", "review")
__all__ = ["BadRequest", "Engine"]


class Engine:
    def __init__(self, config: Config, *, embedder="auto", reranker=None):
        self.config = config
        self.cache = EmbeddingCache(config.cache_dir / "embeddings.sqlite")
        self.embedder = self._load_embedder() if embedder == "auto" else embedder
        self.indexer = Indexer(config.root, config.index_dir, self.cache, self.embedder)
        self.store = self.indexer.store
        self.retriever = Retriever(self.store, self.indexer.lexical, self.indexer.vectors, self.embedder)
        self.freshness = FreshnessGate(config.root, self.store)
        self.history = History(config.index_dir / "history.db", config.root, git_dir=config.history_git_dir,
                               rev=config.history_rev) if config.history else None
        self.sessions = SessionRegister(max_sessions=config.max_sessions, ttl_s=config.session_ttl_s,
                                        persist_path=config.index_dir / "sessions.json" if config.persist_sessions else None)
        self.reranker = reranker or self._load_reranker()
        self.sampling = SamplingPlanner(config.understand == "sampling", config.understand_budget,
                                        state_path=config.index_dir / "understand.json",
                                        timeout_s=config.understand_timeout_s)
        self._graph: CodeGraph | None = None
        self._graph_key: str | None = None
        self._graph_lock = threading.Lock()
        self._work_lock = threading.Lock()  # one index writer at a time inside this process
        self._background: threading.Thread | None = None
        self._stop = threading.Event()
        self.pending_paths: set[str] = set()
        self.indexing = False

    # --- set-up -------------------------------------------------------------------------------
    def _load_embedder(self):
        if self.config.embedder == "none":
            return None
        if self.config.embedder == "hash":  # meaning-free vectors for tests and crash drills
            from mcp_retrieval.indexers.embed import HashEmbedder
            return HashEmbedder()
        try:
            return MiniLMEmbedder(self.config.cache_dir)
        except (ModelUnavailable, ImportError, OSError, ValueError) as exc:
            log.warning("embedding model unavailable (%s): answering from the lexical index only", exc)
            return None

    def _load_reranker(self):
        zscore = ZScoreReranker(tier_weights={t: self.config.tier_weights.get(t, 1.0) for t in ("lexical", "dense")})
        if self.config.rerank == "none":
            return IdentityReranker()
        if self.config.rerank in ("auto", "cross-encoder") and self.config.cross_encoder_dir:
            try:
                return CrossEncoderReranker(self.config.cross_encoder_dir, self.config.cache_dir / "fastembed", zscore)
            except Exception as exc:
                if self.config.rerank == "cross-encoder":
                    raise ValueError(f"cross-encoder at {self.config.cross_encoder_dir} unusable: {exc}") from exc
                log.warning("cross-encoder unavailable (%s); using the z-score reranker", exc)
        return zscore

    def graph(self, wait: bool = False) -> CodeGraph | None:
        """The code graph. After an index change it is rebuilt in a worker thread while answers keep
        using the previous one (a slightly stale structural prior beats a multi-second pause on a
        large repository); `wait=True` (and the very first load of a small index) blocks instead."""
        key = self.store.get_meta("last_updated")
        if self._graph is not None and key == self._graph_key:
            return self._graph
        if wait or (self._graph is None and self.store.counts()["symbols"] < 20_000):
            self._reload_graph(key)
        elif not self._graph_lock.locked():
            threading.Thread(target=self._reload_graph, args=(key,), daemon=True, name="mcp-retrieval-graph").start()
        return self._graph

    def _reload_graph(self, key: str | None) -> None:
        with self._graph_lock:
            if self._graph is not None and key == self._graph_key:
                return
            graph = CodeGraph.load(self.store)
            self._graph, self._graph_key = graph, key
            del graph
            return_freed_memory()  # the build's temporaries and the previous graph

    def close(self) -> None:
        self._stop.set()
        if self._background is not None:
            self._background.join(timeout=30)
        self.sessions.save()
        if self.history is not None:
            self.history.close()

    # --- status and indexing ------------------------------------------------------------------
    def status(self) -> IndexStatus:
        counts = self.store.counts()
        stamp = self.store.get_meta("last_updated")
        last = datetime.fromtimestamp(float(stamp), timezone.utc).isoformat(timespec="seconds") if stamp else None
        if counts["files"] == 0:
            state = "indexing" if self.indexing else "empty"
        elif self.indexing:
            state = "indexing"
        elif self.embedder is None or counts["vectors_pending"]:
            state = "lexical_only" if self.embedder is None or counts["vectors_pending"] == counts["chunks"] else "indexing"
        else:
            state = "ready"
        return IndexStatus(version=VERSION, files=counts["files"], chunks=counts["chunks"],
                           pending_changes=len(self.pending_paths), vectors_pending=counts["vectors_pending"],
                           last_updated=last, state=state)

    def reindex(self, paths: list[str] | None = None, full: bool = False, wait: bool = True,
                progress=None) -> ReindexResult:
        if paths is not None:
            paths = check_paths(paths, self.config.root, "paths", must_exist=False)
        if not wait:
            self.start_background(paths, full)
            return ReindexResult(files_scanned=0, files_changed=0, files_removed=0, chunks_added=0, chunks_removed=0,
                                 chunks_embedded=0, embeddings_reused=0, duration_ms=0.0, background=True,
                                 index=self.status())
        started = time.perf_counter()
        with self._work_lock:
            self.indexing = True
            try:
                result = self.indexer.sync(paths, full=full, progress=progress)
                self.update_history()
                embedded, reused = self.indexer.embed_pending(should_stop=self._stop.is_set, progress=progress)
            except IndexBusy as exc:
                raise BadRequest(f"{exc}; retry when it finishes") from exc
            except FileNotFoundError as exc:
                raise BadRequest(str(exc)) from exc
            finally:
                self.indexing = False
            self.pending_paths.difference_update(paths or list(self.pending_paths))
        return ReindexResult(files_scanned=result.files_scanned, files_changed=result.files_changed,
                             files_removed=result.files_removed, chunks_added=result.chunks_added,
                             chunks_removed=result.chunks_removed, chunks_embedded=embedded,
                             embeddings_reused=reused, duration_ms=round((time.perf_counter() - started) * 1000, 1),
                             skipped=result.skipped, warnings=result.warnings, index=self.status())

    def start_background(self, paths: list[str] | None = None, full: bool = False) -> None:
        """Lexical sync then embeddings, in a worker thread; answers keep flowing meanwhile."""
        if self._background is not None and self._background.is_alive():
            if paths:
                self.pending_paths.update(paths)
            return

        def work() -> None:
            try:
                with self._work_lock:
                    self.indexing = True
                    try:
                        self.indexer.sync(paths, full=full, should_stop=self._stop.is_set)
                    finally:
                        self.indexing = False
                self.update_history()
                while not self._stop.is_set():  # a few batches at a time, so lexical updates can cut in
                    with self._work_lock:
                        done = sum(self.indexer.embed_pending(should_stop=self._stop.is_set, max_batches=4))
                    if not done:
                        break
            except IndexBusy as exc:
                log.warning("background index skipped: %s", exc)
            except Exception:
                log.exception("background indexing failed; the previous index still answers")

        self._background = threading.Thread(target=work, name="mcp-retrieval-index", daemon=True)
        self._background.start()

    def update_history(self) -> None:
        """Read new commits of HEAD's ancestry (bounded; a failure leaves the old table)."""
        if self.history is None:
            return
        try:
            self.history.update()
        except Exception as exc:
            log.warning("history not updated (%s); the previous table answers", exc)

    def sync_paths(self, paths: list[str] | None) -> None:
        """Lexical update now (the watcher calls this; None: a burst, rescan the whole root by stat),
        vectors behind. Waits only for the current embedding batch, never for the whole backlog."""
        if paths:
            self.pending_paths.update(paths)
        with self._work_lock:
            self.indexing = True
            try:
                self.indexer.sync(paths)
                if paths:
                    self.pending_paths.difference_update(paths)
                else:
                    self.pending_paths.clear()
            finally:
                self.indexing = False
        self.update_history()  # a pull or checkout moves HEAD along with the files
        self.start_background([])  # embeds whatever is pending; an empty scope syncs nothing

    # --- tools ----------------------------------------------------------------------------------
    def _rank(self, query, active_files, sub_queries, path_prefix, stages: StageLog | None = None,
              graph: bool | None = None, host: HostOutcome | None = None) -> Ranked:
        return rank(query, config=self.config, retriever=self.retriever, graph_loader=self.graph,
                    reranker=self.reranker, active_files=active_files, sub_queries=sub_queries,
                    path_prefix=path_prefix, host=host, stages=stages, graph=graph, history=self.history)

    @staticmethod
    def evidence(query: str, ranked: Ranked, candidates: list[Candidate]) -> decide.Evidence:
        """What `know`/`miss` is decided on (also read by `bench calibrate`)."""
        return decide.gather(query, candidates, ranked.anchor_ids, set(ranked.anchored_files),
                             ranked.understanding.more_lexical_queries)

    def _vectors_complete(self) -> bool:
        return self.store.counts()["vectors_pending"] == 0

    def _empty_miss(self) -> Miss | None:
        counts = self.store.counts()
        if counts["chunks"] == 0:
            reason = "indexing" if self.indexing else "empty_index"
            return Miss(reason=reason, escalate_to="reindex",
                        detail="the index is being built; retry shortly" if self.indexing else
                        "nothing is indexed yet: call reindex")
        return None

    def context(self, query: str, session_id: str | None = None, budget_tokens: int = 6000, max_chunks: int = 20,
                path_prefix: str | None = None, active_files: list[str] | None = None,
                sub_queries: list[str] | None = None, ignore_delivered: bool = False, debug: bool = False,
                host: HostOutcome | None = None) -> ContextResult:
        """`host`: what the host-sampling stage produced (the server asks before calling this)."""
        query, notes = check_query(query)
        budget_tokens = check_int(budget_tokens, "budget_tokens", 256, 64000)
        max_chunks = check_int(max_chunks, "max_chunks", 1, 64)
        session_id = check_session(session_id)
        active, prefix, subs = self._check_scope(active_files, path_prefix, sub_queries)
        if (miss := self._empty_miss()) is not None:
            result = ContextResult(miss=miss, index=self.status())
            result.window = f"{_head_line(miss)}\n{assemble.no_match_window(miss.reason, miss.escalate_to)}"
            return result
        stages = StageLog()
        ranked = self._rank(query, active, subs, prefix, stages, host=host)
        with stages.run("freshness") as st:
            refreshed = self.freshness.refresh(ranked.candidates, self.pending_paths)
            candidates = refreshed.candidates
            st["detail"] = refreshed.detail()
        if candidates:
            outcome = decide.decide(self.evidence(query, ranked, candidates), ranked.has_vectors,
                                    self._vectors_complete())
        elif refreshed.dropped:  # everything found is gone from disk since indexing
            outcome = Miss(reason="stale", escalate_to="reindex",
                           detail=f"the {refreshed.dropped} matching chunks' files changed or vanished since indexing")
        else:
            outcome = Miss(reason="abstain", escalate_to="grep" if ranked.anchors.identifiers else "ask_user")
        window = assemble.Window()
        with stages.run("assemble") as st:
            if isinstance(outcome, Miss):
                st["status"], st["detail"] = "skipped", "miss: marker-only window"
            else:
                delivered = set() if ignore_delivered or session_id is None else self.sessions.delivered(session_id)
                cap = min(max_chunks, ranked.qclass.max_chunks)  # the question's class caps the window too
                window = assemble.assemble(candidates, budget=budget_tokens, max_chunks=cap, delivered=delivered,
                                           lam=self.config.mmr_lambda, near_duplicate=self.config.near_duplicate,
                                           head=_head_line(outcome), query_terms=frozenset(terms(query)))
                st["detail"] = (f"{len(window.placed)} chunks, {sum(p.stub for p in window.placed)} stubs, "
                                f"{sum(p.excerpt for p in window.placed)} excerpts, {window.tokens} tokens")
        placed = window.placed
        if session_id is not None and not ignore_delivered:
            self.sessions.record(session_id, [p.candidate.chunk.sha256 for p in placed if not p.stub and not p.excerpt])
        chunks = [self._chunk_out(p) for p in placed]
        if not placed:
            reason, escalate = getattr(outcome, "reason", "abstain"), getattr(outcome, "escalate_to", "ask_user")
            marker = assemble.no_match_window(reason, escalate)
            window = assemble.Window([], f"{_head_line(outcome)}\n{marker}")
            window.tokens = budget_counts([window.text])[0]
        result = ContextResult(chunks=chunks, index=self.status())
        result.window = window.text
        if isinstance(outcome, Miss):
            result.miss = outcome
        else:
            result.know = outcome
        if debug:
            result.debug = self._debug(ranked, stages, notes, window.tokens)
        return result

    def packet(self, query: str, session_id: str | None = None, max_items: int = 12,
               active_files: list[str] | None = None, task: str = "explain", sub_queries: list[str] | None = None,
               path_prefix: str | None = None, debug: bool = False, host: HostOutcome | None = None) -> PacketResult:
        query, notes = check_query(query)
        max_items = check_int(max_items, "max_items", 1, 50)
        check_session(session_id)
        if not isinstance(task, str) or task not in TASKS:
            raise BadRequest(f"task must be one of {', '.join(TASKS)}; got {task!r}")
        active, prefix, subs = self._check_scope(active_files, path_prefix, sub_queries)
        if (miss := self._empty_miss()) is not None:
            return PacketResult(miss=miss, index=self.status())
        stages = StageLog()
        ranked = self._rank(query, active, subs, prefix, stages, graph=self.config.graph and self.config.graph_in_packet,
                            host=host)
        candidates = ranked.candidates
        outcome = decide.decide(self.evidence(query, ranked, candidates), ranked.has_vectors,
                                self._vectors_complete()) if candidates else Miss(reason="abstain", escalate_to="ask_user")
        with stages.run("files") as st:
            candidates = file_rank.rank_files(candidates, per_file=max(2, -(-max_items // 4)),
                                              partner_chunk=self._first_chunk)
            st["detail"] = f"{len({c.chunk.path for c in candidates[:max_items]})} files in the first {max_items} items"
        items: list[PacketItem] = []
        if not isinstance(outcome, Miss):
            with stages.run("freshness") as st:
                head = candidates[:max_items]
                fresh = self.freshness.check([c.chunk.path for c in head])
                st["detail"] = f"{sum(v != Fresh.FRESH for v in fresh.values())} stale"
            base = outcome.confidence
            top = head[0].score if head and head[0].score else 1.0
            for c in head:
                state = fresh[c.chunk.path]
                conf = round(base * (c.score / top), 3)
                if state != Fresh.FRESH:
                    action = "refresh"
                elif task in ("edit", "debug") or conf < 0.5:
                    action = "reread"
                else:
                    action = "trust"
                items.append(PacketItem(path=c.chunk.path, start_line=c.chunk.start_line, end_line=c.chunk.end_line,
                                        symbol=c.chunk.symbol, score=round(c.score, 4), confidence=conf,
                                        tiers=c.tiers, content_sha256=c.chunk.sha256, fresh=state == Fresh.FRESH,
                                        action=action, tokens=c.chunk.tokens, why=_why(c, state)))
        result = PacketResult(items=items, index=self.status())
        if isinstance(outcome, Miss):
            result.miss = outcome
        else:
            result.know = outcome
        if debug:
            result.debug = self._debug(ranked, stages, notes, 0)
        return result

    def query_graph(self, node: str, relation: str = "neighbors", depth: int = 1, limit: int = 50,
                    kind: str | None = None) -> GraphResult:
        if not isinstance(node, str) or not node.strip() or len(node) > 1000 or "\x00" in node:
            raise BadRequest("node must be a symbol name (e.g. Session.request) or a workspace-relative path")
        if relation not in RELATIONS:
            raise BadRequest(f"relation must be one of {', '.join(RELATIONS)}; got {relation!r}")
        depth = check_int(depth, "depth", 1, 3)
        limit = check_int(limit, "limit", 1, 500)
        kinds = ("function", "class", "method", "module", "file")
        if kind is not None and kind not in kinds:
            raise BadRequest(f"kind must be one of {', '.join(kinds)} or omitted; got {kind!r}")
        graph = self.graph()
        ref = _relative_ref(node.strip(), self.config.root)
        starts = graph.find(ref) if graph is not None and ref is not None else []
        if not starts:
            return GraphResult(miss=Miss(reason="not_found", escalate_to="grep",
                                         detail=f"no symbol or file named {node[:200]!r} in the index",
                                         suggestions=graph.suggest(ref or node) if graph is not None else []))
        if relation == "imports" or relation == "imported_by":  # a symbol's imports are its file's
            starts = list(dict.fromkeys(graph.index.get(graph.nodes[s].path, s) for s in starts))
        found, edges, truncated = graph.traverse(starts, relation, depth, limit, "file" if kind == "module" else kind)
        return GraphResult(nodes=[_node_out(graph, i) for i in [*starts, *found]],
                           edges=[GraphEdge(source=graph.nodes[s].id, target=graph.nodes[t].id, type=typ)
                                  for s, t, typ in edges], truncated=truncated)

    # --- helpers ----------------------------------------------------------------------------------
    def _check_scope(self, active_files, path_prefix, sub_queries):
        active = check_paths(active_files, self.config.root, "active_files", must_exist=False) if active_files else []
        prefix = None
        if path_prefix is not None:
            if not isinstance(path_prefix, str):
                raise BadRequest("path_prefix must be a workspace-relative folder path string")
            prefix = check_paths([path_prefix], self.config.root, "path_prefix", must_exist=False)[0] \
                if path_prefix.strip() else None
        subs: list[str] = []
        if sub_queries is not None:
            if not isinstance(sub_queries, list) or len(sub_queries) > 3:
                raise BadRequest("sub_queries must be a list of at most 3 strings")
            subs = [check_query(q)[0] for q in sub_queries]
        return active, prefix, subs

    def _first_chunk(self, path: str) -> Candidate | None:
        """The opening chunk of an indexed file (a header/source partner the pool lacked)."""
        chunks = self.store.chunks_for_path(path)
        return Candidate(chunk=chunks[0]) if chunks else None

    def _chunk_out(self, p: assemble.Placed) -> ChunkOut:
        c = p.candidate
        return ChunkOut(path=c.chunk.path, start_line=c.chunk.start_line, end_line=c.chunk.end_line,
                        symbol=c.chunk.symbol, language=c.chunk.language, score=round(c.score, 4), tiers=c.tiers,
                        content_sha256=c.chunk.sha256, tokens=c.chunk.tokens, text=p.text, delivered=p.stub,
                        excerpt=p.excerpt)

    def _debug(self, ranked: Ranked, stages: StageLog, notes: list[str], tokens: int) -> Debug:
        rewrite = ranked.understanding.as_dict()
        if notes:
            rewrite["notes"] = notes
        return Debug(rewrite=rewrite, candidate_pool=ranked.pool_size, graph_added=ranked.graph_added,
                     reranker=ranked.reranker, assembled_tokens=tokens, query_class=ranked.qclass.name,
                     anchors=ranked.anchors.as_dict(), stages=stages.stages)


def _head_line(outcome: Know | Miss) -> str:
    """The first line of `context`'s text: the decision, inside the budget like everything else."""
    if isinstance(outcome, Miss):
        return f"miss: {outcome.reason}; next: {outcome.escalate_to}" + (f" ({outcome.detail})" if outcome.detail else "")
    return f"know (confidence {outcome.confidence:.2f})"


def _why(c: Candidate, state: Fresh) -> str:
    parts = [f"matched by {', '.join(c.tiers) or 'fusion'}", *c.why]
    if state == Fresh.CHANGED:
        parts.append("file changed on disk since indexing: reread it")
    elif state == Fresh.DELETED:
        parts.append("file deleted since indexing")
    return "; ".join(dict.fromkeys(parts))


def _relative_ref(ref: str, root: Path) -> str | None:
    """A node reference inside the root (absolute paths are made relative); None if it escapes."""
    if "/" in ref or "\\" in ref:
        p = PurePosixPath(ref.replace("\\", "/"))
        if p.is_absolute():
            try:
                return str(Path(ref).resolve().relative_to(root))
            except (ValueError, OSError):
                return None
        if ".." in p.parts:
            return None
    return ref


def _node_out(graph: CodeGraph, i: int) -> GraphNode:
    n = graph.nodes[i]
    return GraphNode(id=n.id, kind=n.kind, name=n.qualname if n.kind != "file" else n.path, path=n.path,
                     start_line=n.start_line, end_line=n.end_line)
