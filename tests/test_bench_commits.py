"""`bench commits`: a repository's own fix commits as localisation instances (real git)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from mcp_retrieval.bench.commits import fix_commits

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True,
                          capture_output=True, text=True).stdout.strip()


def commit(repo: Path, files: dict[str, str], message: str) -> str:
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)
    return git(repo, "rev-parse", "HEAD")


def test_only_fixes_of_existing_source_files_become_instances(tmp_path):
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q")
    base = commit(repo, {"lib/cart.rb": "def total\nend\n", "spec/cart_spec.rb": "it 'adds'\n", "README.md": "x\n"},
                  "initial import of the shop")
    fix = commit(repo, {"lib/cart.rb": "def total\n  0\nend\n"}, "Fix total returning nil for an empty cart (#12)")
    commit(repo, {"lib/cart.rb": "def total\n  1\nend\n"}, "Revert \"Fix total returning nil for an empty cart\"")
    commit(repo, {"lib/cart.rb": "# the total\ndef total\n  1\nend\n"}, "Fix a typo in the comment of the cart total")
    commit(repo, {"spec/cart_spec.rb": "it 'adds two'\n"}, "Fix the flaky spec of the cart total again")
    commit(repo, {"lib/cart.rb": "def total\n  2\nend\n", "lib/tax.rb": "def tax\nend\n"},
           "Fix the total by adding a tax module to the cart")
    commit(repo, {"README.md": "y\n"}, "Fix the wording of the readme about totals")
    found = list(fix_commits(repo / ".git", limit=10))
    assert [(sha, parent, gold) for sha, parent, _, gold in found] == [(fix, base, ["lib/cart.rb"])]
    assert found[0][2].startswith("Fix total returning nil")


def test_an_instance_carries_its_diff_so_context_windows_can_be_scored(tmp_path):
    import json

    from mcp_retrieval.bench.commits import main
    from mcp_retrieval.bench.tokens import patch_lines
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q")
    git(repo, "config", "diff.external", "touch " + str(tmp_path / "ran"))  # a mined repository's config runs nothing
    commit(repo, {"lib/cart.rb": "def total\n  nil\nend\n\ndef tax\n  0\nend\n"}, "initial import of the shop")
    commit(repo, {"lib/cart.rb": "def total\n  0\nend\n\ndef tax\n  0\nend\n"}, "Fix total returning nil for an empty cart")
    out = tmp_path / "rows.jsonl"
    assert main(["--repo", f"shop/cart={repo / '.git'}", "--out", str(out)]) == 0
    row, = [json.loads(line) for line in out.read_text().splitlines()]
    assert row["gold_code_files"] == ["lib/cart.rb"]
    assert patch_lines(row["patch_text"]) == {"lib/cart.rb": {2}}
    assert not (tmp_path / "ran").exists()


def test_a_snapshot_git_cannot_read_is_skipped_and_the_others_mined(tmp_path, capsys):
    import json

    from mcp_retrieval.bench.commits import main
    good = tmp_path / "good"
    good.mkdir()
    git(good, "init", "-q")
    commit(good, {"lib/cart.rb": "def total\n  nil\nend\n"}, "initial import of the shop")
    commit(good, {"lib/cart.rb": "def total\n  0\nend\n"}, "Fix total returning nil for an empty cart")
    broken = tmp_path / "broken"
    shutil.copytree(good, broken)
    head = git(broken, "rev-parse", "HEAD")
    (broken / ".git" / "objects" / head[:2] / head[2:]).unlink()  # the newest commit's object is gone
    out = tmp_path / "rows.jsonl"
    assert main(["--repo", f"shop/broken={broken / '.git'}", "--repo", f"shop/cart={good / '.git'}",
                 "--out", str(out)]) == 0
    assert [json.loads(line)["repo"] for line in out.read_text().splitlines()] == ["shop/cart"]
    assert "shop/broken: skipped: git log" in capsys.readouterr().err


def test_a_repository_failing_after_its_first_rows_leaves_none_of_them(tmp_path, monkeypatch, capsys):
    import json

    from mcp_retrieval.bench import commits
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q")
    commit(repo, {"lib/cart.rb": "def total\n  nil\nend\n"}, "initial import of the shop")
    commit(repo, {"lib/cart.rb": "def total\n  0\nend\n"}, "Fix total returning nil for an empty cart")
    commit(repo, {"lib/cart.rb": "def total\n  1\nend\n"}, "Fix total returning zero for a full cart")
    calls = []

    def second_fails(*args):  # the second commit's diff cannot be read
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("git diff failed")
        return ""

    monkeypatch.setattr(commits, "patch_text", second_fails)
    out = tmp_path / "rows.jsonl"
    assert commits.main(["--repo", f"shop/cart={repo / '.git'}", "--out", str(out)]) == 0
    assert len(calls) == 2 and out.read_text() == ""
    assert "shop/cart: skipped: git diff failed" in capsys.readouterr().err


def test_the_held_out_list_mines_each_repository_up_to_its_pinned_commit(tmp_path, monkeypatch):
    import json

    from mcp_retrieval.bench import commits
    repo = tmp_path / "cart"
    repo.mkdir()
    git(repo, "init", "-q")
    commit(repo, {"lib/cart.rb": "def total\n  nil\nend\n"}, "initial import of the shop")
    pinned = commit(repo, {"lib/cart.rb": "def total\n  0\nend\n"}, "Fix total returning nil for an empty cart")
    commit(repo, {"lib/cart.rb": "def total\n  1\nend\n"}, "Fix total returning zero for a full cart")  # after the pin
    mirrors = tmp_path / "mirrors"  # as the fetch tool leaves them: owner+name/repo, a bare git directory
    subprocess.run(["git", "clone", "-q", "--bare", str(repo), str(mirrors / "shop+cart" / "repo")], check=True)
    listing = tmp_path / "heldout_repos.txt"
    listing.write_text(f"# held out\nshop/cart {pinned}\n")
    monkeypatch.setattr(commits, "HELD_OUT", listing)
    out = tmp_path / "rows.jsonl"
    assert commits.main(["--held-out", str(mirrors), "--out", str(out)]) == 0
    row, = [json.loads(line) for line in out.read_text().splitlines()]
    assert row["instance_id"] == f"shop__cart-{pinned[:10]}"


def test_training_never_mines_a_held_out_repository():
    from mcp_retrieval.bench.commits import held_out_repos
    training = {line.strip().lower() for line in (Path(__file__).parents[1] / "training" / "repos.txt").read_text().splitlines()
                if line.strip() and not line.startswith("#")}
    held = {repo.lower() for repo in held_out_repos()}
    assert len(held) == 18 and not held & training
