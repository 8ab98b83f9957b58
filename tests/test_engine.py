import shutil
import time

import pytest

from mcp_retrieval import BadRequest, Engine
from mcp_retrieval.indexers.embed import HashEmbedder
from mcp_retrieval.indexers.tokens import budget_tokens
from mcp_retrieval.closure import SECTION as SIGNATURES_SECTION
from mcp_retrieval.neutralize import contains_tag
from mcp_retrieval.workspace import Workspace
from mcp_retrieval.indexers.graph import CodeGraph


def test_reindex_indexes_the_workspace_and_a_second_run_touches_nothing(engine):
    status = engine.status()
    assert status.files >= 8 and status.chunks > status.files
    assert status.vectors_pending == 0 and status.state == "ready"
    again = engine.reindex()
    assert again.files_changed == 0 and again.chunks_added == 0 and again.chunks_embedded == 0


def test_context_returns_the_defining_chunk_for_an_identifier(engine):
    r = Workspace.single(engine).context("apply_discount", debug=True)
    assert r.know is not None and r.miss is None
    best = max(r.chunks, key=lambda c: c.score)  # the window reads files top-down; the strongest is the definition
    assert r.chunks[0].path == best.path == "src/shop/pricing.py" and best.symbol == "apply_discount"
    assert "symbol" in best.tiers
    assert {s.name for s in r.debug.stages} >= {"classify", "extract", "lexical", "dense", "anchors", "fusion",
                                                 "graph", "rerank", "assemble"}


def test_chunks_carry_the_contract_fields_and_never_exceed_the_budget(engine):
    r = Workspace.single(engine).context("how is the checkout total computed with tax and discount", budget_tokens=256, debug=True)
    assert r.know is not None
    assert sum(c.tokens for c in r.chunks) <= 256  # an excerpt counts what it delivers
    for c in r.chunks:
        assert c.text is not None and len(c.content_sha256) == 64 and c.start_line <= c.end_line
    assert r.window.count("<mcp-retrieval:chunk ") == len(r.chunks)
    assert r.debug.assembled_tokens <= 256


def test_a_nonsense_query_is_a_miss_with_a_marker_only_window(engine):
    r = Workspace.single(engine).context("zqxv wplk frrbz")
    assert r.know is None and r.miss.reason == "abstain"
    assert r.chunks == [] and "no_match" in r.window


def test_a_weak_packet_miss_still_points_at_leads_marked_weak(engine):
    # a question that shares one word with the code: too little evidence to claim an answer
    r = Workspace.single(engine).packet("how do we rate limit the lunch menu printer flux capacitor discount")
    assert r.know is None and r.miss.reason == "abstain"
    assert r.items, "an abstaining packet keeps its leads"
    assert all(i.action == "reread" and i.confidence <= 0.2 for i in r.items), r.items
    assert Workspace.single(engine).packet("zqxv wplk frrbz").items == []  # nothing matched: nothing to point at


def test_bad_arguments_are_clear_errors_and_the_next_call_works(engine):
    for kwargs, word in [({"query": ""}, "query"), ({"query": "   "}, "query"), ({"query": 7}, "query"),
                         ({"query": "x", "budget_tokens": 10}, "budget_tokens"),
                         ({"query": "x", "max_chunks": 0}, "max_chunks"),
                         ({"query": "x", "active_files": ["../../etc/passwd"]}, "outside"),
                         ({"query": "x", "path_prefix": "/etc"}, "outside"),
                         ({"query": "x", "sub_queries": ["a", "b", "c", "d"]}, "sub_queries")]:
        with pytest.raises(BadRequest, match=word):
            Workspace.single(engine).context(**kwargs)
    with pytest.raises(BadRequest, match="outside"):
        engine.reindex(paths=["../../etc"])
    assert Workspace.single(engine).context("apply_discount").know is not None
    assert Workspace.single(engine).packet("apply_discount", sub_queries=["", "  "]).know is not None  # blank facets: none


def test_huge_and_odd_queries_get_an_answer_or_a_clean_miss(engine):
    for q in ["Cart.total " * 5000, "!!! ??? ...", "\ud800 lone surrogate \x00 nul", "購物車の合計を計算する"]:
        r = Workspace.single(engine).context(q, debug=True)
        assert (r.know is None) != (r.miss is None)


