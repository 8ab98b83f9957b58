"""`bench swebench` modes: `full` runs every tier the server runs, as served."""

from mcp_retrieval.bench.swebench import mode_settings
from mcp_retrieval.config import Config


def test_the_full_mode_keeps_every_served_tier_and_ablations_switch_off_only_theirs(tmp_path):
    served = Config.resolve(tmp_path).tier_weights
    assert mode_settings("full", served)[0] == served  # a new tier (`title`) is measured as served
    nodense = mode_settings("nodense", served)[0]
    assert nodense["dense"] == nodense["dense_title"] == 0.0
    assert all(nodense[t] == w for t, w in served.items() if not t.startswith("dense"))
    lexical = mode_settings("lexical", served)[0]
    assert {t for t, w in lexical.items() if w} == {"lexical"}
    nocode = mode_settings("nocode", served)[0]
    assert served["code"] > 0 and nocode["code"] == 0.0 and all(nocode[t] == w for t, w in served.items() if t != "code")


def test_heldout_keeps_the_questions_the_dev_file_lacks_with_the_files_their_patch_changes(tmp_path):
    import json

    from mcp_retrieval.bench.heldout import main

    patch = ("diff --git a/src/a.py b/src/a.py\n--- a/src/a.py\n+++ b/src/a.py\n@@ -1 +1 @@\n-x\n+y\n"
             "diff --git a/src/b.py b/src/b.py\n--- a/src/b.py\n+++ b/src/b.py\n@@ -1 +1 @@\n-x\n+y\n")
    rows = [{"repo": r, "instance_id": i, "base_commit": "abc", "problem_statement": "q", "patch": patch}
            for r, i in (("o/one", "one-1"), ("o/one", "one-2"), ("o/two", "two-1"))]
    (tmp_path / "source.json").write_text(json.dumps(rows))
    (tmp_path / "dev.jsonl").write_text(json.dumps({"instance_id": "one-1"}) + "\n")
    out = tmp_path / "heldout.jsonl"
    assert main(["--source", str(tmp_path / "source.json"), "--exclude", str(tmp_path / "dev.jsonl"),
                 "--repos", "o/one", "--out", str(out)]) == 0
    (kept,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert kept["instance_id"] == "one-2" and kept["gold_files"] == ["src/a.py", "src/b.py"]
    assert kept["patch_text"] == patch


def test_ab_flips_a_boolean_switch_or_sets_the_value_given_and_restores_it():
    import pytest

    from mcp_retrieval import continuation
    from mcp_retrieval.bench.ab import Switch, report

    from types import SimpleNamespace

    from mcp_retrieval.bench.ab import Weight
    from mcp_retrieval.rules import Rules

    flag, share = Switch("rules.continuations"), Switch("continuation.MAX_SHARE=0.8")
    root = SimpleNamespace(config=SimpleNamespace(rules=Rules()))
    flag.set("flipped", root), share.set("flipped", root)
    try:  # a rule changes on the root's settings, a constant in its module
        assert root.config.rules.continuations is (not flag.served) and continuation.MAX_SHARE == 0.8
        assert Rules().continuations is flag.served
    finally:
        flag.set("served", root), share.set("served", root)
    assert root.config.rules == Rules() and continuation.MAX_SHARE == share.served
    from mcp_retrieval import rerank
    factor = Switch("rerank.WEIGHTS.test_factor=1.0")  # an attribute path: what every reranker reads
    factor.set("flipped")
    try:
        assert rerank.StructuralReranker().weights.test_factor == 1.0
    finally:
        factor.set("served")
    assert rerank.StructuralReranker().weights.test_factor == factor.served != 1.0
    for bad in ("continuation.NO_SUCH", "no_such_module.X", "continuation.MAX_SHARE", "rules.no_such",
                "rerank.WEIGHTS.no_such=1"):
        with pytest.raises(ValueError):  # a number needs its value
            Switch(bad)
    engine = SimpleNamespace(config=SimpleNamespace(tier_weights={"dense": 0.8}))
    dense = Weight("dense=0.3")
    dense.set("flipped", engine)
    assert engine.config.tier_weights["dense"] == 0.3
    dense.set("served", engine)
    assert engine.config.tier_weights["dense"] == 0.8
    new_tier = Weight("dense_new=0.6")  # a tier the served configuration does not name stays unnamed there
    new_tier.set("served", engine)
    assert "dense_new" not in engine.config.tier_weights
    new_tier.set("flipped", engine)
    assert engine.config.tier_weights["dense_new"] == 0.6
    new_tier.set("served", engine)
    assert "dense_new" not in engine.config.tier_weights
    with pytest.raises(ValueError):
        Weight("dense")
    cells = {"acc@1": 1.0, "acc@3": 1.0, "acc@5": 1.0, "acc@10": 1.0, "mrr": 1.0}
    results = [{"instance_id": "a-1", "served": {**cells, "ranks": [1]}, "flipped": {**cells, "acc@1": 0.0, "mrr": 0.5, "ranks": [2]}},
               {"instance_id": "b-1", "served": {**cells, "ranks": [1]}, "flipped": {**cells, "ranks": [1]}}]
    text = report(results, "packet")
    assert "| acc@1 | 1.000 | 0.500 |" in text and "moved (1):" in text and "a-1: gold ranks [1] served, [2] flipped" in text
    assert "| questions | 0 / 1 | 0 / 0 | 0 / 0 | 0 / 0 | 0 / 1 |" in text  # better / worse, question by question


def test_ab_each_gives_every_change_an_arm_of_its_own_named_by_its_spec():
    from mcp_retrieval.bench.ab import Switch, _arms, report

    changes = [Switch("rules.continuations"), Switch("rules.tokens_per_chunk=None")]
    specs = ["rules.continuations", "rules.tokens_per_chunk=None"]
    assert _arms(changes, specs, each=False) == [("flipped", changes)]
    assert _arms(changes, specs, each=True) == [("rules.continuations", changes[:1]), ("rules.tokens_per_chunk=None", changes[1:])]
    cells = {"acc@1": 1.0, "acc@3": 1.0, "acc@5": 1.0, "acc@10": 1.0, "mrr": 1.0}
    row = {"instance_id": "a-1", "served": {**cells, "ranks": [1]}, "rules.tokens_per_chunk=None": {**cells, "mrr": 0.5, "ranks": [2]}}
    assert "| | served | rules.tokens_per_chunk=None |" in report([row], "packet", "rules.tokens_per_chunk=None")


def test_the_structured_size_is_reported_per_budget_and_in_all():
    from mcp_retrieval.bench.tokens import structured_report

    table = structured_report({256: [1.0, 1.3, 1.1], 4000: [1.02]}).splitlines()
    assert table[2] == "| budget 256 | 3 | 1.100 | 1.300 |"
    assert table[3] == "| budget 4000 | 1 | 1.020 | 1.020 |"
    assert table[4] == "| all | 4 | 1.060 | 1.300 |"


def test_dense_heads_asks_a_mined_commit_at_its_parent_and_puts_a_long_question_four_ways(tmp_path, capsys):
    import json
    import subprocess

    from mcp_retrieval.bench.dense_heads import HEADS, rows_from_pools

    repo = tmp_path / "repo"
    git = ["git", "-C", str(repo), "-c", "user.email=a@b", "-c", "user.name=a"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "a.py").write_text("x = 1\n")
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "first"], check=True)
    (repo / "a.py").write_text("x = 2\n")
    subprocess.run([*git, "commit", "-qam", "second"], check=True)
    first, second = (subprocess.run([*git, "rev-parse", rev], capture_output=True, text=True).stdout.strip()
                     for rev in ("HEAD^", "HEAD"))
    pools = tmp_path / "pools.jsonl"
    pools.write_text("".join(json.dumps({"id": f"o/r@{sha[:12]}", "query": "Fix x", "gold_files": ["a.py"]}) + "\n"
                             for sha in (second, first)))
    rows = rows_from_pools(str(pools), {"o/r": str(repo / ".git")})
    assert [(r["base_commit"], r["problem_statement"]) for r in rows] == [(first, "Fix x")]
    assert "no parent" in capsys.readouterr().err  # the first commit has none: skipped with the reason

    question = "Totals are wrong\n\nThe report sums refunds twice.\n\n```\nTraceback: boom\n```\n\n## Steps\nRun it."
    heads = {name: put(question) for name, put in HEADS.items()}
    assert heads["title"] == "Totals are wrong" and "Traceback" in heads["start"]
    assert "Traceback" not in heads["prose start"] and "## Steps" not in heads["prose start"]
    assert heads["title + prose"].startswith("Totals are wrong\n")


def test_lead_hit_reads_each_fixed_files_first_item_only():
    import math
    from types import SimpleNamespace as Item

    from mcp_retrieval.bench.ab import lead_hit

    items = [Item(path="a.py", start_line=1, end_line=5), Item(path="b.py", start_line=40, end_line=60),
             Item(path="a.py", start_line=20, end_line=30)]
    # a.py's first item misses line 25 (its second holds it); b.py's first holds 50; c.py is not shown
    assert lead_hit(items, {"a.py": {25}, "b.py": {50}, "c.py": {1}}) == 0.5
    assert math.isnan(lead_hit(items, {"c.py": {1}}))
