"""A cloned repository is not trusted: its own git config must not make the server run a program.

Each key git documents as running a program is set, in the repository's `.git/config`, to a command
that leaves a marker file; indexing the repository (the file lister, the history tier, the team
index's revision reads, and the `index` command end to end) must leave no marker.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from mcp_retrieval.indexers.history import History
from mcp_retrieval.indexers.listing import git_listing, rev_parse
from mcp_retrieval.indexers.walk import walk

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

# (key, value template): {cmd} is a shell command that creates the marker
PROGRAM_KEYS = [
    ("core.fsmonitor", "{cmd}; echo"),
    ("core.hooksPath", "{hooks}"),
    ("core.pager", "{cmd}; cat"),
    ("diff.external", "{cmd}; true"),
    ("diff.evil.textconv", "{cmd}; cat"),
    ("diff.evil.command", "{cmd}; true"),
    ("filter.evil.clean", "{cmd}; cat"),
    ("filter.evil.smudge", "{cmd}; cat"),
    ("filter.evil.process", "{cmd}"),
    ("gpg.program", "{cmd}; false"),
    ("log.showSignature", "true"),
    ("core.sshCommand", "{cmd}; true"),
    ("core.askPass", "{cmd}; true"),
    ("credential.helper", "!{cmd}; true"),
    ("alias.ls-files", "!{cmd}"),
]


def git(repo, *args):
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True,
                   capture_output=True)


def hostile_repo(tmp_path, key, template):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "app.py").write_text("def handler():\n    return 1\n")
    (repo / ".gitattributes").write_text("*.py diff=evil filter=evil\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "first")
    (repo / "app.py").write_text("def handler():\n    return 2\n")
    git(repo, "commit", "-qam", "fix the handler")
    (repo / "new_untracked.py").write_text("x = 1\n")
    marker = tmp_path / "ran"
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    for hook in ("post-index-change", "post-checkout", "pre-commit", "reference-transaction"):
        script = hooks / hook
        script.write_text(f"#!/bin/sh\ntouch '{marker}'\n")
        script.chmod(0o755)
    value = template.format(cmd=f"touch '{marker}'", hooks=hooks)
    git(repo, "config", key, value)
    if key == "log.showSignature":
        git(repo, "config", "gpg.program", f"sh -c \"touch '{marker}'\"")
    return repo, marker


@pytest.mark.parametrize(("key", "template"), PROGRAM_KEYS, ids=[k for k, _ in PROGRAM_KEYS])
def test_a_repository_config_key_that_runs_a_program_runs_nothing(tmp_path, key, template):
    repo, marker = hostile_repo(tmp_path, key, template)
    listed = git_listing(repo)
    assert listed is not None and "app.py" in listed[0] and "new_untracked.py" in listed[0]
    list(walk(repo))
    history = History(tmp_path / "h.db", repo)
    assert history.update().startswith("2 commits")
    assert rev_parse(repo, "HEAD")
    assert not marker.exists(), f"{key} ran a program from the repository's config"


@pytest.mark.slow
def test_the_index_command_end_to_end_leaves_fsmonitor_unrun(tmp_path):
    repo, marker = hostile_repo(tmp_path, "core.fsmonitor", "{cmd}; echo")
    # the reproduction of the hardening issue: a plain `git ls-files` in this repository does run it
    subprocess.run(["git", "-C", str(repo), "ls-files"], capture_output=True)
    assert marker.exists()
    marker.unlink()
    out = subprocess.run([sys.executable, "-m", "mcp_retrieval", "index", "--root", str(repo), "--index-dir",
                          str(tmp_path / "index")], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "MCP_RETRIEVAL_EMBEDDER": "none"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert not marker.exists()


def test_no_module_runs_git_but_through_the_neutralised_call():
    """Every git call of the server, the benchmarks and the training scripts goes through
    `listing.run_git`/`git_command` (NEUTRALISED_CONFIG): a literal `"git"` argv elsewhere would run
    a mined or indexed repository's configured programs."""
    import ast
    from pathlib import Path

    top = Path(__file__).resolve().parent.parent
    offenders = []
    for folder in ("mcp_retrieval", "indexers", "training"):
        for source in (top / folder).rglob("*.py"):
            if "indexers" in source.relative_to(top).parts[1:2]:
                continue  # mcp_retrieval/indexers is the top-level indexers/ again (a link in work trees)
            for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
                if (isinstance(node, ast.List) and node.elts and isinstance(node.elts[0], ast.Constant)
                        and node.elts[0].value == "git"):
                    offenders.append(f"{source.relative_to(top)}:{node.lineno}")
    assert offenders == []


def test_a_server_started_in_the_repository_imports_nothing_from_it(tmp_path):
    """`python -m mcp_retrieval` run in a repository's folder has that folder on its import path;
    the libraries it imports late (LanceDB on opening the index) never come from there."""
    repo = tmp_path / "repo"
    repo.mkdir()
    ran = tmp_path / "ran"
    (repo / "app.py").write_text("def handler():\n    return 1\n")
    for name in ("lancedb", "tantivy", "tokenizers"):
        (repo / f"{name}.py").write_text(f"open({str(ran)!r}, 'a').write('{name} ')\n")
    out = subprocess.run([sys.executable, "-m", "mcp_retrieval", "index", "--root", ".", "--index-dir",
                          str(tmp_path / "index")], capture_output=True, text=True, timeout=300, cwd=repo,
                         env={**os.environ, "MCP_RETRIEVAL_CACHE_DIR": str(tmp_path / "cache")})
    assert out.returncode == 0, out.stderr[-2000:]
    assert not ran.exists(), ran.read_text()