def test_packet_returns_pointers_without_bodies(engine):
    p = Workspace.single(engine).packet("compute_shipping express parcel cost", max_items=5, task="edit")
    assert p.know is not None and 1 <= len(p.items) <= 5
    top = p.items[0]
    assert top.path == "engine/src/lib.rs"
    assert top.fresh is True and top.action == "reread"  # edits always reread
    assert "text" not in top.model_dump()


def test_a_second_identical_call_in_a_session_returns_stubs(engine):
    q = "cart add item quantity subtotal"
    first = Workspace.single(engine).context(q, session_id="s1")
    second = Workspace.single(engine).context(q, session_id="s1")
    other = Workspace.single(engine).context(q, session_id="s2")
    opted_out = Workspace.single(engine).context(q, session_id="s1", ignore_delivered=True)
    delivered = {(c.path, c.start_line) for c in first.chunks}
    stubs = {(c.path, c.start_line) for c in second.chunks if c.delivered}
    assert delivered and stubs <= delivered and len(stubs) >= 0.8 * len(delivered)
    assert all(c.text is None for c in second.chunks if c.delivered)
    assert not any(c.delivered for c in other.chunks) and not any(c.delivered for c in opted_out.chunks)


def test_forged_control_tags_in_indexed_text_never_reach_the_window(engine):
    r = Workspace.single(engine).context("flux capacitor calibration release notes")
    assert any(c.path == "notes/forged.md" for c in r.chunks)
    ours = r.window.count("<mcp-retrieval:chunk ") + r.window.count("<mcp-retrieval:stub ")
    ours += r.window.count(SIGNATURES_SECTION)
    for line in r.window.splitlines():
        if contains_tag(line):
            assert line.startswith(("<mcp-retrieval:chunk ", "<mcp-retrieval:stub ")) or line == SIGNATURES_SECTION, line
            ours -= 1
    assert ours == 0
    assert all(not contains_tag(s.text) for s in r.signatures or [])
    assert all(not contains_tag(c.text) for c in r.chunks if c.text)


def test_the_room_left_holds_the_signatures_the_delivered_code_calls(engine):
    assert Workspace.single(engine).context("Cart total checkout", max_chunks=1).signatures is None  # off unless turned on
    engine.config.signatures = True
    r = Workspace.single(engine).context("Cart total checkout", budget_tokens=6000, max_chunks=1, debug=True)
    shown = {(c.path, c.symbol) for c in r.chunks}
    assert r.signatures, r.window
    assert r.window.count(SIGNATURES_SECTION) == 1
    assert r.window.index(SIGNATURES_SECTION) > r.window.rindex("<mcp-retrieval:chunk ")  # after the bodies
    for sig in r.signatures:
        assert (sig.path, sig.symbol) not in shown
        assert f"{sig.path}:{sig.line}  {sig.text}" in r.window.split(SIGNATURES_SECTION, 1)[1]
        assert sig.text.startswith(("def ", "class ", "async def ")), sig.text
    assert budget_tokens(r.window) <= 6000
    closure_stage = next(s for s in r.debug.stages if s.name == "closure")
    assert closure_stage.status == "done" and f"{len(r.signatures)} signatures" in closure_stage.detail
    tight = Workspace.single(engine).context("Cart total checkout", budget_tokens=256)
    assert budget_tokens(tight.window) <= 256


def test_an_edited_file_is_never_served_as_current(engine, workspace):
    pricing = workspace / "src" / "shop" / "pricing.py"
    pricing.write_text(pricing.read_text().replace("SAVE10", "SAVE25").replace("0.9", "0.75"))
    p = Workspace.single(engine).packet("apply_discount discount code")
    item = next(i for i in p.items if i.path == "src/shop/pricing.py")
    assert item.fresh is False and item.action == "refresh"
    r = Workspace.single(engine).context("apply_discount discount code")
    served = [c.text for c in r.chunks if c.path == "src/shop/pricing.py" and c.text]
    assert served and all("SAVE10" not in t for t in served)


def test_a_deleted_file_is_dropped_from_answers(engine, workspace):
    (workspace / "engine" / "src" / "lib.rs").unlink()
    r = Workspace.single(engine).context("compute_shipping parcel weight express")
    assert all(c.path != "engine/src/lib.rs" for c in r.chunks)


