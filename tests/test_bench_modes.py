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
