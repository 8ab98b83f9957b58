"""No byte from outside the root and no hang from one odd file, through every reader: the index,
the freshness gate (which re-reads changed files while answering) and the watcher."""

from __future__ import annotations

import os
import shutil
import threading
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_retrieval.indexers.safe_read import NOT_REGULAR, OUTSIDE_ROOT, TOO_LARGE, UNREADABLE, read_inside, stat_inside, stat_many
from mcp_retrieval.indexers.watch import Watcher
from mcp_retrieval.indexers.walk import DEFAULT_MAX_FILE_BYTES, size_limit, walk
from mcp_retrieval.workspace import Workspace
from tests.conftest import wait_for, watching

SECRET = "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMIK7MDENGbPxRfiCYzzSECRETzz"


def window_and_fields(engine, query: str) -> str:
    r = Workspace.single(engine).context(query, budget_tokens=4000)
    return r.model_dump_json() + Workspace.single(engine).packet(query).model_dump_json()


def plant_config(workspace):
    (workspace / "docs" / "config.txt").write_text("deployment settings for the storefront\n")


def test_a_file_swapped_for_a_link_out_of_the_root_is_never_read_while_answering(engine, workspace, tmp_path):
    plant_config(workspace)
    engine.reindex()
    outside = tmp_path / "credentials.txt"
    outside.write_text(f"deployment settings storefront {SECRET}\n")
    (workspace / "docs" / "config.txt").unlink()
    os.symlink(outside, workspace / "docs" / "config.txt")
    for _ in range(2):  # the stale entry stays until the index updates: it must not leak meanwhile
        assert "wJalrXUtnFEMIK7MDENG" not in window_and_fields(engine, "deployment settings storefront")
    engine.reindex()
    assert "docs/config.txt" not in engine.store.files()


def test_a_folder_swapped_for_a_link_to_an_outside_folder_is_never_read(engine, workspace, tmp_path):
    private = tmp_path / "dotssh"
    private.mkdir()
    shutil.copytree(workspace / "src" / "shop", tmp_path / "shop-copy")
    for f in (tmp_path / "shop-copy").glob("*.py"):  # same names, outside content
        (private / f.name).write_text(f.read_text() + f"\n# {SECRET}\n")
    shutil.rmtree(workspace / "src" / "shop")
    os.symlink(private, workspace / "src" / "shop")
    for query in ("apply discount to the cart total", "pricing rules", "cart"):
        assert "wJalrXUtnFEMIK7MDENG" not in window_and_fields(engine, query)