def test_packet_points_at_no_file_that_is_gone(engine, workspace, tmp_path):
    shutil.move(workspace, tmp_path / "moved")  # the whole root moved away before the watcher saw it
    p = Workspace.single(engine).packet("apply_discount discount code")
    assert p.items == [] and p.miss.reason == "stale" and p.miss.escalate_to == "reindex"
    shutil.move(tmp_path / "moved", workspace)
    (workspace / "src" / "shop" / "pricing.py").unlink()  # one of its files: the others still answer
    p = Workspace.single(engine).packet("apply_discount discount code")
    assert p.know is not None and p.items


def test_reindex_picks_up_edits_and_deletions_incrementally(engine, workspace):
    (workspace / "src" / "shop" / "refunds.py").write_text("def issue_refund(order_id):\n    return order_id\n")
    (workspace / "web" / "util.js").unlink()
    r = engine.reindex()
    assert r.files_changed == 1 and r.files_removed == 1 and r.chunks_embedded >= 1
    assert Workspace.single(engine).context("issue_refund").chunks[0].path == "src/shop/refunds.py"


def test_an_empty_root_answers_with_an_empty_index_miss(tmp_path):
    from mcp_retrieval.indexers.embed import HashEmbedder
    from mcp_retrieval import Config

    (tmp_path / "empty").mkdir()
    cfg = Config.resolve(tmp_path / "empty", tmp_path / "idx", persist_sessions=False)
    cfg.cache_dir = tmp_path / "cache"
    eng = Engine(cfg, embedder=HashEmbedder())
    r = Workspace.single(eng).context("anything at all")
    assert r.miss.reason == "empty_index" and r.miss.escalate_to == "reindex"
    eng.reindex()  # found nothing to index: another reindex would not help
    r = Workspace.single(eng).packet("anything at all")
    assert r.miss.reason == "empty_index" and r.miss.escalate_to == "ask_user" and "no file to index" in r.miss.detail
    eng.close()


def test_a_root_that_does_not_exist_is_a_clear_error(tmp_path):
    from mcp_retrieval import Config

    with pytest.raises(ValueError, match="not a directory"):
        Config.resolve(tmp_path / "missing")


def test_a_root_deleted_while_serving_keeps_the_last_index(engine, workspace):
    import shutil

    before = engine.status().chunks
    shutil.rmtree(workspace)
    with pytest.raises(BadRequest, match="gone"):
        engine.reindex()
    assert engine.status().chunks == before
    r = Workspace.single(engine).packet("apply_discount")
    assert r.miss is not None or all(not i.fresh for i in r.items)


def test_an_identifier_lookup_finds_its_definition_even_in_a_test_file(engine, workspace):
    (workspace / "tests").mkdir()
    (workspace / "tests" / "test_cart.py").write_text("def helper_for_cart_checks():\n    return 1\n")
    (workspace / "src" / "shop" / "helpers.py").write_text(
        "def other_helper():\n    '''calls helper_for_cart_checks'''\n    return helper_for_cart_checks\n")
    engine.reindex()
    assert Workspace.single(engine).packet("helper_for_cart_checks").items[0].path == "tests/test_cart.py"


@pytest.mark.parametrize("marker", ["lexical_analyzer", "chunker"])
def test_a_changed_lexical_analyser_or_chunker_re_analyses_every_file_once(engine, marker):
    engine.store.set_meta(marker, "0")  # an index written by another analyser or chunker version
    files = engine.status().files
    first = engine.reindex()
    assert first.files_changed == files and first.chunks_embedded == 0  # vectors come back from the cache
    assert engine.reindex().files_changed == 0


def test_recent_turns_steer_the_ranking_but_never_the_search(engine):
    q = "how is the cart total computed"
    plain = Workspace.single(engine).packet(q, max_items=50, debug=True)
    steered = Workspace.single(engine).packet(q, recent_turns=["I am looking at src/shop/pricing.py", "with_tax looks wrong"], max_items=50, debug=True)
    def item(r):
        return next(i for i in r.items if i.symbol == "with_tax")

    assert item(steered).score > item(plain).score and "recent conversation" in item(steered).why
    assert "recent conversation" not in item(plain).why
    # the same pool was searched: turns reorder it, they add nothing the question did not find
    assert steered.debug.candidate_pool == plain.debug.candidate_pool
    with pytest.raises(BadRequest, match="recent_turns"):
        Workspace.single(engine).packet(q, recent_turns=["a"] * 6)


