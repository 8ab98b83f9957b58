"""A damaged index heals at open: a cut or garbled chunk store is set aside and rebuilt from the
files, a lost or garbled lexical index is rebuilt from the store, lost vectors are re-made, a
garbled history table is read again from git; `index://status` names each repair, and answers
come back as before (indexers/health.py)."""

from __future__ import annotations

import json
import os

import pytest

from mcp_retrieval import Config, Engine
from mcp_retrieval.validate import BadRequest
from mcp_retrieval.indexers.embed import HashEmbedder
from mcp_retrieval.workspace import Workspace
from tests.conftest import make_workspace

QUESTION = "add an item to the shopping cart"


def top_file(engine: Engine) -> str:
    return Workspace.single(engine).packet(QUESTION, max_items=3).items[0].path


@pytest.fixture
def indexed(config, tmp_path):
    config.cache_dir = tmp_path / "cache"
    engine = Engine(config, embedder=HashEmbedder())
    engine.reindex()
    expected = top_file(engine)
    engine.close()
    return config, expected


def reopen(config) -> Engine:
    engine = Engine(config, embedder=HashEmbedder())
    engine.reindex()
    return engine


@pytest.mark.parametrize("damage", ["cut", "garbled"])
def test_a_damaged_chunk_store_is_set_aside_and_rebuilt_from_the_files(indexed, damage):
    config, expected = indexed
    db = config.index_dir / "index.db"
    if damage == "cut":
        with open(db, "r+b") as fh:
            fh.truncate(4096)
    else:
        data = bytearray(db.read_bytes())
        data[100:4000] = os.urandom(3900)
        db.write_bytes(bytes(data))
    for side in ("index.db-wal", "index.db-shm"):
        (config.index_dir / side).unlink(missing_ok=True)
    engine = reopen(config)
    try:
        assert engine.status().repairs and "chunk store" in engine.status().repairs[0]
        assert (config.index_dir / "index.db.damaged").exists()
        assert top_file(engine) == expected
    finally:
        engine.close()


def damage_lexical(index_dir, damage: str) -> None:
    tantivy = index_dir / "tantivy"
    if damage == "meta_lost":
        (tantivy / "meta.json").unlink()
    else:
        for part in tantivy.iterdir():
            if part.suffix in (".idx", ".term", ".store"):
                part.write_bytes(os.urandom(max(64, part.stat().st_size)))


def assert_lexical_healed(engine: Engine, expected: str) -> None:
    assert any("lexical" in r for r in engine.status().repairs or [])
    assert engine.indexer.lexical.num_docs() == engine.store.counts()["chunks"]
    assert top_file(engine) == expected


@pytest.mark.parametrize("damage", ["meta_lost", "segment_garbled"])
def test_a_damaged_lexical_index_is_rebuilt_from_the_store(indexed, damage):
    config, expected = indexed
    damage_lexical(config.index_dir, damage)
    engine = Engine(config, embedder=HashEmbedder())  # no reindex: the store alone must heal it
    try:
        assert_lexical_healed(engine, expected)
    finally:
        engine.close()


@pytest.mark.parametrize("damage", ["meta_lost", "segment_garbled"])
def test_a_full_reindex_heals_a_lexical_index_damaged_while_serving(indexed, damage):
    config, expected = indexed
    engine = reopen(config)
    try:
        damage_lexical(config.index_dir, damage)
        engine.reindex(full=True)
        assert_lexical_healed(engine, expected)
    finally:
        engine.close()


def test_lost_vectors_are_made_again_and_status_is_not_ready_meanwhile(indexed):
    config, _ = indexed
    fragments = [p for p in (config.index_dir / "lance").rglob("data/*.lance") if p.is_file()]
    assert fragments
    for part in fragments:
        part.unlink()
    engine = Engine(config, embedder=HashEmbedder())
    try:
        status = engine.status()
        assert status.repairs and status.vectors_pending == status.chunks and not status.settled()
        engine.reindex()
        assert engine.status().vectors_pending == 0
    finally:
        engine.close()


def test_a_garbled_history_table_is_read_again(indexed):
    config, _ = indexed
    (config.index_dir / "history.db").write_bytes(os.urandom(8192))
    engine = Engine(config, embedder=HashEmbedder())
    try:
        assert any("history" in r for r in engine.status().repairs or [])
    finally:
        engine.close()


def test_an_intact_index_reports_no_repair(indexed):
    config, _ = indexed
    engine = Engine(config, embedder=HashEmbedder())
    try:
        assert engine.status().repairs is None
    finally:
        engine.close()


