"""`bench.checkout`: a commit materialised from a git directory; one process per work tree."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from mcp_retrieval.bench.checkout import checkout
from tests.test_bench_commits import commit, git

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def test_checkout_moves_between_commits_and_a_second_process_is_refused(tmp_path):
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q")
    first = commit(repo, {"a.py": "x = 1\n", "b.py": "y = 2\n"}, "first")
    second = commit(repo, {"a.py": "x = 3\n"}, "second")
    tree = tmp_path / "work" / "trees" / "o__r"
    assert checkout(repo / ".git", first, tree)["written"] == 2
    counts = checkout(repo / ".git", second, tree)
    assert counts["written"] == 1 and (tree / "a.py").read_text() == "x = 3\n"
    # this process holds the tree now: another one gets a clear refusal and changes nothing
    probe = ("import sys; from pathlib import Path; from mcp_retrieval.bench.checkout import checkout, TreeBusy\n"
             "try:\n    checkout(Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]))\n"
             "except TreeBusy as e:\n    print(e); sys.exit(3)\n")
    out = subprocess.run([sys.executable, "-c", probe, str(repo / ".git"), first, str(tree)],
                         capture_output=True, text=True)
    assert out.returncode == 3 and "another process is using the work tree" in out.stdout
    assert (tree / "a.py").read_text() == "x = 3\n"


def test_a_commit_the_snapshot_lacks_is_a_clear_error_that_leaves_the_tree(tmp_path):
    from mcp_retrieval.bench.checkout import CommitMissing

    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q")
    first = commit(repo, {"a.py": "x = 1\n"}, "first")
    tree = tmp_path / "work" / "trees" / "o__r"
    checkout(repo / ".git", first, tree)
    with pytest.raises(CommitMissing, match="not in"):
        checkout(repo / ".git", "93b701d8d48eaf87077e707dd77eaaed0e66900f", tree)
    assert (tree / "a.py").read_text() == "x = 1\n"
    from mcp_retrieval.bench.checkout import opened_instances  # the benches skip such a question

    row = {"instance_id": "o__r-1", "repo": "o/r", "base_commit": "93b701d8d48eaf87077e707dd77eaaed0e66900f"}
    assert list(opened_instances([row], {"o/r": str(repo / ".git")}, tmp_path / "work", {}, no_dense=True)) == []