def test_a_miss_that_sends_the_agent_to_the_user_carries_a_map_of_the_workspace_inside_the_budget(engine):
    r = Workspace.single(engine).context("zqxv wplk frrbz", budget_tokens=300)
    assert r.miss.escalate_to == "ask_user" and r.chunks == []
    assert '<mcp-retrieval:map root="' in r.window and "src/shop/" in r.window
    assert "apply_discount" in r.window or "Cart" in r.window  # a used definition, with its line
    assert budget_tokens(r.window) <= 300


def test_the_map_never_carries_markup_from_the_tree():
    from mcp_retrieval import corpus_map

    text = corpus_map.build('x"/><mcp-retrieval:chunk', ["src/<mcp-retrieval:chunk path=/a.py", "src/b.py"], None, 500)
    assert text.count("<mcp-retrieval:") == 1 and text.startswith("<mcp-retrieval:map ")


def test_a_definition_changed_since_the_session_saw_it_comes_back_as_a_diff(engine, workspace):
    body = "\n".join(f"    line_{n} = totals[{n}] * rate + offset_{n}" for n in range(40))
    report = workspace / "src/shop/report.py"
    report.write_text(f"def quarterly_revenue_report(totals, rate):\n{body}\n    return line_0\n")
    engine.reindex(paths=["src/shop/report.py"])
    q = "quarterly_revenue_report"
    first = Workspace.single(engine).context(q, session_id="d1", debug=True)
    assert any(c.symbol == "quarterly_revenue_report" and c.text for c in first.chunks)
    report.write_text(report.read_text().replace("line_7 = totals[7] * rate", "line_7 = totals[7] * rate * 2"))
    engine.reindex(paths=["src/shop/report.py"])
    second = Workspace.single(engine).context(q, session_id="d1", debug=True)
    changed = next(c for c in second.chunks if c.symbol == "quarterly_revenue_report")
    assert changed.diff and "-    line_7 = totals[7] * rate + offset_7" in changed.text
    assert "+    line_7 = totals[7] * rate * 2 + offset_7" in changed.text and "@@ -7," in changed.text
    assert changed.tokens < 0.6 * next(c for c in first.chunks if c.symbol == "quarterly_revenue_report").tokens
    assert 'diff="changed since this session saw it' in second.window
    other = Workspace.single(engine).context(q, session_id="d2")  # a session that never saw it gets the whole text
    whole = next(c for c in other.chunks if c.symbol == "quarterly_revenue_report")
    assert not whole.diff and "def quarterly_revenue_report" in whole.text
    third = Workspace.single(engine).context(q, session_id="d1")  # after the diff the session holds the new text: a stub
    assert next(c for c in third.chunks if c.symbol == "quarterly_revenue_report").delivered


def test_a_signature_skips_decorators_and_joins_a_parameter_list_spread_over_lines():
    from mcp_retrieval.closure import signature_text
    body = "class A:\n    @property\n    @cache\n    def total(\n        self,\n        code: str,\n    ) -> float:\n        return 1\n"
    assert signature_text(body, 10, 11) == "def total(self, code: str,) -> float:"
    assert signature_text("func Run(ctx context.Context) error {\n\treturn nil\n}", 5, 5) == "func Run(ctx context.Context) error {"


def test_one_search_over_several_files_finds_each_files_best_chunk_as_a_search_per_file_does(engine):
    lexical = engine.retriever.lexical
    query = "apply discount code total tax cart item quantity shipping express"
    paths = ["src/shop/pricing.py", "src/shop/cart.py", "docs/guide.md", "no/such/file.py"]
    best = lexical.best_in_files(query, paths)
    for path in paths:
        alone = lexical.search(query, 1, path=path)
        assert best.get(path) == (alone[0][0] if alone else None), path
    assert "src/shop/pricing.py" in best and "no/such/file.py" not in best
    assert lexical.best_in_files(query, paths, scan=0) == best  # crowded out: each file asked alone