def test_a_full_disk_is_named_as_such_and_the_store_stays_usable(indexed):
    """SQLite ends the transaction itself on SQLITE_FULL; the error must say so (it used to read
    `cannot rollback - no transaction is active`). `max_page_count` stands in for a full disk."""
    import sqlite3

    config, expected = indexed
    engine = Engine(config, embedder=HashEmbedder())
    try:
        pages = engine.store.query("PRAGMA page_count")[0][0]
        engine.store.query(f"PRAGMA max_page_count = {pages}")
        (config.root / "src" / "big.py").write_text("".join(f"def f{i}():\n    return {i}\n\n" for i in range(3000)))
        with pytest.raises(sqlite3.OperationalError, match="full"):
            engine.indexer.sync()
        with pytest.raises(BadRequest, match="no space left on the device holding the index"):
            engine.reindex()  # what the reindex tool and `mcp-retrieval index` say
        engine.store.query("PRAGMA max_page_count = 1073741823")
        engine.reindex()
        assert top_file(engine) == expected and engine.store.file("src/big.py") is not None
    finally:
        engine.close()


def test_storage_failures_are_named_by_their_cause():
    import errno
    import sqlite3

    from mcp_retrieval.engine import storage_failure

    assert storage_failure(OSError(errno.ENOSPC, "x")).startswith("no space left")
    assert storage_failure(OSError(errno.EROFS, "x")).endswith("read-only file system")
    assert storage_failure(OSError(errno.EACCES, "x")).startswith("permission denied")
    assert storage_failure(sqlite3.OperationalError("database or disk is full")).startswith("no space left")
    assert storage_failure(ValueError("An index writer was killed.")).startswith("the lexical index's writer")
    assert storage_failure(ValueError("An IO error occurred: 'No space left on device (os error 28) at path "
                                      "\"/idx/tantivy/.tmpgk0j3q\"'")).startswith("no space left")  # a rebuild at open
    assert storage_failure(ValueError("some other fault")) is None


OPEN_THEN_ASK = """
import json, sys
from pathlib import Path
from mcp_retrieval import Config, Engine
from mcp_retrieval.config import Config
from mcp_retrieval.indexers.embed import HashEmbedder
from mcp_retrieval.workspace import Workspace
from tests.conftest import make_workspace
root, index = sys.argv[1:3]
config = Config.resolve(root, Path(index), persist_sessions=False)
engine = Engine(config, embedder=HashEmbedder())
opened = "lancedb" in sys.modules
items = Workspace.single(engine).packet(sys.argv[3], max_items=3).items
print(json.dumps({"lancedb_at_open": opened, "dense": any("dense" in i.tiers for i in items)}))
"""


def test_opening_an_index_leaves_the_vector_table_to_its_first_use(indexed):
    """LanceDB's import is most of a server's start: the handshake must not wait for it; the first
    question opens the table (checked as at any open) and is answered with its vectors."""
    import subprocess
    import sys

    config, _ = indexed
    out = subprocess.run([sys.executable, "-c", OPEN_THEN_ASK, str(config.root), str(config.index_dir), QUESTION],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.splitlines()[-1]) == {"lancedb_at_open": False, "dense": True}


def test_a_vector_table_that_cannot_open_leaves_the_lexical_index_answering(indexed, monkeypatch, caplog):
    """LanceDB unusable here (its files unreadable, the library broken): no crash at the first
    question, a warning, answers from the lexical index, and a status that says lexical only."""
    from mcp_retrieval.indexers import health

    def broken(*args, **kwargs):
        raise OSError("permission denied: lance/_versions")

    monkeypatch.setattr(health, "open_vectors", broken)
    config, expected = indexed
    engine = Engine(config, embedder=HashEmbedder())
    try:
        assert top_file(engine) == expected
        assert engine.status().state == "lexical_only"
        assert "vector table unavailable" in caplog.text
        assert engine.reindex().chunks_embedded == 0
    finally:
        engine.close()


def test_an_interrupted_first_index_is_resumed_not_redone(tmp_path):
    """A first index stopped half way (the editor closed) goes on from where it stopped on the
    next start: the files it committed are not taken for an older analyser's and redone."""
    root = make_workspace(tmp_path / "ws")
    config = Config.resolve(root, tmp_path / "index", persist_sessions=False)
    config.cache_dir = tmp_path / "cache"
    engine = Engine(config, embedder=HashEmbedder())
    asked = iter(range(1000))
    first = engine.indexer.sync(should_stop=lambda: next(asked) >= 4)
    engine.close()
    assert 0 < first.files_changed < first.files_scanned
    engine = Engine(config, embedder=HashEmbedder())
    try:
        second = engine.indexer.sync()
        assert second.files_changed == second.files_scanned - first.files_changed
    finally:
        engine.close()
