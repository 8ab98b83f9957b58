"""The Engine: every tool as a plain Python method (no `mcp` import here).

The server, the CLI and the benchmark all call this class. It owns the index (through
`indexers.update.Indexer`), runs the answer pipeline, applies the agent contract (session
stubs, freshness gate, control-tag neutralisation, know/miss) and keeps the index fresh in
the background (vectors fill in behind lexical; the watcher feeds `notify_changed`).
"""

from __future__ import annotations

import errno
import logging
import sqlite3
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath

from mcp_retrieval.indexers.embed import EmbeddingCache, MiniLMEmbedder, ModelUnavailable
from mcp_retrieval.indexers.graph import RELATIONS, CodeGraph
from mcp_retrieval.indexers.history import History
from mcp_retrieval.indexers.memory import return_freed_memory
from mcp_retrieval.indexers.health import sqlite_files
from mcp_retrieval.indexers.update import IndexBusy, Indexer
from mcp_retrieval import decide, graph_fusion, quiet, rules
from mcp_retrieval.config import Config
from mcp_retrieval.freshness import FreshnessGate, SnapshotGate
from mcp_retrieval.models import (CommitOut, Debug, GraphEdge, GraphNode, GraphResult, IndexStatus, Know,
                                  Miss, ReindexResult)
from mcp_retrieval.pipeline import Ranked, rank
from mcp_retrieval.rerank import CrossEncoderReranker, IdentityReranker, StructuralReranker
from mcp_retrieval.retrieve import Candidate, Retriever
from mcp_retrieval.sampling import HostOutcome, SamplingPlanner
from mcp_retrieval.session import SessionRegister
from mcp_retrieval.stages import StageLog
from mcp_retrieval.validate import BadRequest, check_int, check_paths, check_query

HISTORY_RELATIONS = ("history", "changed_with")  # read from the history index, not the code graph
log = logging.getLogger("mcp_retrieval")
VERSION = "0.1.0"
# A question that arrives while the first index of an empty store is being built waits for it, up
# to this long after that index began: most repositories are indexed lexically within it (a few
# hundred files in about a second), and an agent's first question, sent as the server starts, gets
# an answer instead of a `miss: indexing` that costs it a turn. Past it, whatever is committed
# answers at once (`index.state` says `indexing`), or the miss if nothing is yet: counted from each
# question's arrival instead, every question of a large root's first minutes waited the whole
# wait again (eight repositories' 64,531 files: each question of the first 100 s waited 10 s;
# BENCHMARKS 65e).
FIRST_INDEX_WAIT_S = 10.0
# Another process writing the index (a second server on the same root: two agent windows) makes
# the background work wait and try again this often: it answers from the other's writes meanwhile,
# and if the other stops half way (its window closed), this one finishes the index.
BUSY_RETRY_S = 5.0
TASKS = ("explain", "edit", "debug", "review")
__all__ = ["BadRequest", "Engine"]


@dataclass
class Gathered:
    """One root's share of an answer (see `Engine.gather`)."""
    engine: "Engine"
    ranked: Ranked | None  # None: the index is empty or being built
    candidates: list[Candidate]
    outcome: Know | Miss