def test_one_question_is_analysed_once_for_all_its_searches(engine, monkeypatch):
    """The lexical stage, the files the question names and the files history suggests all search
    the same text: its BM25 query is built once and reused, for the last few texts only."""
    from mcp_retrieval.indexers import lexical

    built = []
    real = engine.retriever.lexical._build_query
    monkeypatch.setattr(engine.retriever.lexical, "_build_query", lambda text: built.append(text) or real(text))
    q = "src/shop/pricing.py: with_tax rounds the cart total wrong"
    first = Workspace.single(engine).packet(q)
    assert built.count(q) == 1
    assert Workspace.single(engine).packet(q).items == first.items and built.count(q) == 1
    for n in range(lexical.RECENT_QUERIES):
        engine.retriever.lexical.search(f"other question {n}")
    engine.retriever.lexical.search(q)
    assert built.count(q) == 2 and len(engine.retriever.lexical._queries) == lexical.RECENT_QUERIES


def test_a_scoped_reindex_sees_its_folder_only_and_drops_the_files_gone_from_it(engine, workspace):
    (workspace / "src/shop/coupons.py").write_text("def redeem_coupon_code(code):\n    return code.upper()\n")
    (workspace / "web/banner.ts").write_text("export function showSeasonalBanner() { return 1 }\n")
    engine.reindex(paths=["src/shop"])
    indexed = set(engine.store.all_paths())
    assert "src/shop/coupons.py" in indexed and "web/banner.ts" not in indexed  # outside the scope: not yet
    assert "src/shop/cart.py" in indexed  # unchanged files in the scope stay
    (workspace / "src/shop/coupons.py").unlink()
    result = engine.reindex(paths=["src/shop/"])
    assert result.files_removed == 1 and "src/shop/coupons.py" not in engine.store.all_paths()
    assert "src/shop/cart.py" in engine.store.all_paths()
    engine.reindex(paths=["web/banner.ts"])
    assert "web/banner.ts" in engine.store.all_paths()


def test_the_path_resolver_is_rebuilt_when_files_come_or_go_not_when_one_is_edited(engine, workspace, monkeypatch):
    resolver = engine.retriever.resolver()
    reads = []
    all_paths = engine.store.all_paths
    monkeypatch.setattr(engine.store, "all_paths", lambda: reads.append(1) or all_paths())
    cart = workspace / "src/shop/cart.py"
    cart.write_text(cart.read_text() + "\n\ndef edited_probe():\n    return 1\n")
    engine.reindex(paths=["src/shop/cart.py"])
    assert engine.retriever.resolver() is resolver and not reads  # the same files: not even read again
    (workspace / "src/shop/refunds.py").write_text("def refund_order(order):\n    return order\n")
    engine.reindex(paths=["src/shop/refunds.py"])
    rebuilt = engine.retriever.resolver()
    assert rebuilt is not resolver and rebuilt.resolve_path("shop/refunds.py") == ["src/shop/refunds.py"]
    (workspace / "src/shop/refunds.py").unlink()
    engine.reindex(paths=["src/shop/refunds.py"])
    assert engine.retriever.resolver().resolve_path("shop/refunds.py") == []


def test_a_second_server_on_the_same_index_answers_with_what_the_writer_adds(engine, config, monkeypatch):
    """Two servers on one index directory: one writes, the other answers from it (README), and
    sees each new file in every part — lexical, store and vectors — without a restart."""
    from mcp_retrieval.indexers import vectors

    monkeypatch.setattr(vectors, "RELOAD_S", 0.0)  # the reader looks for new versions at every question
    reader = Engine(config, embedder=HashEmbedder())
    try:
        assert Workspace.single(reader).packet("apply_discount").items  # answers from the writer's index
        reader.indexer.vectors.search(HashEmbedder().embed(["x"])[0], 1)  # its vector mirror loaded
        (config.root / "src/shop/loyalty.py").write_text(
            "def award_loyalty_points(order):\n    return order.total // 10\n")
        engine.reindex(paths=["src/shop/loyalty.py"])
        loyalty = {c.id for c in engine.store.chunks_for_path("src/shop/loyalty.py")}
        deadline = time.monotonic() + 10  # Tantivy's readers follow commits within a moment
        while time.monotonic() < deadline:
            items = Workspace.single(reader).packet("award_loyalty_points").items
            if items and items[0].path == "src/shop/loyalty.py":
                break
            time.sleep(0.1)
        assert items and items[0].path == "src/shop/loyalty.py"
        found = reader.indexer.vectors.search(HashEmbedder().embed(["award_loyalty_points"])[0], 200)
        assert loyalty & {cid for cid, _ in found}
    finally:
        reader.close()


