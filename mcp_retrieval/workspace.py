"""A workspace: one or several roots answered as one. The tools the server exposes live here.

Each root is an `Engine` with its own index directory, watcher, manifest, graph and history (a
root can be added or removed without touching the others; the embedding cache is shared). A
question is ranked in every root asked (`roots`, default all), the pools are merged by score
into one ranking, and one window or packet is built from it; every chunk, item and graph node
says which `root` it is in, and `path` stays relative to that root. With a single root the
answers are exactly the one-root answers (plus `root`).

Session stubs are keyed by content hash in one register for the whole workspace (the first
root's), so a chunk delivered from any root is a stub in every later call of that session.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import sqlite3
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from mcp_retrieval import quiet, rules
from mcp_retrieval import assemble, closure, continuation, corpus_map, file_rank, file_scorer, lead_chunk, scoring
from mcp_retrieval.cross_roots import CrossRoots
from mcp_retrieval.indexers.analysis import terms
from mcp_retrieval.engine import HISTORY_RELATIONS, TASKS, Engine, Gathered, node_out, storage_failure
from mcp_retrieval.freshness import Fresh
from mcp_retrieval.models import (ChunkOut, ContextResult, GraphEdge, GraphResult, IndexStatus, Know, Miss, PacketItem,
                                  PacketResult, ReindexResult, RootStatus, SignatureOut)
from mcp_retrieval.retrieve import Candidate
from mcp_retrieval.sampling import HostOutcome
from mcp_retrieval.stages import StageLog
from mcp_retrieval.validate import BadRequest, check_int, check_query, check_session, check_turns

MIN_ROOT_POOL = 20  # candidates each root ranks at least, however many roots share the pool
MAP_SHARE = 0.2  # of a broad question's budget, for the corpus map ahead of the chunks
DEFAULT_MAX_CHUNKS = 20  # full chunks a window holds at most when the caller names no number
MAX_CHUNKS_LIMIT = 64  # the most `max_chunks` may ask for, and the most the budget may allow
# ... or one per this many tokens of the budget when that is more (and the question class's cap
# rises the same way): a wide window of short definitions otherwise stops at its count with a
# third of its budget unused (BENCHMARKS 28d). None: the fixed caps alone.
WEAK_LEAD_CONFIDENCE = 0.2  # a miss's packet items: below `reread`'s 0.5, so none says `trust`
# A miss's leads must hold the question's words or names: a dense-only neighbour of an unanswered
# question is noise (every question has nearest vectors).
WORD_TIERS = frozenset({"lexical", "title", "code", "path", "symbol", "message", "history"})

__all__ = ["Workspace"]

log = logging.getLogger(__name__)


class Workspace:
    def __init__(self, engines: Sequence[Engine], reload: Callable[[], object] | None = None):
        """`reload`: called by `reindex`; returns the configuration's `roots.WorkspaceSpec` as it
        now reads, so roots can be added or removed live."""
        if not engines:
            raise ValueError("a workspace needs at least one root")
        names = [e.name for e in engines]
        if len(set(names)) != len(names):
            raise ValueError(f"root names must be unique; got {names}")
        self.engines = {e.name: e for e in engines}
        self.sessions = engines[0].sessions
        self.sampling = engines[0].sampling
        self._reload = reload
        self.store_state: str | None = None  # a replica's view of its object store (see `replica`)
        self._pool: ThreadPoolExecutor | None = None
        self._cross = CrossRoots()
        self.on_added: Callable[[Engine], None] | None = None  # start its indexing and watcher
        self.on_removed: Callable[[Engine], None] | None = None  # stop its watcher
        self.open_root: Callable[..., Engine] | None = None  # (RootSpec, settings) -> its Engine, or CannotOpen
        # Roots listed but not served, each with why (a folder not cloned here, an index that
        # cannot be opened): shown in `index://status` and named when a call asks for one.
        self.unavailable: dict[str, str] = {}

    @classmethod
    def single(cls, engine: Engine) -> "Workspace":
        return cls([engine])

    @property
    def multi(self) -> bool:
        return len(self.engines) > 1

    @property
    def rules_in_force(self) -> rules.Rules:
        """The rules in force for the workspace's own steps (file ranking, assembly): its first
        root's; each root's stages run under its own (`Engine.gather`)."""
        return next(iter(self.engines.values())).config.rules

    # --- roots ---------------------------------------------------------------------------------
    def reload_roots(self) -> list[str]:
        """Apply the configuration's current roots: open the new ones, close the dropped ones (never
        the last). Returns the names added."""
        if self._reload is None:
            return []
        spec = self._reload()
        self.unavailable = dict(spec.unavailable)
        return self._apply(self._wanted(spec.roots, spec.settings))

    def adopt(self, folders: list[Path]) -> list[str]:
        """Make these folders the workspace's roots (an MCP client's roots): open the new ones, close
        the others (never the last). Returns the names added."""
        if self.open_root is None:
            return []
        from mcp_retrieval.roots import unique_names

        self.unavailable = {}
        return self._apply(self._wanted(unique_names([(None, f) for f in folders]), None))

    def _wanted(self, root_specs, settings) -> dict[str, Engine | None]:
        """Each root to serve: None if it is open at that folder, else its new Engine. One that
        cannot be opened is left out (a dropped root is closed by `_apply`) and named in `unavailable`."""
        open_paths = {e.name: e.config.root for e in self.engines.values()}
        wanted, failed = open_roots(root_specs, lambda r: self.open_root(r, settings),
                                    is_open=lambda r: open_paths.get(r.name) == r.path)
        self.unavailable.update(failed)
        return wanted

    def _apply(self, wanted: dict[str, Engine | None]) -> list[str]:
        added = []
        for name, engine in wanted.items():
            if name in self.engines and engine is not None:  # same name, another folder: keep the open one
                engine.close()
            elif name not in self.engines and engine is not None:
                self.engines[name] = engine
                added.append(name)
                if self.on_added is not None:
                    self.on_added(engine)
        for name in [n for n in self.engines if n not in wanted]:
            if len(self.engines) > 1:
                engine = self.engines.pop(name)
                if self.on_removed is not None:
                    self.on_removed(engine)
                engine.close()
        return added

    def pick(self, roots: list[str] | None) -> list[Engine]:
        if roots is None:
            return list(self.engines.values())
        if not isinstance(roots, list) or not roots or not all(isinstance(r, str) for r in roots):
            raise BadRequest(f"roots must be a non-empty list of root names: {', '.join(self.engines)}")
        picked = []
        for r in roots:  # a name, or any unambiguous `/`-suffix of one (`sympy/sympy` for github.com/sympy/sympy)
            found = [n for n in self.engines if n == r] or [n for n in self.engines if n.endswith("/" + r)]
            if not found and r in self.unavailable:
                raise BadRequest(f"root {r!r} is not served: {self.unavailable[r]}")
            if len(found) != 1:
                problem = "ambiguous" if found else "unknown"
                raise BadRequest(f"{problem} root {r[:200]!r}; this workspace has {', '.join(list(self.engines)[:20])}")
            picked.append(self.engines[found[0]])
        return list(dict.fromkeys(picked))

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
        for engine in self.engines.values():
            engine.close()

    # --- tools ---------------------------------------------------------------------------------
    def status(self) -> IndexStatus:
        status = self._status()
        status.store = self.store_state
        status.unavailable = [f"{name}: {why}" for name, why in self.unavailable.items()] or None
        return status

    @property
    def vectors_off(self) -> bool:
        """No root embeds: lexical search only, by configuration or for want of the model."""
        return all(e.embedder is None for e in self.engines.values())

    def _status(self) -> IndexStatus:
        parts = {name: e.status() for name, e in list(self.engines.items())}
        if not self.multi:
            return next(iter(parts.values()))
        states = {s.state for s in parts.values()}
        state = next((s for s in ("indexing", "lexical_only", "empty") if s in states), "ready")
        stamps = [s.last_updated for s in parts.values() if s.last_updated]
        first = next(iter(parts.values()))
        return IndexStatus(version=first.version, files=sum(s.files for s in parts.values()),
                           chunks=sum(s.chunks for s in parts.values()),
                           pending_changes=sum(s.pending_changes for s in parts.values()),
                           vectors_pending=sum(s.vectors_pending for s in parts.values()),
                           last_updated=max(stamps) if stamps else None, state=state,
                           roots=[RootStatus(name=n, path=str(self.engines[n].config.root), files=s.files,
                                             chunks=s.chunks, pending_changes=s.pending_changes,
                                             vectors_pending=s.vectors_pending, state=s.state)
                                  for n, s in parts.items()])

    def reindex(self, paths: list[str] | None = None, full: bool = False, wait: bool = True, progress=None,
                roots: list[str] | None = None) -> ReindexResult:
        """Bring roots up to date; re-reads the workspace configuration first, so a root added
        there since the start is opened and (without `roots`) indexed alone."""
        added = self.reload_roots()
        engines = self.pick(roots if roots is not None or not added else added)
        if len(engines) == 1:
            result = engines[0].reindex(paths, full=full, wait=wait, progress=progress)
            if self.multi:  # the workspace's status, not only this root's
                result.index = self.status()
            return result
        if paths is not None:
            raise BadRequest("paths are relative to one root: pass roots with a single name alongside paths")
        results = [e.reindex(None, full=full, wait=wait, progress=progress) for e in engines]
        total = results[0].model_copy()
        for r in results[1:]:
            for key in ("files_scanned", "files_changed", "files_removed", "chunks_added", "chunks_removed",
                        "chunks_embedded", "embeddings_reused"):
                setattr(total, key, getattr(total, key) + getattr(r, key))
            total.duration_ms += r.duration_ms
            total.warnings += r.warnings
            for reason, n in r.skipped.items():
                total.skipped[reason] = total.skipped.get(reason, 0) + n
        total.index = self.status()
        return total

    @quiet.answers
    def query_graph(self, node: str, relation: str = "neighbors", depth: int = 1, limit: int = 50,
                    kind: str | None = None, roots: list[str] | None = None) -> GraphResult:
        engines = self.pick(roots)
        results = [e.query_graph(node, relation=relation, depth=depth, limit=limit, kind=kind) for e in engines]
        found = [r for r in results if not r.miss]
        if not found:
            miss = results[0].miss
            miss.suggestions = list(dict.fromkeys(s for r in results for s in (r.miss.suggestions or [])))[:10]
            return GraphResult(miss=miss)
        merged = GraphResult(truncated=any(r.truncated for r in found))
        for r in found:
            merged.nodes.extend(r.nodes)
            merged.edges.extend(r.edges)
        if relation in HISTORY_RELATIONS:  # one hop in each root's own history
            if relation == "history":
                merged.commits = sorted((c for r in found for c in r.commits or []), key=lambda c: c.date,
                                        reverse=True)[:limit]
            merged.history = found[0].history if len(found) == 1 else \
                "; ".join(f"{e.name}: {r.history}" for e, r in zip(engines, results) if not r.miss)
            return merged
        if len(engines) > 1 and kind in (None, "file", "module"):
            self._cross_hop(merged, engines, node, relation)
        merged.nodes = merged.nodes[:limit] if len(merged.nodes) > limit else merged.nodes
        return merged

    def _cross_hop(self, merged: GraphResult, engines: list[Engine], node: str, relation: str) -> None:
        """Import edges into or out of the node asked about that cross to another root (one hop)."""
        outward = relation in ("imports", "neighbors")
        inward = relation in ("imported_by", "references", "neighbors")
        if not (outward or inward):
            return
        by_name = {e.name: e for e in engines}
        starts = {e.name: set(e.graph_starts(node, "imports")[1]) for e in engines}  # crossings are file to file
        seen = {(n.root, n.id) for n in merged.nodes}
        for edge in self._cross.edges(engines):
            if outward and edge.source in starts[edge.source_root]:
                far_root, far = edge.target_root, edge.target
            elif inward and edge.target in starts[edge.target_root]:
                far_root, far = edge.source_root, edge.source
            else:
                continue
            src_graph, dst_graph = by_name[edge.source_root].graph(), by_name[edge.target_root].graph()
            merged.edges.append(GraphEdge(source=src_graph.nodes[edge.source].id, target=dst_graph.nodes[edge.target].id,
                                          type="import", source_root=edge.source_root, target_root=edge.target_root))
            far_graph = by_name[far_root].graph()
            if (far_root, far_graph.nodes[far].id) not in seen:
                seen.add((far_root, far_graph.nodes[far].id))
                merged.nodes.append(node_out(far_graph, far, far_root))

    @quiet.answers
    @rules.enforced(lambda self: self.rules_in_force)
    def context(self, query: str, session_id: str | None = None, budget_tokens: int = 6000, max_chunks: int | None = None,
                path_prefix: str | None = None, active_files: list[str] | None = None,
                sub_queries: list[str] | None = None, ignore_delivered: bool = False, debug: bool = False,
                host: HostOutcome | None = None, roots: list[str] | None = None,
                render: str = "frontier", recent_turns: list[str] | None = None) -> ContextResult:
        """`host`: what the host-sampling stage produced (the server asks before calling this)."""
        query, notes = check_query(query)
        if not isinstance(render, str) or render not in assemble.RENDERS:
            raise BadRequest(f"render must be one of {', '.join(assemble.RENDERS)}; got {str(render)[:40]!r}")
        budget_tokens = check_int(budget_tokens, "budget_tokens", 256, 64000)
        max_chunks = None if max_chunks is None else check_int(max_chunks, "max_chunks", 1, MAX_CHUNKS_LIMIT)
        session_id = check_session(session_id)
        stages = StageLog()
        parts = self._gather(query, active_files, path_prefix, sub_queries, stages, host, roots, for_packet=False,
                             recent_turns=check_turns(recent_turns))
        outcome, candidates, lead = _merge(parts)
        window, signatures = assemble.Window(), []
        with stages.run("assemble") as st:
            if isinstance(outcome, Miss):
                st["status"], st["detail"] = "skipped", "miss: the marker (and, for ask_user, the map) only"
            else:
                candidates, file_order = self._weigh_files(query, candidates, lead)
                if rules.current().continuations:
                    candidates = continuation.with_continuations(candidates, budget_tokens, self._stored_pieces)
                tracked = session_id is not None and not ignore_delivered
                delivered = self.sessions.delivered(session_id) if tracked else set()
                earlier = self.sessions.earlier_texts(session_id) if tracked else {}
                cap = chunk_cap(budget_tokens, max_chunks)
                if render == "compact":
                    cap = min(cap, assemble.COMPACT_MAX_CHUNKS)
                config = lead.engine.config
                layout = dataclasses.replace(assemble.RENDERS[render], show_root=self.multi, seat_floor=config.seat_floor)
                head = head_line(outcome)
                if config.corpus_map and lead.ranked.qclass.name == "broad":  # an overview question: the map leads
                    head = "\n".join(filter(None, [head, self._map(roots, int(MAP_SHARE * budget_tokens))]))
                window = assemble.assemble(candidates, budget=budget_tokens, max_chunks=cap, delivered=delivered,
                                           lam=config.mmr_lambda, near_duplicate=config.near_duplicate,
                                           head=head, query_terms=frozenset(terms(query)), layout=layout,
                                           earlier=earlier, file_order=file_order)
                st["detail"] = (f"{len(window.placed)} chunks, {sum(p.stub for p in window.placed)} stubs, "
                                f"{sum(p.excerpt for p in window.placed)} excerpts, {sum(p.diff for p in window.placed)} "
                                f"diffs, {window.tokens} tokens")
        if window.placed and lead.engine.config.signatures:
            with stages.run("closure") as st:
                window, signatures = self._closure(window, budget_tokens)
                st["detail"] = f"{len(signatures)} signatures; {budget_tokens - window.tokens} tokens left"
        placed = window.placed
        if session_id is not None and not ignore_delivered:  # a diff leaves the session holding the new text
            whole = [p.candidate for p in placed if not p.stub and not p.excerpt]
            self.sessions.record(session_id, [c.chunk.sha256 for c in whole])
            self.sessions.remember(session_id, [((c.root, c.chunk.path, c.chunk.symbol, c.chunk.start_line),
                                                 (c.chunk.sha256, c.chunk.start_line, c.chunk.text))
                                                for c in whole if c.chunk.symbol])
        if not placed:
            reason, escalate = getattr(outcome, "reason", "abstain"), getattr(outcome, "escalate_to", "ask_user")
            text = f"{head_line(outcome)}\n{assemble.no_match_window(reason, escalate)}"
            if escalate == "ask_user" and lead.engine.config.corpus_map:  # what there is, to ask the user about
                text = "\n".join(filter(None, [text, self._map(roots, budget_tokens - assemble.budget_tokens(text) - 1)]))
            window = assemble.Window([], text, assemble.budget_tokens(text))
        status = self.status()  # a settled one says nothing new: sent only when asked for (debug)
        result = ContextResult(chunks=[_chunk_out(p, several_roots=self.multi, debug=debug) for p in placed],
                               signatures=[SignatureOut(root=s.root if self.multi else None, path=s.path, line=s.line,
                                                        symbol=s.symbol, text=s.text) for s in signatures] or None,
                               index=status if debug or not status.settled(self.vectors_off) else None)
        result.window = window.text
        _set_outcome(result, outcome, debug)
        if debug and lead.ranked is not None:
            result.debug = lead.engine.debug_report(lead.ranked, stages, notes, window.tokens)
        return result

    def _stored_pieces(self, root: str, chunk) -> list:
        """The stored chunks of a chunk's definition, for `continuation` (none for a file changed
        since it was indexed: its pool chunks were read from disk, and the store's pieces may no
        longer match them)."""
        engine = self.engines[root]
        if chunk.path in engine.pending_paths:
            return []
        return engine.store.chunks_of_definition(chunk.path, chunk.symbol, chunk.kind)

    @staticmethod
    def _weigh_files(query: str, candidates: list[Candidate], lead: Gathered
                     ) -> tuple[list[Candidate], dict[file_rank.FileKey, float] | None]:
        """`context`'s pool with each chunk weighed by its file: by the learned file ranker's share
        (`packet`'s model), or without one by the hand-set file evidence (BENCHMARKS 54i); and, when
        the model weighed, the order the window shows its files in (`file_rank.window_order`, 65d)."""
        model = _file_model(lead)
        if model is None or not rules.current().context_file_ranker:
            return file_rank.with_file_evidence(candidates), None
        shares = file_scorer.file_scores(model, query, candidates)
        order = file_rank.window_order(candidates, shares) if rules.current().window_files_by_ranker else None
        return file_rank.with_learned_files(candidates, shares), order

    def _closure(self, window: assemble.Window, budget: int) -> tuple[assemble.Window, list]:
        """The window with the signatures its bodies depend on in the room left (`closure`)."""
        room = budget - window.tokens
        if room < closure.MIN_ROOM:
            return window, []
        shown = [p for p in window.placed if not p.stub]
        found = [s for root in dict.fromkeys(p.candidate.root for p in shown)
                 for s in closure.dependencies(self.engines[root], shown)]
        kept = closure.fitting(found, room, self.multi)
        while kept:  # costed piecewise; the whole is counted once more (the ceiling is exact)
            full = f"{window.text}\n{closure.render(kept, self.multi)}"
            if (tokens := assemble.budget_tokens(full)) <= budget:
                return assemble.Window(window.placed, full, tokens), kept
            kept = kept[:-1]
        return window, []

    @quiet.answers
    @rules.enforced(lambda self: self.rules_in_force)
    def packet(self, query: str, session_id: str | None = None, max_items: int = 12,
               active_files: list[str] | None = None, task: str = "explain", sub_queries: list[str] | None = None,
               path_prefix: str | None = None, debug: bool = False, host: HostOutcome | None = None,
               roots: list[str] | None = None, recent_turns: list[str] | None = None) -> PacketResult:
        query, notes = check_query(query)
        max_items = check_int(max_items, "max_items", 1, 50)
        check_session(session_id)
        if not isinstance(task, str) or task not in TASKS:
            raise BadRequest(f"task must be one of {', '.join(TASKS)}; got {task!r}")
        stages = StageLog()
        parts = self._gather(query, active_files, path_prefix, sub_queries, stages, host, roots, for_packet=True,
                             recent_turns=check_turns(recent_turns))
        outcome, candidates, lead = _merge(parts)
        if len(parts) > 1:  # several roots: one pool's worth of the best
            candidates = candidates[:lead.engine.config.pool_size]
        by_root = {p.engine.name: p.engine for p in parts}
        model = _file_model(lead)
        explained: dict = {}  # file -> its feature contributions, filled with debug
        with stages.run("files") as st:
            learned = (lambda kept: file_scorer.file_scores(model, query, kept, explained if debug else None)) \
                if model is not None else None
            candidates = file_rank.rank_files(candidates, per_file=max(2, -(-max_items // 4)),
                                              near_duplicate=lead.engine.config.near_duplicate,
                                              learned=learned,
                                              within=_chunk_order(query) if model is not None else None)
            st["detail"] = f"{len({(c.root, c.chunk.path) for c in candidates[:max_items]})} files in the first " \
                           f"{max_items} items, ranked by the {'learned' if model else 'hand-set'} file score"
        items: list[PacketItem] = []
        # On a weak-evidence miss the pointers are still returned, as leads to check (low confidence,
        # action `reread`): packet hands the agent places to read, never text to answer from, and an
        # empty list hides leads a grep would take minutes to find. Other misses have no pool.
        if not isinstance(outcome, Miss) or outcome.reason == "abstain":
            head = candidates[:max_items]
            with stages.run("freshness") as st:
                fresh = {}
                for root in {c.root for c in head}:
                    checked = by_root[root].freshness.check([c.chunk.path for c in head if c.root == root])
                    fresh.update({(root, path): state for path, state in checked.items()})
                st["detail"] = f"{sum(v != Fresh.FRESH for v in fresh.values())} stale"
            if fresh and all(v == Fresh.DELETED for v in fresh.values()):  # pointers into files that are gone
                outcome = Miss(reason="stale", escalate_to="reindex",
                               detail=f"the {len(fresh)} matching files were deleted or moved since indexing")
                head = []
            # an item's confidence is the answer's, scaled by its place's standing in the file order
            # (its file's score against the first file's, halved for a file's further chunks), so
            # it never rises down the list and a file ranked low is not `trust`ed for a high chunk score
            top = max((c.standing or 0.0 for c in head), default=0.0) or 1.0
            for c in head:
                state = fresh[(c.root, c.chunk.path)]
                conf = round(_packet_confidence(outcome) * (c.standing or 0.0) / top, 3)
                action = "refresh" if state != Fresh.FRESH else \
                    "reread" if task in ("edit", "debug") or conf < 0.5 else "trust"
                items.append(PacketItem(root=c.root, path=c.chunk.path, start_line=c.chunk.start_line,
                                        end_line=c.chunk.end_line, symbol=c.chunk.symbol, score=round(c.score, 4),
                                        confidence=conf, tiers=c.tiers, content_sha256=c.chunk.sha256,
                                        fresh=state == Fresh.FRESH, action=action, tokens=c.chunk.tokens,
                                        why=_why(c, state), contributions=explained.get((c.root, c.chunk.path)),
                                        terms=scoring.terms(c) if debug else None))
        result = PacketResult(items=items, index=self.status())
        _set_outcome(result, outcome, debug)
        if debug and lead.ranked is not None:
            result.debug = lead.engine.debug_report(lead.ranked, stages, notes, 0)
        return result

    def _map(self, roots: list[str] | None, max_tokens: int) -> str:
        """The corpus map of the roots asked (each an equal share of `max_tokens`)."""
        engines = self.pick(roots)
        share = max_tokens // len(engines)
        return "\n".join(filter(None, (corpus_map.build(e.name, e.store.all_paths(), e.graph(), share) for e in engines)))

    def _gather(self, query, active_files, path_prefix, sub_queries, stages, host, roots, *,
                for_packet: bool, recent_turns: list[str] = ()) -> list[Gathered]:
        engines = self.pick(roots)
        scopes = [e.check_scope(active_files, path_prefix, sub_queries) for e in engines]  # bad input: fail first
        if len(engines) == 1:
            active, prefix, subs = scopes[0]
            return [engines[0].gather(query, active, subs, prefix, stages, for_packet=for_packet, host=host,
                                      recent_turns=recent_turns)]
        logs = [StageLog() for _ in engines]  # several roots: each one's stages reported with its name
        # each root ranks its share of one pool: the merged pool is one pool's size, so two roots
        # cost about what one does in fusion and rerank (the best of each root still leads)
        share = max(MIN_ROOT_POOL, engines[0].config.pool_size // len(engines))

        def one(i: int) -> Gathered:
            active, prefix, subs = scopes[i]
            return engines[i].gather(query, active, subs, prefix, logs[i], for_packet=for_packet, host=host,
                                     recent_turns=recent_turns, pool_size=share)

        if self._pool is None:  # kept for the workspace's life: starting threads per call costs more than it saves
            self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="mcp-retrieval-root")
        parts = list(self._pool.map(one, range(len(engines))))  # Tantivy, SQLite, numpy release the GIL
        for engine, log in zip(engines, logs):
            for stage in log.stages:
                stage.name = f"{engine.name}:{stage.name}"
            stages.stages.extend(log.stages)
        return parts


def _merge(parts: list[Gathered]) -> tuple[Know | Miss, list[Candidate], Gathered]:
    """One ranking from every root's pool; the decision of the most confident root that knows (a
    root that knows nothing does not veto one that does), else the most telling miss."""
    knowing = [p for p in parts if isinstance(p.outcome, Know)]
    if knowing:
        lead = max(knowing, key=lambda p: p.outcome.confidence)
        return lead.outcome, _ranked(knowing), lead
    order = ("stale", "abstain", "indexing", "empty_index", "not_found")
    lead = min(parts, key=lambda p: order.index(p.outcome.reason) if p.outcome.reason in order else len(order))
    # an abstaining pool is kept for packet's weak leads; context renders nothing on a miss
    weak = [p for p in parts if p.outcome.reason == "abstain"] if lead.outcome.reason == "abstain" else []
    return lead.outcome, [c for c in _ranked(weak) if set(c.tiers) & WORD_TIERS], lead


def _ranked(parts: list[Gathered]) -> list[Candidate]:
    return sorted((c for p in parts for c in p.candidates), key=lambda c: (-c.score, c.root, c.chunk.id))


def head_line(outcome: Know | Miss) -> str:
    """The first line of `context`'s text: the decision, inside the budget like everything else."""
    if isinstance(outcome, Miss):
        return f"miss: {outcome.reason}; next: {outcome.escalate_to}" + (f" ({outcome.detail})" if outcome.detail else "")
    return f"know (confidence {outcome.confidence:.2f})"


