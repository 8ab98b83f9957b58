"""`bench swebench` modes: `full` runs every tier the server runs, as served."""

from mcp_retrieval.bench.swebench import mode_settings
from mcp_retrieval.config import Config


def test_the_full_mode_keeps_every_served_tier_and_ablations_switch_off_only_theirs(tmp_path):
    served = Config.resolve(tmp_path).tier_weights
    assert mode_settings("full", served)[0] == served  # a new tier (`title`) is measured as served
    nodense = mode_settings("nodense", served)[0]
    assert nodense["dense"] == 0.0 and all(nodense[t] == w for t, w in served.items() if t != "dense")
    lexical = mode_settings("lexical", served)[0]
    assert {t for t, w in lexical.items() if w} == {"lexical"}
    nocode = mode_settings("nocode", served)[0]
    assert served["code"] > 0 and nocode["code"] == 0.0 and all(nocode[t] == w for t, w in served.items() if t != "code")