def test_a_resolver_updated_by_the_files_that_came_or_went_is_the_one_a_fresh_build_makes():
    from mcp_retrieval.retrieve import PathResolver

    before = sorted(["src/app/__init__.py", "src/app/core.py", "src/app/util.py", "lib/util.py", "web/index.ts",
                     "web/util/index.ts", "pkg/mod.rs", "pkg/core/mod.rs", "docs/util.md", "a.py"])
    after = sorted([p for p in before if p not in ("src/app/util.py", "pkg/core/mod.rs")]
                   + ["src/app/util2.py", "web/util/helpers.ts", "lib/core.py"])
    old = PathResolver(before)
    updated = old.updated(after)
    fresh = PathResolver(after)
    assert (updated.paths, updated.known, updated._by_name, updated._by_module) == \
        (fresh.paths, fresh.known, fresh._by_name, fresh._by_module)
    assert old._by_name == PathResolver(before)._by_name  # the one in use is left as it was
    assert updated.resolve_path("app/util2.py") == ["src/app/util2.py"] and updated.resolve_module("app.util2") == ["src/app/util2.py"]


def test_the_graph_is_rebuilt_after_an_index_change_once_no_question_is_being_answered(engine, workspace):
    """The question that meets a changed index answers with the previous graph, and the rebuild
    waits for it to end instead of sharing the interpreter with it (mcp_retrieval/quiet.py)."""
    from mcp_retrieval import quiet

    before = engine.graph(wait=True)
    (workspace / "src/shop/gift_cards.py").write_text("def redeem_gift_card(card):\n    return card.balance\n")
    engine.reindex(paths=["src/shop/gift_cards.py"])
    with quiet.answering():
        assert engine.graph() is before
        time.sleep(0.5)  # a rebuild begun at once would be done by now on this small tree
        assert engine._graph is before
    deadline = time.monotonic() + 30
    while engine._graph is before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert engine._graph is not before and engine._graph.find("redeem_gift_card")


def test_a_saved_files_vectors_are_compacted_every_few_writes_not_after_each(engine, workspace, monkeypatch):
    from mcp_retrieval.indexers import update

    monkeypatch.setattr(update, "OPTIMIZE_WRITES", 3)
    calls = []
    optimize = engine.indexer.vectors.optimize
    monkeypatch.setattr(engine.indexer.vectors, "optimize", lambda: calls.append(1) or optimize())
    cart = workspace / "src/shop/cart.py"
    text = cart.read_text()
    for n in range(6):
        cart.write_text(text + f"\n\ndef saved_{n}():\n    return {n}\n")
        engine.reindex(paths=["src/shop/cart.py"])
        engine.indexer.embed_pending()
    assert len(calls) == 2  # after the third and the sixth save
    assert engine.store.counts()["vectors_pending"] == 0


def _slowly_indexing_engine(config, tmp_path, seconds: float) -> Engine:
    """An Engine on the fixture whose index takes `seconds` longer to build (a larger repository)."""
    config.cache_dir = tmp_path / "cache"
    eng = Engine(config, embedder=HashEmbedder())
    real_sync = eng.indexer.sync

    def slow_sync(*args, **kwargs):
        time.sleep(seconds)
        return real_sync(*args, **kwargs)

    eng.indexer.sync = slow_sync
    return eng


def test_a_question_sent_as_the_server_starts_waits_for_the_first_index(config, tmp_path):
    """The agent's first question arrives while the empty store's first index is being built: it
    is answered from that index, not with `miss: indexing`; so is a graph question."""
    eng = _slowly_indexing_engine(config, tmp_path, seconds=0.5)
    try:
        eng.start_background()
        r = Workspace.single(eng).packet("apply_discount")
        assert r.miss is None and r.items[0].path == "src/shop/pricing.py"
        assert eng.query_graph("Cart.subtotal", relation="callers").miss is None
    finally:
        eng.close()