def call_with_deadline(fn, seconds: float):
    out: dict = {}
    t = threading.Thread(target=lambda: out.setdefault("result", fn()), daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), "the call blocked"
    return out["result"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs POSIX FIFOs")
def test_a_fifo_in_place_of_an_indexed_file_blocks_nothing(engine, workspace):
    target = workspace / "src" / "shop" / "pricing.py"
    target.unlink()
    os.mkfifo(target)
    for _ in range(3):
        call_with_deadline(lambda: Workspace.single(engine).context("pricing discount rules"), 60)
    result = call_with_deadline(lambda: engine.reindex(), 120)
    assert "src/shop/pricing.py" not in engine.store.files()  # git does not list a FIFO; the walk refuses one
    assert result.files_removed >= 1 or result.skipped.get("not_regular", 0) >= 1


def test_an_indexed_file_overwritten_with_a_huge_one_is_not_read_into_memory(engine, workspace):
    target = workspace / "src" / "shop" / "pricing.py"
    with open(target, "wb") as fh:  # sparse: 200 MB on paper, nothing on disk
        fh.truncate(200_000_000)
    r = Workspace.single(engine).context("pricing discount rules", budget_tokens=2000)
    assert all(c.path != "src/shop/pricing.py" for c in r.chunks)
    assert len(r.model_dump_json()) < 200_000


def test_a_link_to_dev_zero_is_refused_not_read(engine, workspace):
    target = workspace / "src" / "shop" / "pricing.py"
    target.unlink()
    os.symlink("/dev/zero", target)
    r = Workspace.single(engine).context("pricing discount rules")
    assert all(c.path != "src/shop/pricing.py" for c in r.chunks)


@pytest.mark.parametrize("kernel_check", [True, False], ids=["opened-then-checked", "resolved-then-opened"])
def test_the_safe_reader_refuses_links_out_fifos_and_oversized_files(tmp_path, monkeypatch, kernel_check):
    from mcp_retrieval.indexers import safe_read

    if kernel_check and not safe_read._KERNEL_NAMES_FDS:
        pytest.skip("the kernel does not name open descriptors here")
    monkeypatch.setattr(safe_read, "_KERNEL_NAMES_FDS", kernel_check)
    root = (tmp_path / "root").resolve()
    root.mkdir()
    (tmp_path / "out.txt").write_text("outside")
    (tmp_path / "private").mkdir()
    (tmp_path / "private" / "key.py").write_text("secret")
    os.symlink(tmp_path / "out.txt", root / "out_link")
    os.symlink(tmp_path / "private", root / "linked_out")
    (root / "inner.txt").write_text("inside")
    (root / "pkg").mkdir()
    (root / "pkg" / "a.py").write_text("a = 1")
    os.symlink(root / "inner.txt", root / "in_link")
    os.symlink(root / "pkg", root / "linked_in")
    os.symlink(root / "loop", root / "loop")
    os.mkfifo(root / "pipe")
    (root / "big").write_bytes(b"x" * 2000)
    assert read_inside(root, "out_link", 1000) == OUTSIDE_ROOT
    assert read_inside(root, "linked_out/key.py", 1000) == OUTSIDE_ROOT  # a folder on the way links out
    assert read_inside(root, "../out.txt", 1000) == OUTSIDE_ROOT
    assert read_inside(root, "pkg/../../out.txt", 1000) == OUTSIDE_ROOT
    assert read_inside(root, "in_link", 1000).data == b"inside"
    assert read_inside(root, "linked_in/a.py", 1000).data == b"a = 1"
    assert read_inside(root, "loop", 1000) == UNREADABLE
    assert read_inside(root, "pkg", 1000) == NOT_REGULAR
    assert read_inside(root, "pipe", 1000) == NOT_REGULAR
    assert read_inside(root, "big", 1000) == TOO_LARGE
    assert read_inside(root, "gone.py", 1000) == UNREADABLE
    assert read_inside(root, "inner.txt\x00", 1000) == UNREADABLE


def test_stating_many_files_at_once_answers_as_one_at_a_time(tmp_path):
    """`stat_many` resolves each folder once: a folder linked out, a file linked out or in, a
    FIFO, a missing file and `..` get the verdict `stat_inside` gives each alone."""
    root = (tmp_path / "root").resolve()
    (root / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "private").mkdir()
    (tmp_path / "private" / "key.py").write_text("secret")
    (tmp_path / "out.txt").write_text("outside")
    os.symlink(tmp_path / "private", root / "pkg" / "linked")
    os.symlink(tmp_path / "out.txt", root / "pkg" / "out_link.py")
    (root / "pkg" / "a.py").write_text("a")
    (root / "pkg" / "sub" / "b.py").write_text("b")
    os.symlink(root / "pkg" / "a.py", root / "pkg" / "sub" / "in_link.py")
    os.mkfifo(root / "pkg" / "pipe")
    (root / "top.py").write_text("top")
    rels = ["pkg/a.py", "pkg/sub/b.py", "pkg/linked/key.py", "pkg/out_link.py", "pkg/sub/in_link.py",
            "pkg/pipe", "pkg/gone.py", "top.py", "pkg/../../out.txt", "pkg/sub", ".."]
    many = stat_many(root, rels)

    def verdict(st):
        return st if isinstance(st, str) else (st.st_ino, st.st_size)
    assert {r: verdict(many[r]) for r in rels} == {r: verdict(stat_inside(root, r)) for r in rels}
    assert many["pkg/linked/key.py"] == OUTSIDE_ROOT and many["pkg/out_link.py"] == OUTSIDE_ROOT
    assert many["pkg/pipe"] == NOT_REGULAR and many["pkg/gone.py"] == UNREADABLE
    assert many["pkg/sub/in_link.py"].st_size == 1


@pytest.mark.timeout(120)
def test_the_watcher_drops_an_entry_whose_file_now_links_out_of_the_root(engine, workspace, tmp_path):
    plant_config(workspace)
    engine.reindex()
    outside = tmp_path / "credentials.txt"
    outside.write_text(f"deployment settings storefront {SECRET}\n")
    watcher = Watcher(workspace, engine.sync_paths, debounce_ms=100)
    watcher.start()
    try:
        time.sleep(0.5)
        (workspace / "docs" / "config.txt").unlink()
        os.symlink(outside, workspace / "docs" / "config.txt")
        deadline = time.monotonic() + 60
        # the sync drops the row, then clears the pending path: wait for both (a loaded machine
        # may be between the two)
        while ("docs/config.txt" in engine.store.files() or engine.status().pending_changes) \
                and time.monotonic() < deadline:
            time.sleep(0.2)
        assert "docs/config.txt" not in engine.store.files()
        assert engine.status().pending_changes == 0
    finally:
        watcher.stop()


@pytest.mark.timeout(120)
def test_a_file_named_in_another_encoding_neither_fails_the_index_nor_stops_the_watcher(engine, workspace):
    latin1 = os.path.join(os.fsencode(workspace / "src"), b"caf\xe9.py")  # not UTF-8: a lone surrogate in str
    with open(latin1, "wb") as f:
        f.write(b"def latin_named_helper():\n    pass\n")
    result = engine.reindex()
    assert result.skipped.get("undecodable_name") == 1
    assert "src/shop/loyalty.py" not in engine.store.files()
    with watching(engine, workspace):
        with open(latin1, "rb") as f:  # an editor opening it: watchfiles fails on the event's path
            f.read()
        time.sleep(0.5)
        (workspace / "src" / "shop" / "loyalty.py").write_text("def award_loyalty_points(order):\n    return 10\n")
        assert wait_for(lambda: "src/shop/loyalty.py" in engine.store.files())


@pytest.mark.timeout(120)
def test_a_change_seen_while_another_server_writes_the_index_is_indexed_when_it_finishes(engine, workspace):
    from mcp_retrieval.indexers.locks import WriteLock
    with watching(engine, workspace):
        with WriteLock(engine.config.index_dir / "write.lock"):  # the other server, mid-update
            (workspace / "src" / "shop" / "loyalty.py").write_text("def award_loyalty_points(order):\n    return 10\n")
            time.sleep(1.0)
            assert "src/shop/loyalty.py" not in engine.store.files()
        assert wait_for(lambda: "src/shop/loyalty.py" in engine.store.files(), timeout=30)


names = st.sampled_from(["a", "b", "c.py", "d.txt", "e"])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.lists(names, min_size=1, max_size=3),
                          st.sampled_from(["file", "link_out", "link_in", "dir_link_out", "fifo", "big"])),
                max_size=12))