def _set_outcome(result, outcome: Know | Miss, debug: bool) -> None:
    """The decision; a `know`'s evidence only when debugging (models.Know)."""
    if isinstance(outcome, Miss):
        result.miss = outcome
    else:
        result.know = outcome if debug else outcome.model_copy(
            update={"top_score": None, "score_gap": None, "lexical_dense_agree": None, "path_match": None})


def _chunk_out(p: assemble.Placed, *, several_roots: bool, debug: bool) -> ChunkOut:
    """The root only when the window names roots; the ranking evidence only when debugging."""
    c = p.candidate
    evidence = dict(score=round(c.score, 4), terms=scoring.terms(c), tiers=c.tiers, content_sha256=c.chunk.sha256,
                    tokens=assemble.budget_tokens(p.text) if p.excerpt or p.diff else c.chunk.tokens) if debug else {}
    return ChunkOut(root=c.root if several_roots else None, path=c.chunk.path, start_line=c.chunk.start_line,
                    end_line=c.chunk.end_line, symbol=c.chunk.symbol, text=p.text,
                    delivered=p.stub, excerpt=p.excerpt, diff=p.diff, **evidence)


def _file_model(lead: Gathered) -> file_scorer.FileRanker | None:
    """The learned file ranker both tools weigh files by, unless the lead root's settings ask for
    the hand-set score (`MCP_RETRIEVAL_FILE_RANKER=hand`) or none could be loaded."""
    return file_scorer.shipped() if lead.engine.config.file_ranker else None