class Engine:
    def __init__(self, config: Config, *, embedder="auto", reranker=None, name: str | None = None):
        self.config = config
        self.name = name or config.root.name or "root"  # the root's name in results (`root`)
        self.cache = EmbeddingCache(config.cache_dir / "embeddings.sqlite")
        self.embedder = self._load_embedder() if embedder == "auto" else embedder
        self.indexer = Indexer(config.root, config.index_dir, self.cache, self.embedder)
        self.store = self.indexer.store
        self.retriever = Retriever(self.store, self.indexer.lexical, self.indexer.open_vectors, self.embedder)
        self.freshness = SnapshotGate() if config.read_only else FreshnessGate(config.root, self.store)
        self.history = self._open_history() if config.history else None
        self.sessions = SessionRegister(max_sessions=config.max_sessions, ttl_s=config.session_ttl_s,
                                        persist_path=config.index_dir / "sessions.json" if config.persist_sessions else None)
        self.reranker = reranker or self._load_reranker()
        self.sampling = SamplingPlanner(config.understand == "sampling", config.understand_budget,
                                        state_path=config.index_dir / "understand.json",
                                        timeout_s=config.understand_timeout_s)
        self._graph: CodeGraph | None = None
        self._graph_key: str | None = None
        self._graph_stamp: tuple = (None, None)  # the store's `graph_stamp` the graph is as of
        self._graph_time = 0.0  # when the store was read for it (files written after: newer)
        self._graph_lock = threading.Lock()
        self._graph_pending = threading.Lock()  # held while a background rebuild is waiting or running
        self._work_lock = threading.Lock()  # one index writer at a time inside this process
        self._background: threading.Thread | None = None
        self._stop = threading.Event()
        self.pending_paths: set[str] = set()
        self.indexing = False
        # the start's graph, path resolver and vector mirror, loaded after its vectors: still `indexing`
        self._warming = False
        self._first_index = threading.Event()  # clear only while an empty store's first sync runs
        self._first_index.set()
        self._first_index_until = 0.0  # time.monotonic() past which no question waits for it

    # --- set-up -------------------------------------------------------------------------------
    def _open_history(self) -> History:
        """The history table; a damaged one is dropped and read again from git (it is derived)."""
        path = self.config.index_dir / "history.db"

        def open_it() -> History:
            return History(path, self.config.root, git_dir=self.config.history_git_dir, rev=self.config.history_rev)

        try:
            return open_it()
        except sqlite3.Error as exc:
            note = f"the history table was damaged ({type(exc).__name__}: {exc}): read again from git"
            log.warning(note)
            self.indexer.repairs.append(note)
            for part in sqlite_files(path):
                part.unlink(missing_ok=True)
            return open_it()

    def _load_embedder(self):
        if self.config.embedder == "none":
            return None
        if self.config.embedder == "hash":  # meaning-free vectors for tests and crash drills
            from mcp_retrieval.indexers.embed import HashEmbedder
            return HashEmbedder()
        if self.config.embedder == "static":  # a token table distilled from MiniLM: no transformer at run time
            from mcp_retrieval.indexers.static import StaticEmbedder
            try:
                return StaticEmbedder()
            except ModelUnavailable as exc:
                log.warning("static embedding model unavailable (%s): answering from the lexical index only", exc)
                return None
        try:
            return MiniLMEmbedder(self.config.cache_dir)
        except (ModelUnavailable, ImportError, OSError, ValueError) as exc:
            log.warning("embedding model unavailable (%s): answering from the lexical index only", exc)
            return None

    def _load_reranker(self):
        structural = StructuralReranker()
        if self.config.rerank == "none":
            return IdentityReranker()
        if self.config.rerank in ("auto", "cross-encoder") and self.config.cross_encoder_dir:
            try:
                return CrossEncoderReranker(self.config.cross_encoder_dir, self.config.cache_dir / "fastembed", structural)
            except Exception as exc:
                if self.config.rerank == "cross-encoder":
                    raise ValueError(f"cross-encoder at {self.config.cross_encoder_dir} unusable: {exc}") from exc
                log.warning("cross-encoder unavailable (%s); using the structural reranker", exc)
        return structural

    def graph(self, wait: bool = False) -> CodeGraph | None:
        """The code graph. After an index change it is rebuilt in a worker thread while answers keep
        using the previous one (a slightly stale structural prior beats a multi-second pause on a
        large repository); `wait=True` (and the very first load of a small index) blocks instead."""
        key = self.store.get_meta("last_updated")
        if self._graph is not None and key == self._graph_key:
            return self._graph
        if wait or (self._graph is None and self.store.counts()["symbols"] < 20_000):
            self._reload_graph(key)
        elif self._graph_pending.acquire(blocking=False):  # one background rebuild at a time
            threading.Thread(target=self._reload_graph_later, daemon=True, name="mcp-retrieval-graph").start()
        return self._graph

    def _reload_graph_later(self) -> None:
        """The background rebuild, begun once no question is being answered (`quiet`): the
        question that asked goes on with the previous graph without sharing the interpreter."""
        try:
            quiet.wait()
            self._reload_graph(self.store.get_meta("last_updated"))
        finally:
            self._graph_pending.release()

    def _reload_graph(self, key: str | None) -> None:
        """The graph as of index version `key`: built again when definitions changed since it was
        built (the store's `graph_stamp`); else it takes the new lines (a body edited: 0.2 s on
        sympy, where building took 3-4 s; 73e) and, when references changed too (a call or an
        import added), the references of the files written since are resolved again (73g)."""
        with self._graph_lock:
            if self._graph is not None and key == self._graph_key:
                return
            began = time.time()
            definitions, references = self.store.graph_stamp()  # read first: a change made meanwhile moves them
            previous = self._graph
            if previous is None or definitions != self._graph_stamp[0] or not previous.with_lines(
                    self.store.symbol_lines()):
                graph = CodeGraph.load(self.store)
            elif references != self._graph_stamp[1]:
                graph = previous.with_references(self.store, self.store.paths_indexed_after(self._graph_time))
            else:
                graph = previous  # its lines moved, in place
            self._graph_stamp, self._graph_time = (definitions, references), began
            if graph is previous:
                self._graph_key = key
                return
            graph_fusion.prepare(graph)  # its walk arrays too, before any question meets it
            self._graph, self._graph_key = graph, key
            del graph, previous
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
        dense = self.indexer.open_vectors() is not None  # None without a model or a usable table; repairs too
        counts = self.store.counts()
        stamp = self.store.get_meta("last_updated")
        last = datetime.fromtimestamp(float(stamp), timezone.utc).isoformat(timespec="seconds") if stamp else None
        if counts["files"] == 0:
            state = "indexing" if self.indexing else "empty"
        elif self.indexing or self._warming:
            state = "indexing"
        elif not dense or counts["vectors_pending"]:
            state = "lexical_only" if not dense or counts["vectors_pending"] == counts["chunks"] else "indexing"
        else:
            state = "ready"
        return IndexStatus(version=VERSION, files=counts["files"], chunks=counts["chunks"],
                           pending_changes=len(self.pending_paths), vectors_pending=counts["vectors_pending"],
                           last_updated=last, state=state, repairs=list(self.indexer.repairs) or None)

    def reindex(self, paths: list[str] | None = None, full: bool = False, wait: bool = True,
                progress=None) -> ReindexResult:
        if self.config.read_only:
            raise BadRequest("this server is a read-only replica of published snapshots: publish again to update "
                             "it (it picks up new snapshots by itself)")
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
            except (OSError, sqlite3.Error, ValueError) as exc:
                if (cause := storage_failure(exc)) is None:
                    raise
                raise BadRequest(f"{cause} at {self.config.index_dir}: fix that, then reindex (what was "
                                 f"committed before stays; the next run redoes the rest)") from exc
            finally:
                self.indexing = False
            self.pending_paths.difference_update(paths or list(self.pending_paths))
        return ReindexResult(files_scanned=result.files_scanned, files_changed=result.files_changed,
                             files_removed=result.files_removed, chunks_added=result.chunks_added,
                             chunks_removed=result.chunks_removed, chunks_embedded=result.chunks_embedded + embedded,
                             embeddings_reused=reused, duration_ms=round((time.perf_counter() - started) * 1000, 1),
                             skipped=result.skipped, warnings=result.warnings, index=self.status())

    def start_background(self, paths: list[str] | None = None, full: bool = False) -> None:
        """Lexical sync then embeddings, in a worker thread; answers keep flowing meanwhile. After
        a whole-workspace sync (the start's) the worker then loads the code graph, the path
        resolver and the vector table's in-memory mirror, the state still `indexing`: on a large
        repository (`graph` loads it behind the questions there) the first questions after
        `index://status` says ready would otherwise meet no graph, or one from mid-index, and share
        the interpreter with its load, and the first one would read the mirror (BENCHMARKS 61c,
        62a). After the vectors, not before: held while they are made, the graph raised the peak
        memory of a start."""
        if self._background is not None and self._background.is_alive():
            if paths:
                self.pending_paths.update(paths)
            return

        if self.store.counts()["chunks"] == 0:
            self._first_index_until = time.monotonic() + FIRST_INDEX_WAIT_S
            self._first_index.clear()

        def work() -> None:
            waiting = False
            while not self._stop.is_set():
                try:
                    index()
                    return
                except IndexBusy as exc:
                    if not waiting:
                        log.warning("%s: answering from it, and indexing here once it finishes", exc)
                        waiting = True
                    self._stop.wait(BUSY_RETRY_S)
                except Exception:
                    log.exception("background indexing failed; the previous index still answers")
                    return

        def index() -> None:
            self.indexer.open_vectors()  # LanceDB's import runs here, beside the host's handshake
            with self._work_lock:
                self.indexing = True
                try:
                    self.indexer.sync(paths, full=full, should_stop=self._stop.is_set)
                finally:
                    self.indexing = False
                    self._first_index.set()  # built or failed: no question waits on it any more
            self.update_history()
            while not self._stop.is_set():  # a few batches at a time, so lexical updates can cut in
                with self._work_lock:
                    done = sum(self.indexer.embed_pending(should_stop=self._stop.is_set, max_batches=4))
                if not done:
                    break
            if paths is None and not self._stop.is_set():  # the start's sync: warm is part of `ready`
                self._warming = True
                try:
                    self.graph(wait=True)
                    self.retriever.warm()
                finally:
                    self._warming = False

        self._background = threading.Thread(target=work, name="mcp-retrieval-index", daemon=True)
        self._background.start()

    def update_history(self) -> None:
        """Read new commits of HEAD's ancestry (bounded; a failure leaves the old table)."""
        if self.history is None or self.config.read_only:
            return
        try:
            self.history.update()
        except Exception as exc:
            log.warning("history not updated (%s); the previous table answers", exc)

    def sync_paths(self, paths: list[str] | None) -> None:
        """Lexical update now (the watcher calls this; None: a burst, rescan the whole root by stat),
        vectors behind. Waits only for the current embedding batch, never for the whole backlog."""
        self.sync_lexical(paths)
        self.start_background([])  # embeds whatever is pending; an empty scope syncs nothing

    def sync_lexical(self, paths: list[str] | None) -> None:
        """`sync_paths` without the vectors: the files and the history up to date, the vectors of
        what changed left pending (the shell's questions, which no background work outlives)."""
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

    # --- tools ----------------------------------------------------------------------------------
    @rules.enforced(lambda self: self.config.rules)
    def _rank(self, query, active_files, sub_queries, path_prefix, stages: StageLog | None = None,
              graph: bool | None = None, host: HostOutcome | None = None, recent_turns=(),
              pool_size: int | None = None, keep_plain_pool: bool = False, structural: bool = True) -> Ranked:
        return rank(query, config=self.config, retriever=self.retriever, graph_loader=self.graph,
                    reranker=self.reranker, active_files=active_files, sub_queries=sub_queries,
                    path_prefix=path_prefix, host=host, stages=stages, graph=graph, history=self.history,
                    recent_turns=recent_turns, pool_size=pool_size, keep_plain_pool=keep_plain_pool,
                    structural=structural)

    def evidence(self, query: str, ranked: Ranked, candidates: list[Candidate]) -> decide.Evidence:
        """What `know`/`miss` is decided on (also read by `bench calibrate`)."""
        known = self.retriever.lexical.known
        return decide.gather(query, candidates, ranked.anchor_ids, set(ranked.anchored_files),
                             ranked.understanding.more_lexical_queries, known=known)

    def _empty_miss(self) -> Miss | None:
        """The miss of a question the index cannot answer yet: nothing indexed. The first index of
        an empty store is waited for first (until FIRST_INDEX_WAIT_S after it began)."""
        self._first_index.wait(max(0.0, self._first_index_until - time.monotonic()))
        counts = self.store.counts()
        if counts["chunks"] == 0:
            # the first index is under way from the moment it is started (its worker opens the
            # vector table, LanceDB's 1.3 s import, before it takes the write lock)
            building = self.indexing or not self._first_index.is_set()
            walked = self.indexer.last_whole_walk
            if not building and walked is not None and walked.files_scanned == 0:  # reindex would find nothing
                skipped = ", ".join(f"{n} {why}" for why, n in sorted(walked.skipped.items()) if n) or "none"
                return Miss(reason="empty_index", escalate_to="ask_user",
                            detail=f"the workspace holds no file to index (skipped: {skipped}); check "
                                   f"the root ({self.config.root}) and its ignore rules")
            return Miss(reason="indexing" if building else "empty_index", escalate_to="reindex",
                        detail="the index is being built; retry shortly" if building else
                        "nothing is indexed yet: call reindex")
        return None

    @rules.enforced(lambda self: self.config.rules)
    def gather(self, query: str, active: list[str], subs: list[str], prefix: str | None, stages: StageLog, *,
               for_packet: bool = False, host: HostOutcome | None = None, recent_turns=(),
               pool_size: int | None = None) -> "Gathered":
        """This root's share of an answer: its ranked pool (fresh chunks only, for `context`) and its
        own know/miss on that pool."""
        if (miss := self._empty_miss()) is not None:
            return Gathered(self, None, [], miss)
        graph = self.config.graph and self.config.graph_in_packet if for_packet else None
        # `packet`'s file ranker learned on pools without vectors: there the dense tiers only add;
        # and it weighs what the rerank stage's structural factors encode (test, prose, names)
        ranked = self._rank(query, active, subs, prefix, stages, graph=graph, host=host, recent_turns=recent_turns,
                            pool_size=pool_size, keep_plain_pool=for_packet and rules.current().vectors_only_add,
                            structural=not (for_packet and rules.current().file_ranker_weighs_structure))
        candidates, dropped = ranked.candidates, 0
        if not for_packet:
            with stages.run("freshness") as st:
                refreshed = self.freshness.refresh(ranked.candidates, self.pending_paths)
                candidates, dropped = refreshed.candidates, refreshed.dropped
                st["detail"] = refreshed.detail()
        if candidates:
            outcome = decide.decide(self.evidence(query, ranked, candidates), ranked.has_vectors,
                                    ranked.similarity_decides)
        elif dropped:  # everything found is gone from disk since indexing
            outcome = Miss(reason="stale", escalate_to="reindex",
                           detail=f"the {dropped} matching chunks' files changed or vanished since indexing")
        else:
            outcome = Miss(reason="abstain", escalate_to="grep" if ranked.anchors.identifiers else "ask_user")
        for c in candidates:
            c.root = self.name
        return Gathered(self, ranked, candidates, outcome)

    def query_graph(self, node: str, relation: str = "neighbors", depth: int = 1, limit: int = 50,
                    kind: str | None = None) -> GraphResult:
        if not isinstance(node, str) or not node.strip() or len(node) > 1000 or "\x00" in node:
            raise BadRequest("node must be a symbol name (e.g. Session.request) or a workspace-relative path")
        if relation not in RELATIONS and relation not in HISTORY_RELATIONS:
            known = ", ".join([*RELATIONS, *HISTORY_RELATIONS])
            raise BadRequest(f"relation must be one of {known}; got {relation!r}")
        depth = check_int(depth, "depth", 1, 3)
        limit = check_int(limit, "limit", 1, 500)
        kinds = ("function", "class", "method", "module", "file")
        if kind is not None and kind not in kinds:
            raise BadRequest(f"kind must be one of {', '.join(kinds)} or omitted; got {kind!r}")
        if (miss := self._empty_miss()) is not None and miss.reason == "indexing":
            return GraphResult(miss=miss)  # (an empty index that is not being built: not_found below)
        graph, starts = self.graph_starts(node, relation)
        if not starts:
            ref = _relative_ref(node.strip(), self.config.root)
            return GraphResult(miss=Miss(reason="not_found", escalate_to="grep",
                                         detail=f"no symbol or file named {node[:200]!r} in the index",
                                         suggestions=graph.suggest(ref or node) if graph is not None else []))
        if relation in HISTORY_RELATIONS:
            return self._history_relation(graph, starts, relation, limit)
        found, edges, truncated = graph.traverse(starts, relation, depth, limit, "file" if kind == "module" else kind)
        return GraphResult(nodes=[node_out(graph, i, self.name) for i in [*starts, *found]],
                           edges=[GraphEdge(source=graph.nodes[s].id, target=graph.nodes[t].id, type=typ,
                                            source_root=self.name, target_root=self.name)
                                  for s, t, typ in edges], truncated=truncated)

    def _history_relation(self, graph: CodeGraph, starts: list[int], relation: str, limit: int) -> GraphResult:
        """`history`: the commits of HEAD's ancestry that touched the file (a symbol: its file),
        newest first. `changed_with`: the files those commits also touched, most often first (the
        co-change the history tier ranks by), as file nodes with `changed_with` edges. One hop;
        `depth` and `kind` do not apply. With no usable history both are empty and `history` says why."""
        paths = list(dict.fromkeys(graph.nodes[s].path for s in starts))
        result = GraphResult(nodes=[node_out(graph, i, self.name) for i in starts],
                             commits=[] if relation == "history" else None,
                             history="off: this root does not read its history")
        if self.history is None:
            return result
        result.history = self.history.status
        if relation == "history":
            rows = self.history.commits_touching(paths, limit + 1)
            result.commits = [CommitOut(root=self.name, sha=sha, subject=subject, files=files,
                                        date=datetime.fromtimestamp(stamp, timezone.utc).strftime("%Y-%m-%d"))
                              for sha, stamp, subject, files in rows[:limit]]
            result.truncated = len(rows) > limit
            return result
        rows = self.history.changed_with(paths, limit + 1)
        known = [i for i in (graph.file_node(path) for path, _ in rows) if i is not None]  # still indexed
        source = graph.nodes[starts[0]].id
        result.nodes += [node_out(graph, i, self.name) for i in known[:limit]]
        result.edges = [GraphEdge(source=source, target=graph.nodes[i].id, type="changed_with",
                                  source_root=self.name, target_root=self.name) for i in known[:limit]]
        result.truncated = len(known) > limit
        return result

    def graph_starts(self, node: str, relation: str) -> tuple[CodeGraph | None, list[int]]:
        """The graph and the nodes a reference names (for `imports`/`imported_by` and the history
        relations, their files: a symbol's imports and commits are its file's)."""
        graph = self.graph()
        ref = _relative_ref(node.strip(), self.config.root)
        starts = graph.find(ref) if graph is not None and ref is not None else []
        if starts and relation in ("imports", "imported_by", *HISTORY_RELATIONS):
            files = [graph.file_node(graph.nodes[s].path) for s in starts]
            starts = list(dict.fromkeys(s if f is None else f for s, f in zip(starts, files)))
        return graph, starts

    # --- helpers ----------------------------------------------------------------------------------
    def check_scope(self, active_files, path_prefix, sub_queries):
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
            # a blank facet adds nothing: left out, as an empty list is (a non-string is still an error)
            subs = [check_query(q)[0] for q in sub_queries if not (isinstance(q, str) and not q.strip())]
        return active, prefix, subs

    def debug_report(self, ranked: Ranked, stages: StageLog, notes: list[str], tokens: int) -> Debug:
        rewrite = ranked.understanding.as_dict()
        if notes:
            rewrite["notes"] = notes
        return Debug(rewrite=rewrite, candidate_pool=ranked.pool_size, graph_added=ranked.graph_added,
                     reranker=ranked.reranker, assembled_tokens=tokens, query_class=ranked.qclass.name,
                     anchors=ranked.anchors.as_dict(), stages=stages.stages)


