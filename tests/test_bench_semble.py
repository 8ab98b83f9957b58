"""`bench semble` scores with semble's NDCG@10 and can index a folder in place of a snapshot."""

import math

from mcp_retrieval.bench.semble import main, ndcg10, run_repo


def test_ndcg_matches_paths_by_suffix_and_lines_by_overlap_and_counts_a_rank_once():
    targets = [("src/lib/a.py", None, None), ("lib/b.py", 10, 20)]
    results = [("lib/a.py", 1, 5), ("lib/b.py", 30, 40), ("lib/b.py", 15, 25)]
    # a.py at rank 1 (the target's path ends with the result's); b.py's span first met at rank 3
    assert math.isclose(ndcg10(results, targets), (1 + 1 / math.log2(4)) / (1 + 1 / math.log2(3)))
    # two targets found by the same item count once; the ideal list still holds two hits
    same = [("a.py", 1, 9), ("other.py", 1, 9)]
    assert math.isclose(ndcg10(same, [("a.py", 1, 3), ("a.py", 5, 7)]), 1 / (1 + 1 / math.log2(3)))
    assert ndcg10(results, []) == 0.0


def test_a_repository_is_scored_from_a_folder_given_in_place_of_its_snapshot(tmp_path):
    tree = tmp_path / "release"
    (tree / "lib" / "std").mkdir(parents=True)
    (tree / "lib" / "std" / "ring.zig").write_text(
        "pub fn RingBuffer(comptime T: type) type {\n    return struct { items: []T, head: usize };\n}\n")
    (tree / "lib" / "std" / "math.zig").write_text("pub fn clamp(x: i32, lo: i32, hi: i32) i32 {\n    return x;\n}\n")
    repo = {"name": "zig", "language": "zig", "url": "https://github.com/ziglang/zig.git", "revision": "0" * 40,
            "benchmark_root": "lib/std"}
    queries = [{"query": "ring buffer of items with a head", "relevant": ["lib/std/ring.zig"], "category": "semantic"}]
    result = run_repo(repo, queries, tmp_path / "no-mirrors", tmp_path / "work", vectors=False, tree=tree)
    assert "not the pinned revision" in result["note"]
    assert result["rows"][0]["files"][0] == "ring.zig" and result["rows"][0]["ndcg10"] == 1.0
    # `context`'s window ranks the same way, by its chunks in the order it shows them
    window = run_repo(repo, queries, tmp_path / "no-mirrors", tmp_path / "work", vectors=False, tree=tree,
                      tool="context")
    assert window["rows"][0]["files"][0] == "ring.zig" and window["rows"][0]["ndcg10"] == 1.0
    # without the folder the repository has no snapshot and is skipped with that reason
    assert run_repo(repo, queries, tmp_path / "no-mirrors", tmp_path / "work", vectors=False) == \
        {"name": "zig", "language": "zig", "skipped": "no snapshot"}


def test_the_tree_option_names_the_repository_it_stands_for(tmp_path, capsys):
    data = tmp_path / "data"
    (data / "annotations").mkdir(parents=True)
    (data / "repos.json").write_text('[{"name": "tiny", "language": "python", '
                                     '"url": "https://github.com/x/tiny.git", "revision": "HEAD"}]')
    (data / "annotations" / "tiny.json").write_text(
        '[{"query": "parse the config file", "relevant": ["config.py"], "category": "semantic"}]')
    (data / "published.json").write_text("{}")
    tree = tmp_path / "tiny"
    tree.mkdir()
    (tree / "config.py").write_text("def parse_config_file(path):\n    return open(path).read()\n")
    (tree / "other.py").write_text("def unrelated():\n    return 1\n")
    assert main(["--data", str(data), "--mirrors", str(tmp_path / "none"), "--work", str(tmp_path / "w"),
                 "--tree", f"tiny={tree}"]) == 0
    assert "| tiny | python | 1 | 1.000 |" in capsys.readouterr().out