def _chunk_order(query: str):
    """How `packet` orders each file's chunks beside the learned file ranker: the learned order
    (`lead_chunk`), or by score (None) when it is switched off or could not be loaded."""
    model = lead_chunk.shipped() if rules.current().learned_chunk_order else None
    return lead_chunk.within_files(model, query) if model is not None else None


def _packet_confidence(outcome: Know | Miss) -> float:
    """The confidence of the best item: the answer's, or a fixed low one for the leads of a miss."""
    return outcome.confidence if isinstance(outcome, Know) else WEAK_LEAD_CONFIDENCE


def _why(c: Candidate, state: Fresh) -> str:
    parts = [f"matched by {', '.join(c.tiers) or 'fusion'}", *c.why]
    if state == Fresh.CHANGED:
        parts.append("file changed on disk since indexing: reread it")
    elif state == Fresh.DELETED:
        parts.append("file deleted since indexing")
    return "; ".join(dict.fromkeys(parts))


class CannotOpen(ValueError):
    """A root cannot be opened: a setting is invalid, or its index or cache folder cannot be
    created or opened (a read-only place, a file in the way); the message says what to change."""


def open_roots(root_specs, open_one: Callable[[object], Engine], is_open: Callable[[object], bool] = lambda r: False
               ) -> tuple[dict[str, Engine | None], dict[str, str]]:
    """({name: its new Engine, or None when `is_open`}, {name: why it cannot be opened}): one root
    that cannot be opened is left out with a warning, so the others are served."""
    opened: dict[str, Engine | None] = {}
    failed: dict[str, str] = {}
    for r in root_specs:
        if is_open(r):
            opened[r.name] = None
            continue
        try:
            opened[r.name] = open_one(r)
        except CannotOpen as exc:
            failed[r.name] = str(exc)
            log.warning("root %s is not served: %s", r.name, exc)
    return opened, failed


