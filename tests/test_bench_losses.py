"""`bench losses`: the pairs of a fixed file and each file ranked above it, and which file-ranker
features favour the file above."""

from __future__ import annotations

from mcp_retrieval import file_scorer
from mcp_retrieval.bench.losses import file_contributions, loss_pairs, summarise
from mcp_retrieval.file_features import FEATURES
from mcp_retrieval.workspace import Workspace


def test_pairs_are_the_files_above_a_fixed_file_in_the_ranks_read():
    files = {"a.rs": {"test": 0.0, "best_rel": 0.9}, "b.rs": {"best_rel": 0.5},
             "fix.rs": {"test": -2.0, "best_rel": 0.4}, "other_fix.rs": {"best_rel": 0.1}}
    pairs = loss_pairs(files, ["fix.rs", "other_fix.rs"], 3, 3)
    assert [(p["fixed"], p["above"]) for p in pairs] == [("fix.rs", "a.rs"), ("fix.rs", "b.rs")]
    assert pairs[0]["diff"] == {"test": 2.0, "best_rel": 0.5} and pairs[1]["diff"]["test"] == 2.0
    assert [p["above"] for p in loss_pairs(files, ["other_fix.rs"], 4, 20)] == ["a.rs", "b.rs", "fix.rs"]
    both = loss_pairs(files, ["other_fix.rs", "fix.rs"], 4, 20)  # a fixed file is never "above"
    assert [(p["fixed"], p["above"]) for p in both] == [("other_fix.rs", "a.rs"), ("other_fix.rs", "b.rs")]
    table = summarise(pairs)
    assert table[0] == ("test", 2.0, 2) and table[1][0] == "best_rel"


def test_every_feature_is_read_when_asked(engine):
    ws = Workspace.single(engine)
    shown = file_contributions(ws.packet("apply a discount code to the cart total", debug=True).items)
    assert max(len(c) for c in shown.values()) <= 6
    file_scorer.SHOW_EVERY_CONTRIBUTION = True
    try:
        every = file_contributions(ws.packet("apply a discount code to the cart total", debug=True).items)
    finally:
        file_scorer.SHOW_EVERY_CONTRIBUTION = False
    assert list(every) == list(shown) and max(len(c) for c in every.values()) > 6
    assert set().union(*every.values()) <= set(FEATURES)
