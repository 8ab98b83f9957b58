"""The answer pipeline up to a ranked pool: classify -> extract -> understand -> retrieve ->
fuse -> graph -> rerank. `context` and `packet` share it; assembly and the decision follow
in `engine`. Each stage is timed and reported; optional stages degrade to pass-through."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mcp_retrieval import rules
from mcp_retrieval.indexers.graph import CodeGraph
from mcp_retrieval import fusion, graph_fusion, scoring
from mcp_retrieval.classify import QueryClass, classify
from mcp_retrieval.config import Config
from mcp_retrieval.extract import Anchors, extract
from mcp_retrieval.file_features import is_long_question
from mcp_retrieval.question_parts import CODE_NAME, question_code, question_title, with_joined_pairs, \
    without_environment, without_template_comments
from mcp_retrieval.rerank import RerankSignals, signals_for
from mcp_retrieval.retrieve import Candidate, Retriever
from mcp_retrieval.stages import StageLog
from mcp_retrieval.sampling import HostOutcome
from mcp_retrieval.understand import Understanding, deterministic, with_host

CODE_TIER_LANGUAGES = ("python",)  # where the `code` tier was measured to help (BENCHMARKS 17b)
GRAPH_SEED_CHUNKS = 8
GRAPH_CAP = 8
PATH_PREFIX_BOOST = 1.2
DENSE_TIERS = ("dense", "dense_title")  # in `packet` they add to the pool, never push a chunk out


@dataclass
class Ranked:
    candidates: list[Candidate]
    qclass: QueryClass
    anchors: Anchors
    understanding: Understanding
    anchored_files: list[str]
    anchor_ids: set[str]
    stages: StageLog
    reranker: str = "none"
    graph_added: int = 0
    has_vectors: bool = False
    similarity_decides: bool = False  # the dense match alone may decide know/miss (Embedder.similarity_decides)
    pool_size: int = 0
    query: str = ""  # the question as the stages read it (an environment dump set aside)


def rank(query: str, *, config: Config, retriever: Retriever, graph_loader, reranker, active_files: list[str],
         sub_queries: list[str] | None, path_prefix: str | None, host: HostOutcome | None = None,
         stages: StageLog | None = None, graph: bool | None = None, history=None,
         recent_turns: Sequence[str] = (), pool_size: int | None = None, keep_plain_pool: bool = False,
         structural: bool = True) -> Ranked:
    stages = stages or StageLog()
    set_aside = comments = 0
    if rules.current().template_comments_set_aside:  # the template's instructions are no part of the report
        query, comments = without_template_comments(query)
    if rules.current().environment_set_aside:  # the reporter's installation is no part of the subject
        query, set_aside = without_environment(query)
    with stages.run("classify") as st:
        qclass = classify(query)
        st["detail"] = qclass.name
    with stages.run("extract") as st:
        anchors = extract(query, active_files)
        st["detail"] = f"{len(anchors.paths)} paths, {len(anchors.identifiers)} identifiers" + (
            f"; {set_aside} lines of an environment dump set aside" if set_aside else "") + (
            f"; {comments} template comments set aside" if comments else "")
    understanding = _understand_stages(query, sub_queries, host, stages, config.decompose)
    ranked: dict[str, list[tuple[str, float]]] = {}
    pool = pool_size or config.pool_size
    title = (question_title(query) if config.tier_weights.get("title") or config.tier_weights.get("dense_title")
             else None)
    weights = fused_weights(query, title, config.tier_weights)  # a copy only when the title rule applies
    with stages.run("lexical") as st:
        ranked["lexical"] = _merge_best(retriever.lexical_hits(q, pool)
                                        for q in [query, *understanding.more_lexical_queries])
        st["detail"] = f"{len(ranked['lexical'])} hits"
        # a pasted issue's title names its subject in a few words that the body's many words
        # outvote in BM25: searched alone as its own tier, off at weight 0 (BENCHMARKS 15d)
        if title and weights.get("title"):
            ranked["title"] = retriever.lexical_hits(with_joined_pairs(title) if rules.current().join_title_pairs else title, pool)
            st["detail"] += f", {len(ranked['title'])} for the title"
        # the source it quotes (the calls a reporter ran) as a third, at the title's weight, and
        # in Python code only: elsewhere it cost `context` first files (BENCHMARKS 17b)
        code = question_code(query) if config.tier_weights.get("code") else None
        if code:
            ranked["code"] = _in_languages(retriever, retriever.lexical_hits(code, pool), CODE_TIER_LANGUAGES)
            st["detail"] += f", {len(ranked['code'])} for the code"
    has_vectors = retriever.vectors is not None and retriever.embedder is not None and retriever.vectors.has_rows()
    if has_vectors:
        ranked.update(_dense_tiers(retriever, [understanding.retrieval_query, *understanding.sub_queries],
                                   title if weights.get("dense_title") else None, pool, stages))
    else:
        stages.skip("dense", "no vectors yet (lexical first; vectors fill in behind)" if retriever.embedder
                    else "no embedding model")
    anchored_files: list[str] = []
    with stages.run("anchors") as st:
        symbol_hits = retriever.symbol_hits(anchors)  # first: a named file's named definitions lead its path hits
        ranked["path"], anchored_files = retriever.path_hits(anchors, query, dict(symbol_hits))
        ranked["symbol"] = symbol_hits
        if (anchors.messages or anchors.options) and config.tier_weights.get("message"):
            ranked["message"] = retriever.message_hits(anchors)
        st["detail"] = (f"{len(anchored_files)} files, {len(ranked['symbol'])} symbol chunks, "
                        f"{len(ranked.get('message', []))} chunks holding a quoted message")
    history_why: dict[str, str] = {}
    if history is None or not config.tier_weights.get("history"):
        stages.skip("history", "off" if history is None else "weight 0")
    else:
        with stages.run("history") as st:
            ranked["history"], history_why = retriever.history_hits(history, query)
            st["detail"] = f"{history.status}; {len(ranked['history'])} files"
            if not ranked["history"] and history.status.startswith("skipped"):
                st["status"] = "skipped"
    with stages.run("fusion") as st:
        ids = {t: [cid for cid, _ in hits] for t, hits in ranked.items()}
        scores = fusion.rrf(ids, weights, config.rrf_k)
        head = fusion.pool(scores, ids, weights, config.rrf_k, pool,
                           adding_only=DENSE_TIERS if keep_plain_pool else ())
        chunks = retriever.store.chunks_by_id(head)
        positions = {tier: {} for tier in ranked}  # tier -> chunk id -> (rank, raw score), best rank kept
        for tier, hits in ranked.items():
            for r, (hid, raw) in enumerate(hits, 1):
                positions[tier].setdefault(hid, (r, raw))
        candidates = []
        for cid in head:
            if cid not in chunks:  # an id from a half-finished write: ignore it
                continue
            c = Candidate(chunk=chunks[cid], fused=scores[cid])
            for tier, seen in positions.items():
                if cid in seen:
                    c.ranks[tier], c.raw[tier] = seen[cid]
            if cid in history_why:
                c.why.append(history_why[cid])
            candidates.append(c)
        st["detail"] = f"k={config.rrf_k}, pool {len(candidates)}" + (
            "; a pasted issue: its title's vector fused, not its whole text's"
            if "dense" in ranked and weights is not config.tier_weights else "")
    semantic = has_vectors and getattr(retriever.embedder, "semantic", True)
    result = Ranked(candidates, qclass, anchors, understanding, anchored_files,
                    {cid for t in ("path", "symbol", "message") for cid, _ in ranked.get(t, [])}, stages,
                    has_vectors=semantic, pool_size=len(candidates), query=query,
                    similarity_decides=semantic and getattr(retriever.embedder, "similarity_decides", True))
    _graph_stage(result, retriever, graph_loader, config, config.graph if graph is None else graph)
    signals = signals_for(query, anchored_files, qclass.name, structural)
    if recent_turns:
        signals.turn_files, signals.turn_names = _turn_anchors(retriever, recent_turns)
    _rerank_stage(result, reranker, signals, path_prefix or understanding.path_prefix)
    return result


def fused_weights(query: str, title: str | None, weights: dict[str, float]) -> dict[str, float]:
    """The tier weights `query` is fused with: `weights` itself, or for a long question with a
    title (`rules.dense_by_title`) a copy with the whole text's vector at 0. A pasted issue's
    whole text (its logs, code and template around the subject) embeds to a vector near
    everything; its title carries the meaning. That vector is still searched, as know/miss
    evidence, but not fused (BENCHMARKS 52a)."""
    if rules.current().dense_by_title and title and weights.get("dense_title") and is_long_question(query):
        return {**weights, "dense": 0.0}
    return weights


def _dense_tiers(retriever: Retriever, queries: list[str], title: str | None, pool: int,
                 log: StageLog) -> dict[str, list[tuple[str, float]]]:
    """The vector tiers: the question's start (and its sub-questions), and a pasted issue's title
    alone as its own tier — in the question's start the title's few words are outweighed by the
    paragraphs around them (BENCHMARKS 23a)."""
    ranked: dict[str, list[tuple[str, float]]] = {}
    with log.run("dense") as st:
        found = retriever.dense_hits_many([*queries, *([title] if title else [])], pool)
        ranked["dense"] = _merge_best(found[:len(queries)])
        st["detail"] = f"{len(ranked['dense'])} hits"
        if title:
            ranked["dense_title"] = found[-1]
            st["detail"] += f", {len(ranked['dense_title'])} for the title"
    return ranked


def _understand_stages(query: str, sub_queries: list[str] | None, host: HostOutcome | None,
                       stages: StageLog, decompose: bool = True) -> Understanding:
    """`decompose`: the agent's sub-queries, else the deterministic split and identifier expansion
    (free, always on). `understand`: the host model's rewrite, reported as the sampling policy
    decided (`skipped` with off | no_sampling | budget | cached, `done`, or `error`)."""
    with stages.run("decompose") as st:
        understanding = deterministic(query, sub_queries) if decompose else \
            Understanding(query, list(sub_queries or []), source="agent" if sub_queries else "none", question=query)
        st["status"] = "skipped" if understanding.source == "none" else "done"
        st["detail"] = "nothing to split or expand" if understanding.source == "none" else \
            f"{understanding.source}: {len(understanding.sub_queries)} sub-queries, " \
            f"{len(understanding.expansions)} identifier expansions"
    host = host or HostOutcome("skipped", "off")
    if host.rewrite is not None:
        understanding = with_host(understanding, query, host.rewrite)
    understanding.sampling = {"status": host.status, "reason": host.reason}
    stages.record("understand", host.status, host.ms, host.reason)
    return understanding


def _in_languages(retriever: Retriever, hits: list[tuple[str, float]], languages: tuple[str, ...]) -> list[tuple[str, float]]:
    """The hits whose chunks are in one of `languages`, in order."""
    if not hits:
        return hits
    keep = retriever.store.ids_in_languages([cid for cid, _ in hits], languages)
    return [h for h in hits if h[0] in keep]


def _merge_best(lists) -> list[tuple[str, float]]:
    """Sub-query results merged by chunk id, each keeping its best score."""
    best: dict[str, float] = {}
    order: dict[str, int] = {}
    for hits in lists:
        for rank, (cid, score) in enumerate(hits):
            if cid not in best or score > best[cid]:
                best[cid] = score
            order[cid] = min(order.get(cid, rank), rank)
    return sorted(best.items(), key=lambda kv: (order[kv[0]], -kv[1]))


def _graph_stage(result: Ranked, retriever: Retriever, graph_loader, config: Config, enabled: bool) -> None:
    if not enabled:
        result.stages.skip("graph", "off")
        return
    with result.stages.run("graph") as st:
        graph: CodeGraph | None = graph_loader()
        if graph is None or not graph.nodes:
            st["status"], st["detail"] = "skipped", "no graph yet (loading in the background)"
            return
        seeds: dict[int, float] = {}
        head = result.candidates[:GRAPH_SEED_CHUNKS]
        for rank, c in enumerate(head, 1):
            for node in _nodes_in_chunk(graph, c):
                seeds[node] = seeds.get(node, 0.0) + 1.0 / rank
        if not seeds:
            st["status"], st["detail"] = "skipped", "no definitions in the head of the pool"
            return
        expanded = graph_fusion.expand(graph, seeds, set(seeds), GRAPH_CAP * 3, hops=result.qclass.graph_hops + 1)
        in_pool = {c.chunk.id for c in result.candidates}
        added = 0
        graph_ids: list[tuple[str, float]] = []
        for node, score in expanded:
            n = graph.nodes[node]
            hit = retriever.store.chunk_at(n.path, n.start_line)
            if hit and hit[0] not in {g for g, _ in graph_ids}:
                graph_ids.append((hit[0], score))
            if len(graph_ids) >= GRAPH_CAP:
                break
        weight = config.tier_weights.get("graph", 0.5)
        new_ids = [cid for cid, _ in graph_ids if cid not in in_pool]
        stored = retriever.store.chunks_by_id(new_ids)
        by_id = {c.chunk.id: c for c in result.candidates}
        # A linked chunk found by text too keeps its place: raising it (seed 001's reordering
        # prior) cost the Python split its first file (BENCHMARKS-history 9b) and was removed.
        for r, (cid, score) in enumerate(graph_ids, 1):
            if cid in by_id or cid not in stored:
                continue
            c = Candidate(chunk=stored[cid])
            c.raw["graph"], c.ranks["graph"] = score, r
            c.fused = weight / (config.rrf_k + r)
            c.why.append("linked in the code graph to the best matches")
            result.candidates.append(c)
            by_id[cid] = c
            added += 1
        result.graph_added = added
        st["detail"] = f"{len(seeds)} seeds, {len(graph_ids)} linked, {added} added"


def _turn_anchors(retriever: Retriever, turns: Sequence[str]) -> tuple[set[str], set[str]]:
    """Files (resolved in the index) and code-shaped names the recent conversation mentions."""
    anchors = extract("\n".join(turns), [])
    _, files = retriever.path_hits(anchors, "")
    names = {n for n in anchors.identifiers if len(n) >= 4 and CODE_NAME.search(n)}
    names |= {d.rsplit(".", 1)[-1] for d in anchors.dotted if "." in d}
    return set(files), names


def _nodes_in_chunk(graph: CodeGraph, c: Candidate) -> list[int]:
    ref = f"{c.chunk.path}::{c.chunk.symbol}" if c.chunk.symbol else c.chunk.path
    node = graph.index.get(ref)
    return [node] if node is not None else []


def _rerank_stage(result: Ranked, reranker, signals: RerankSignals, path_prefix: str | None) -> None:
    if not result.candidates:
        result.stages.skip("rerank", "nothing to rerank")
        return
    with result.stages.run("rerank") as st:
        n_in = len(result.candidates)
        try:
            result.candidates = reranker.rerank(result.candidates, signals)
            result.reranker = reranker.name
        except Exception as exc:  # fall back: structural, then identity
            st["status"], st["detail"] = "error", f"{reranker.name} failed ({type(exc).__name__}); fell back"
            fallback = getattr(reranker, "fallback", None)
            try:
                result.candidates = fallback.rerank(result.candidates, signals) if fallback else result.candidates
                result.reranker = fallback.name if fallback else "none"
            except Exception:
                result.reranker = "none"
            return
        if path_prefix:
            prefix = path_prefix.strip("/") + "/"
            for c in result.candidates:
                if c.chunk.path.startswith(prefix) or c.chunk.path == path_prefix.strip("/"):
                    scoring.multiply(c, "path_prefix", PATH_PREFIX_BOOST)
            result.candidates.sort(key=lambda c: (-c.score, c.chunk.id))
        st["detail"] = f"{result.reranker}: {n_in} in, {len(result.candidates)} out"