def test_a_graph_question_during_a_first_index_that_outlasts_the_wait_says_indexing(config, tmp_path, monkeypatch):
    monkeypatch.setattr("mcp_retrieval.engine.FIRST_INDEX_WAIT_S", 0.05)
    eng = _slowly_indexing_engine(config, tmp_path, seconds=1.0)
    try:
        eng.start_background()
        time.sleep(0.1)  # the worker has started and holds nothing yet
        assert eng.query_graph("Cart.subtotal").miss.reason == "indexing"
        assert Workspace.single(eng).packet("apply_discount").miss.reason == "indexing"
    finally:
        eng.close()


def test_the_starting_index_loads_the_graph_before_any_question(config, tmp_path, monkeypatch):
    """On a large repository a question loads the graph behind itself; the start's index loads it
    first, so the questions after `ready` neither miss it nor share the interpreter with its load."""
    from mcp_retrieval.indexers.store import Store

    loads, states = [], []
    real_load = CodeGraph.load

    def load(store):
        loads.append(1)
        states.append(eng.status().state)  # not `ready` while it loads
        return real_load(store)

    monkeypatch.setattr(CodeGraph, "load", staticmethod(load))
    monkeypatch.setattr(Store, "counts", lambda self, real=Store.counts: {**real(self), "symbols": 50_000})
    config.cache_dir = tmp_path / "cache"
    eng = Engine(config, embedder=HashEmbedder())
    try:
        eng.start_background()
        eng._background.join(timeout=60)
        assert loads == [1] and states == ["indexing"] and eng.status().state == "ready"
        graph = eng.graph()  # what a question reads: the graph of the finished index, no second load
        assert graph is not None and loads == [1]
    finally:
        eng.close()


def test_a_restarted_index_reads_its_vector_mirror_before_ready(config, tmp_path):
    """On an index already complete the start has nothing to embed; the worker still reads the
    vectors into memory before `ready`, so the first question does not pay that read."""
    config.cache_dir = tmp_path / "cache"
    first = Engine(config, embedder=HashEmbedder())
    first.reindex(wait=True)
    first.close()
    eng = Engine(config, embedder=HashEmbedder())
    try:
        assert eng.indexer.open_vectors()._columns is None  # nothing read at open
        eng.start_background()
        eng._background.join(timeout=60)
        vectors = eng.indexer.open_vectors()
        assert eng.status().state == "ready" and vectors._columns is not None
        assert vectors._columns.shape[1] == vectors.count() > 0
    finally:
        eng.close()


@pytest.mark.parametrize("query", ["how are discounts documented", "shipping price express parcels", "handleCheckout"])
def test_packet_confidence_falls_down_the_list_from_the_answers(engine, query):
    """Items come in the file ranker's order; their confidence follows that order (it read the
    chunk's own score before: a doc chunk ninth stood above the first item, and `trust`ed)."""
    r = Workspace.single(engine).packet(query)
    confidences = [i.confidence for i in r.items]
    assert confidences == sorted(confidences, reverse=True), confidences
    assert r.know is not None and confidences[0] == round(r.know.confidence, 3)


def test_only_the_questions_before_the_first_index_is_due_wait_for_it(config, tmp_path, monkeypatch):
    """The wait for an empty store's first index ends FIRST_INDEX_WAIT_S after that index began:
    a question sent later is answered at once from what is committed, not after a wait of its own."""
    monkeypatch.setattr("mcp_retrieval.engine.FIRST_INDEX_WAIT_S", 0.5)
    eng = _slowly_indexing_engine(config, tmp_path, seconds=2.0)
    waits: list[float] = []
    real_wait = eng._first_index.wait
    monkeypatch.setattr(eng._first_index, "wait", lambda timeout=None: waits.append(timeout) or real_wait(timeout))
    try:
        eng.start_background()
        first = Workspace.single(eng).packet("apply_discount")
        time.sleep(0.5)  # past the first index's wait, which is still building
        second = Workspace.single(eng).packet("apply_discount")
        assert first.miss.reason == second.miss.reason == "indexing"
        assert 0 < waits[0] <= 0.5 and waits[1] == 0.0
    finally:
        eng.close()
