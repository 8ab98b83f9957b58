"""The history tier: past commit messages raise the files those commits touched; HEAD's
ancestry only; no git is a skipped stage, not an error."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_retrieval.indexers.history import History
from mcp_retrieval.indexers.message_bm25 import MessageBM25
from mcp_retrieval.workspace import Workspace

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def git(repo, *args):
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True,
                   capture_output=True)


def make_repo(root):
    root.mkdir()
    git(root, "init", "-q")
    (root / "retry.py").write_text("def backoff():\n    return 1\n")
    (root / "render.py").write_text("def draw():\n    return 2\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "initial import")
    (root / "retry.py").write_text("def backoff():\n    return 2\n")
    git(root, "commit", "-qam", "Fix exponential backoff when the connection pool is exhausted")
    (root / "render.py").write_text("def draw():\n    return 3\n")
    git(root, "commit", "-qam", "Render tables with unicode borders")
    return root


def test_past_commit_messages_point_at_the_files_they_touched(tmp_path):
    repo = make_repo(tmp_path / "repo")
    history = History(tmp_path / "h.db", repo)
    assert history.update().startswith("3 commits")
    files = history.files_for("backoff is wrong when the pool is exhausted", {"retry.py", "render.py"})
    assert files[0].path == "retry.py" and "backoff" in files[0].subject
    assert history._ranker is not None  # ranked in memory (message_bm25), as FTS5 would
    history._ranker = None
    assert history.files_for("backoff is wrong when the pool is exhausted", {"retry.py", "render.py"}) == files
    assert history.update().endswith("up to date")


def test_only_heads_ancestry_is_read_and_a_moved_head_updates_incrementally(tmp_path):
    repo = make_repo(tmp_path / "repo")
    git(repo, "checkout", "-q", "-b", "future")
    (repo / "render.py").write_text("def draw():\n    return 4\n")
    git(repo, "commit", "-qam", "Fix the zebra striping crash")
    git(repo, "checkout", "-q", "-")
    history = History(tmp_path / "h.db", repo)
    history.update()
    assert history.files_for("zebra striping crash", {"render.py", "retry.py"}) == []  # another branch: unseen
    git(repo, "merge", "-q", "--ff-only", "future")
    assert "(1 new)" in history.update()
    assert history.files_for("zebra striping crash", {"render.py"})[0].path == "render.py"


def test_no_repository_is_a_skipped_stage_with_a_reason(tmp_path, engine):
    plain = tmp_path / "plain"
    plain.mkdir()
    assert History(tmp_path / "h.db", plain).update().startswith("skipped")
    r = Workspace.single(engine).packet("apply the discount", debug=True)
    stage = next(s for s in r.debug.stages if s.name == "history")
    assert stage.status == "skipped" and "no git history" in stage.detail



def test_query_graph_reads_a_files_commits_and_what_changes_with_it(tmp_path, monkeypatch):
    from mcp_retrieval import Config, Engine
    from mcp_retrieval.indexers.embed import HashEmbedder

    repo = make_repo(tmp_path / "repo")
    (repo / "pool.py").write_text("def acquire():\n    return 0\n")
    (repo / "retry.py").write_text("def backoff():\n    return acquire()\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "Back off while the pool is empty")
    (repo / "pool.py").write_text("def acquire():\n    return 1\n")
    (repo / "retry.py").write_text("def backoff():\n    return acquire() + 1\n")
    git(repo, "commit", "-qam", "Release the pool slot on retry")
    for n in range(45):  # a sweep: touches retry.py among 45 files, says nothing about what goes together
        (repo / f"gen_{n}.py").write_text(f"VALUE_{n} = {n}\n")
    (repo / "retry.py").write_text("def backoff():\n    return acquire() + 2  # reformatted\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "Reformat everything")
    monkeypatch.setenv("MCP_RETRIEVAL_CACHE_DIR", str(tmp_path / "cache"))
    engine = Engine(Config.resolve(repo, tmp_path / "index", persist_sessions=False), embedder=HashEmbedder())
    try:
        engine.reindex()
        engine.update_history()
        commits = engine.query_graph("retry.py", relation="history", limit=3)
        assert [c.subject for c in commits.commits] == ["Reformat everything", "Release the pool slot on retry",
                                                        "Back off while the pool is empty"]
        assert commits.truncated and commits.history.startswith("6 commits")  # 4 touch retry.py; limit 3
        assert commits.commits[0].files == 46 and len(commits.commits[0].date) == 10
        by_symbol = engine.query_graph("backoff", relation="history", limit=10)  # a symbol: its file's commits
        assert [c.sha for c in by_symbol.commits] == [c.sha for c in engine.query_graph("retry.py", "history",
                                                                                        limit=10).commits]
        together = engine.query_graph("retry.py", relation="changed_with")
        # pool.py twice, render.py once (the initial import); the sweep's 45 files not at all
        assert [n.path for n in together.nodes] == ["retry.py", "pool.py", "render.py"]
        assert {(e.source, e.type) for e in together.edges} == {(together.nodes[0].id, "changed_with")}
    finally:
        engine.close()


def test_history_relations_without_git_say_why_they_are_empty(engine):
    r = engine.query_graph("src/shop/pricing.py", relation="history")
    assert r.commits == [] and r.nodes and r.history.startswith(("skipped", "not indexed"))
    assert engine.query_graph("src/shop/pricing.py", relation="changed_with").edges == []


WORDS = ["fix", "crash", "printer", "latex", "matrix", "zero", "pool", "retry", "the", "of"]


@given(st.lists(st.lists(st.sampled_from(WORDS), max_size=12), min_size=1, max_size=40),
       st.lists(st.sampled_from(WORDS), min_size=1, max_size=5), st.integers(1, 10))
@settings(max_examples=150, deadline=None)
def test_the_in_memory_ranking_is_fts5s_own(messages, query, limit):
    # the numpy scoring (indexers/message_bm25.py) returns what FTS5's bm25() orders, ties by rowid
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE messages USING fts5(message, tokenize = 'unicode61')")
    db.executemany("INSERT INTO messages(rowid, message) VALUES (?, ?)",
                   [(i + 1, " ".join(m).upper() if i % 3 == 0 else " ".join(m)) for i, m in enumerate(messages)])
    match = " OR ".join(f'"{w}"' for w in query)
    scored = dict(db.execute("SELECT rowid, bm25(messages) FROM messages WHERE messages MATCH ?", (match,)))
    expected = sorted(scored, key=lambda r: (scored[r], r))[:limit]
    got = MessageBM25(db).top(query, limit)
    # the same order, except between scores equal but for float rounding (FTS5 sums in another order)
    assert len(got) == len(expected) and all(
        g == e or abs(scored[g] - scored[e]) <= 1e-9 * max(1.0, abs(scored[e])) for g, e in zip(got, expected))