def test_the_walk_never_yields_a_file_outside_the_root_or_not_regular(tmp_path_factory, tree):
    base = tmp_path_factory.mktemp("tree")
    root, outside = base / "root", base / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    for parts, kind in tree:
        path = root.joinpath(*parts)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if path.exists() or path.is_symlink():
                continue
            if kind == "file":
                path.write_text("def f():\n    return 1\n")
            elif kind == "link_out":
                os.symlink(outside / "secret.txt", path)
            elif kind == "link_in":
                os.symlink(root, path)
            elif kind == "dir_link_out":
                os.symlink(outside, path)
            elif kind == "fifo":
                os.mkfifo(path)
            else:
                path.write_bytes(b"y" * 1_100_000)
        except (FileExistsError, NotADirectoryError):
            continue
    real_root = root.resolve()
    for entry in walk(root):
        got = read_inside(real_root, entry.path, size_limit(entry.path, DEFAULT_MAX_FILE_BYTES))
        assert not isinstance(got, str), (entry.path, got)
        assert SECRET.encode() not in got.data


@pytest.mark.timeout(120)
def test_a_second_server_on_one_index_answers_from_the_writers_vectors_and_finishes_what_it_left(
        config, workspace, tmp_path, monkeypatch):
    """Two agent windows on one project start two servers on one index: the one that finds the
    other writing waits, meanwhile answering with what the writer commits (its counts, its
    vectors: a table opened empty used to stay empty to it, `lexical_only` for good), and indexes
    itself once the lock is free."""
    from mcp_retrieval import engine as engine_module
    from mcp_retrieval.engine import Engine
    from mcp_retrieval.indexers import vectors
    from mcp_retrieval.indexers.embed import HashEmbedder
    from mcp_retrieval.indexers.locks import WriteLock

    monkeypatch.setattr(vectors, "RELOAD_S", 0.0)  # follow the other's commits at once
    monkeypatch.setattr(engine_module, "BUSY_RETRY_S", 0.2)
    config.cache_dir = tmp_path / "cache"
    writer, second = Engine(config, embedder=HashEmbedder()), Engine(config, embedder=HashEmbedder())
    try:
        assert second.indexer.open_vectors() is not None and second.status().state == "empty"  # opened first
        writer.indexer.sync()  # the writer's lexical pass, then its vectors
        assert second.status().vectors_pending == writer.status().chunks > 0
        writer.indexer.embed_pending()
        assert writer.status().state == "ready"
        mirrored = second.status()
        assert (mirrored.state, mirrored.chunks, mirrored.vectors_pending) == ("ready", writer.status().chunks, 0)
        dense = {s.name: s.status for s in
                 Workspace.single(second).packet("apply_discount", debug=True).debug.stages}["dense"]
        assert dense == "done"

        (workspace / "src" / "shop" / "loyalty.py").write_text("def award_loyalty_points(order):\n    return 10\n")
        with WriteLock(config.index_dir / "write.lock"):  # the writer again, mid-update
            second.start_background()
            time.sleep(0.5)
            assert "src/shop/loyalty.py" not in second.store.files()
        assert wait_for(lambda: second.status().state == "ready" and "src/shop/loyalty.py" in second.store.files(),
                        timeout=30)
    finally:
        second.close()
        writer.close()
