"""training.refuse_pools: a collected pool fused again gives the served scores back, and a tier at
weight 0 adds nothing to any score and brings no chunk in alone."""

import json

import pytest

from mcp_retrieval.config import Config
from training.collect import pool_record
from mcp_retrieval.file_scorer import shipped
from training.refuse_pools import main, metrics, parse_variant, refused


def test_served_weights_give_the_collected_scores_back_and_a_zero_weight_drops_its_finds(engine):
    record = {"repo": "o/r", "query": "how is the price of the cart computed with a discount code",
              "gold_files": ["src/shop/cart.py"], **pool_record(engine, "how is the price of the cart computed "
                                                                        "with a discount code")}
    served = Config.__dataclass_fields__["tier_weights"].default_factory()
    k = engine.config.rrf_k
    assert any("dense" in c["ranks"] for c in record["pool"])
    again = refused(record, served, k)
    collected = {(c["path"], c["start"]): (c["fused"], c["score"]) for c in record["pool"]}
    assert len(again) == len(collected)
    for c in again:
        assert (c.fused, c.score) == pytest.approx(collected[(c.chunk.path, c.chunk.start_line)])

    without = refused(record, {**served, "dense": 0.0}, k)
    dense_only = [c for c in record["pool"] if set(c["ranks"]) <= {"dense"}]
    assert dense_only  # the hash vectors rank every chunk: some only they found
    assert len(without) == len(again) - len(dense_only)
    for c in without:
        assert c.fused == pytest.approx(sum(served[t] / (k + r) for t, r in c.ranks.items() if t != "dense"))


def test_a_variant_is_read_or_refused_with_a_reason(tmp_path, capsys):
    assert parse_variant("titled:dense=0,dense_title=0.3") == ("titled", {"dense": 0.0, "dense_title": 0.3})
    pools = tmp_path / "p.jsonl"
    pools.write_text(json.dumps({"repo": "o/r", "query": "q", "gold_files": [], "pool": []}) + "\n")
    assert main([str(pools), "--variant", "sometimes:dense=0"]) == 2
    assert "SCOPE:TIER=WEIGHT" in capsys.readouterr().err


def test_a_semble_pool_is_scored_by_its_ndcg(engine):
    query = "how is the price of the cart computed"
    record = {"repo": "o/r", "query": query, **pool_record(engine, query)}
    pool = refused(record, Config.__dataclass_fields__["tier_weights"].default_factory(), engine.config.rrf_k)
    first = metrics({**record, "gold_files": ["x"]}, pool, shipped())
    assert set(first) == {"acc1", "acc5", "recall5", "mrr"}
    ranked_first = max(pool, key=lambda c: c.score).chunk
    hit = metrics({**record, "targets": [[ranked_first.path, ranked_first.start_line, ranked_first.end_line]]},
                  pool, shipped())
    miss = metrics({**record, "targets": [["nowhere.py", 1, 2]]}, pool, shipped())
    assert hit["ndcg10"] > 0 and miss == {"ndcg10": 0.0}