_STORAGE_CAUSES = ((errno.ENOSPC, "no space left on the device holding the index"),
                   (errno.EDQUOT, "the disk quota of the index is used up"),
                   (errno.EROFS, "the index is on a read-only file system"),
                   (errno.EACCES, "permission denied writing the index"))
_STORAGE_WORDS = (("disk is full", "no space left on the device holding the index"),
                  ("no space left", "no space left on the device holding the index"),
                  ("index writer was killed", "the lexical index's writer failed (often a full disk)"),
                  ("read-only", "the index is on a read-only file system"),
                  ("permission denied", "permission denied writing the index"))


def storage_failure(exc: BaseException) -> str | None:
    """What a failed index write says about the storage under it (full, read-only, no permission),
    from the errno or, for SQLite and Tantivy, which wrap it, from their message; None otherwise."""
    for e in (exc, exc.__cause__, exc.__context__):
        if isinstance(e, OSError) and e.errno is not None:
            for code, cause in _STORAGE_CAUSES:
                if e.errno == code:
                    return cause
    text = str(exc).lower()
    return next((cause for words, cause in _STORAGE_WORDS if words in text), None)


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


def node_out(graph: CodeGraph, i: int, root: str) -> GraphNode:
    n = graph.nodes[i]
    return GraphNode(id=n.id, kind=n.kind, name=n.qualname if n.kind != "file" else n.path, root=root, path=n.path,
                     start_line=n.start_line, end_line=n.end_line)
