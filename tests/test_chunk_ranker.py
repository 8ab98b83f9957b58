"""The learned chunk ranker: the shipped model loads with this version's features, scores every
candidate as a share of the best, and `context` reads its scores."""

from __future__ import annotations

import json
from importlib import resources

from mcp_retrieval.chunk_features import CHUNK_FEATURES, chunk_features
from mcp_retrieval.file_scorer import chunk_shares, shipped, shipped_chunk_ranker
from mcp_retrieval.indexers.store import StoredChunk
from mcp_retrieval.retrieve import Candidate
from mcp_retrieval.rules import Rules
from mcp_retrieval.workspace import Workspace


def candidate(path: str, symbol: str, score: float, kind: str = "function", tokens: int = 120) -> Candidate:
    chunk = StoredChunk(id=f"{path}:{symbol}", path=path, start_line=1, end_line=9, symbol=symbol, kind=kind,
                        language="python", header="", text="", sha256="", tokens=tokens, embedded=False)
    return Candidate(chunk=chunk, score=score, fused=score, ranks={"lexical": 1})


def test_the_shipped_chunk_ranker_matches_this_versions_features():
    model = shipped_chunk_ranker()
    assert model is not None and model.weights.shape == (len(CHUNK_FEATURES),) and model.temperature > 0
    data = json.loads(resources.files("mcp_retrieval.weights").joinpath("chunk_ranker.json").read_text())
    assert data["trained_on"]["repositories"] >= 50 and "figures" in data


def test_features_place_each_chunk_in_its_file_and_the_pool():
    pool = [candidate("shop/cart.py", "Cart.total", 1.0), candidate("shop/cart.py", "Cart.add_item", 0.5),
            candidate("tests/test_cart.py", "test_total", 0.8)]
    rows = chunk_features("cart total with a discount", pool, {("", "shop/cart.py"): 1.0, ("", "tests/test_cart.py"): 0.4})
    column = {name: i for i, name in enumerate(CHUNK_FEATURES)}
    total, add, test = rows
    assert total[column["in_file_place_inv"]] == 1.0 and add[column["in_file_place_inv"]] == 0.5
    assert add[column["in_file_rel"]] == 0.5 and add[column["file_share"]] == 1.0
    assert test[column["test"]] == 1.0 and total[column["test"]] == 0.0
    assert total[column["symbol_cover"]] == 1.0 and add[column["symbol_cover"]] == 0.0


def test_shares_put_the_best_chunk_at_one_and_a_test_below_the_code_it_tests():
    pool = [candidate("shop/cart.py", "Cart.total", 1.0), candidate("tests/test_cart.py", "test_total", 1.0),
            candidate("shop/pricing.py", "apply_discount", 0.6)]
    shares = chunk_shares(shipped_chunk_ranker(), shipped(), "cart total", pool)
    assert max(shares) == 1.0 and all(0 < s <= 1 for s in shares)
    assert shares[0] > shares[1]


def test_context_windows_read_the_chunk_rankers_scores(engine):
    ws = Workspace.single(engine)
    window = ws.context("apply a discount code to the cart total", debug=True)
    assemble = next(s for s in window.debug.stages if s.name == "assemble")
    assert window.know is not None and assemble.detail.startswith("learned chunk ranker")
    assert max(c.score for c in window.chunks) == 1.0  # the best chunk's share
    engine.config.rules = Rules(context_chunk_ranker=False)
    hand = ws.context("apply a discount code to the cart total", debug=True)
    assert next(s for s in hand.debug.stages if s.name == "assemble").detail.startswith("hand-set file evidence")