def open_workspace(spec, *, index_dir: Path | None = None, embedder="auto", pull_from: str | None = None,
                   **overrides) -> Workspace:
    """Engines for a `roots.WorkspaceSpec` (each root its own index directory; `index_dir` only for
    a single root), with the configuration file re-read on `reindex` when there is one.
    `pull_from` (s3://BUCKET/PREFIX): an empty local index first restores the nearest published
    snapshot (`shared_index.pull`; a missing or unreachable store only warns)."""
    from mcp_retrieval.config import Config, default_index_dir
    from mcp_retrieval.roots import read_config

    started_alone = len(spec.roots) == 1
    env_index = os.environ.get("MCP_RETRIEVAL_INDEX_DIR")

    def index_for(root_spec) -> Path | None:
        """One index folder, one root. A workspace started with one root keeps its index where
        `--index-dir` or MCP_RETRIEVAL_INDEX_DIR say (None: Config reads them), and a root added
        later goes to the default place; started with several, each root's index is a folder of its
        own inside MCP_RETRIEVAL_INDEX_DIR, else in the default place (two roots in one folder
        answered from each other's index)."""
        if started_alone and root_spec.path == spec.roots[0].path:
            return index_dir
        return default_index_dir(root_spec.path, None if started_alone or not env_index else
                                 Path(env_index).expanduser().resolve())

    def engine_for(root_spec, settings) -> Engine:
        try:
            config = Config.resolve(root_spec.path, index_for(root_spec), **{**settings, **overrides})
        except ValueError as exc:
            raise CannotOpen(str(exc)) from exc
        if pull_from:
            from mcp_retrieval.indexers.embed import EmbeddingCache
            from mcp_retrieval.shared_index import pull

            outcome = pull(pull_from, config.root, config.index_dir,
                           EmbeddingCache(config.cache_dir / "embeddings.sqlite"))
            log.warning("%s: %s", root_spec.name, outcome)
        nonlocal embedder
        try:
            engine = Engine(config, embedder=embedder, name=root_spec.name)
        except (OSError, sqlite3.Error, ValueError) as exc:  # say which folder and why, not a traceback
            if isinstance(exc, OSError) and exc.filename:
                cause = f"{exc.strerror or exc}: {exc.filename}"
            elif (cause := storage_failure(exc)) is None:  # a full disk under the repair of a half-written index
                raise
            raise CannotOpen(f"cannot open the index of {root_spec.name} at {config.index_dir} ({cause}); "
                                "free space there, or point --index-dir or MCP_RETRIEVAL_INDEX_DIR (and "
                                "MCP_RETRIEVAL_CACHE_DIR) at a folder you can write") from exc
        if embedder == "auto":
            embedder = engine.embedder  # one model in memory for every root, added later ones too
        return engine

    # With several roots, one that cannot be opened is left out with a warning and the others are
    # served; a workspace of one root, or of none that opens, is refused with the reason.
    if started_alone:
        engines, unavailable = [engine_for(spec.roots[0], spec.settings)], dict(spec.unavailable)
    else:
        opened, failed = open_roots(spec.roots, lambda r: engine_for(r, spec.settings))
        engines, unavailable = list(opened.values()), {**spec.unavailable, **failed}
    if not engines:
        raise CannotOpen(next(iter(unavailable.values())) if len(unavailable) == 1 else
                         "no root can be opened: " + "; ".join(f"{n}: {why}" for n, why in unavailable.items()))

    def reload():
        try:
            return read_config(spec.config_file)
        except ValueError as exc:
            raise BadRequest(f"workspace configuration unreadable: {exc}") from None

    workspace = Workspace(engines, reload if spec.config_file is not None else None)
    workspace.open_root = lambda root_spec, settings=None: engine_for(
        root_spec, spec.settings if settings is None else settings)
    workspace.unavailable = unavailable
    return workspace


def chunk_cap(budget: int, asked: int | None) -> int:
    """How many full chunks a window may hold: DEFAULT_MAX_CHUNKS, or one per `Rules.tokens_per_chunk`
    tokens of the budget when that is more; the caller's `max_chunks` when it is lower."""
    per_chunk = rules.current().tokens_per_chunk
    by_budget = min(MAX_CHUNKS_LIMIT, budget // per_chunk) if per_chunk else 0
    limit = max(DEFAULT_MAX_CHUNKS, by_budget)
    return limit if asked is None else min(asked, limit)
