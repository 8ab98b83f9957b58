"""A team's index on object storage, against a real S3 API (moto's server on loopback): publish,
pull the nearest ancestor's snapshot, index only the difference; failures degrade to a cold index."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mcp_retrieval import Config, Engine
from mcp_retrieval.indexers.embed import EmbeddingCache, HashEmbedder
from mcp_retrieval import shared_index
from mcp_retrieval.shared_index import filesystem, publish, pull, repo_identity, restore_in_background
from mcp_retrieval.workspace import Workspace

_VENV_MOTO = Path(sys.executable).parent / "moto_server"  # this environment's, not a shim on PATH
MOTO = str(_VENV_MOTO) if _VENV_MOTO.exists() else (shutil.which("moto_server") or str(_VENV_MOTO))
pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed"),
              pytest.mark.skipif(not Path(MOTO).exists(), reason="moto[server] is not installed (test extras)")]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def s3_endpoint():
    port = free_port()
    proc = subprocess.Popen([MOTO, "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.2)
    yield f"http://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture
def aws(s3_endpoint, monkeypatch):
    for key, value in {"AWS_ENDPOINT_URL": s3_endpoint, "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
                       "AWS_REGION": "us-east-1"}.items():
        monkeypatch.setenv(key, value)
    return s3_endpoint


def git(repo, *args) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


def make_repo(workspace: Path) -> Path:
    shutil.rmtree(workspace / ".git", ignore_errors=True)
    git(workspace, "init", "-q")
    git(workspace, "remote", "add", "origin", "git@github.com:acme/shop.git")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-qm", "shop")
    return workspace


def publish_from(repo: Path, tmp_path: Path, url: str) -> dict:
    """Index `repo` as CI would and publish it to `url`; the publish report."""
    publisher = engine_for(repo, tmp_path / "ci-index", tmp_path / "ci-cache")
    publisher.reindex()
    report = publish(publisher, url)
    publisher.close()
    return report


def engine_for(root: Path, index: Path, cache: Path) -> Engine:
    config = Config.resolve(root, index, persist_sessions=False)
    config.cache_dir = cache
    return Engine(config, embedder=HashEmbedder())


def test_a_clone_a_commit_later_pulls_the_snapshot_and_embeds_only_what_changed(workspace, tmp_path, aws):
    repo = make_repo(workspace)
    assert repo_identity(repo) == "github.com/acme/shop"
    publisher = engine_for(repo, tmp_path / "ci-index", tmp_path / "ci-cache")
    publisher.reindex()
    published = publisher.status().chunks
    report = publish(publisher, "s3://team-index/prod")
    publisher.close()
    assert report["chunks"] == published and report["embeddings_uploaded"] > 0

    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    git(clone, "remote", "set-url", "origin", "https://github.com/acme/shop")
    (clone / "src" / "shop" / "loyalty.py").write_text("def award_loyalty_points(order):\n    return 10\n")
    git(clone, "add", "-A")
    git(clone, "commit", "-qm", "loyalty points")

    cache = tmp_path / "fresh-cache"
    outcome = pull("s3://team-index/prod", clone, tmp_path / "fresh-index",
                   EmbeddingCache(cache / "embeddings.sqlite"))
    assert outcome.startswith("pulled github.com/acme/shop@") and "1 commits behind" in outcome
    engine = engine_for(clone, tmp_path / "fresh-index", cache)
    assert engine.status().chunks == published  # answers before any local indexing
    result = engine.reindex()
    assert result.files_changed == 1 and result.chunks_embedded == result.chunks_added  # only loyalty.py is new
    assert result.embeddings_reused == 0 and engine.status().vectors_pending == 0
    assert Workspace.single(engine).context("award_loyalty_points").chunks[0].path == "src/shop/loyalty.py"
    engine.close()


def test_a_publish_without_its_manifest_is_never_pulled(workspace, tmp_path, aws):
    repo = make_repo(workspace)
    publish_from(repo, tmp_path, "s3://team-half/p")
    head = git(repo, "rev-parse", "HEAD")
    fs = filesystem()
    half = f"team-half/p/repos/github.com/acme/shop/{head}/99999999T000000Z-dead/index.db"
    with fs.open_output_stream(half) as out:  # a publish killed before its manifest
        out.write(b"not a database")
    outcome = pull("s3://team-half/p", repo, tmp_path / "idx", None)
    assert outcome.startswith("pulled")
    engine = engine_for(repo, tmp_path / "idx", tmp_path / "c")
    assert engine.status().files > 0
    engine.close()


def test_an_unreachable_or_empty_store_is_a_warning_and_a_cold_index(workspace, tmp_path, aws, monkeypatch):
    repo = make_repo(workspace)
    assert pull("s3://nothing-here/x", repo, tmp_path / "a", None).startswith("skipped")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens there
    started = time.monotonic()
    assert pull("s3://team-index/prod", repo, tmp_path / "b", None).startswith("skipped")
    assert time.monotonic() - started < 60
    engine = engine_for(repo, tmp_path / "b", tmp_path / "c")
    assert engine.reindex().files_changed > 0
    engine.close()


@pytest.fixture
def silent_store(monkeypatch):
    """A store endpoint that listens and never accepts: connections complete in the backlog, no
    byte comes back (a stopped server)."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)
    for key, value in {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{silent.getsockname()[1]}",
                       "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"}.items():
        monkeypatch.setenv(key, value)
    yield
    silent.close()


def test_a_store_that_accepts_but_never_answers_is_abandoned_at_the_deadline(workspace, tmp_path, silent_store):
    repo = make_repo(workspace)
    started = time.monotonic()
    outcome = pull("s3://team-index/prod", repo, tmp_path / "idx", None, deadline_s=3)
    assert outcome.startswith("skipped: the store did not answer")
    assert time.monotonic() - started < 10
    assert not (tmp_path / "idx" / "index.db").exists()
    engine = engine_for(repo, tmp_path / "idx", tmp_path / "c")  # a cold index, as without --from
    assert engine.reindex().files_changed > 0
    engine.close()


def test_serve_from_restores_in_the_background_and_swaps_the_snapshot_in(workspace, tmp_path, aws):
    repo = make_repo(workspace)
    published = publish_from(repo, tmp_path, "s3://team-index/bg")["chunks"]
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    git(clone, "remote", "set-url", "origin", "https://github.com/acme/shop")
    cold = engine_for(clone, tmp_path / "idx", tmp_path / "cache")
    ws = Workspace([cold])
    started: list = []
    worker = restore_in_background(ws, cold, "s3://team-index/bg", started.append)
    assert cold.status().state == "indexing"  # answers meanwhile say so
    worker.join(60)
    served = ws.engines[cold.name]
    assert served is not cold and started == [served]  # the restored engine serves and indexes
    assert served.status().chunks == published  # from the snapshot, before any local indexing
    assert ws.packet("where is the cart total computed").items


def test_serve_from_a_store_that_never_answers_starts_the_cold_index(workspace, tmp_path, silent_store, monkeypatch):
    repo = make_repo(workspace)
    monkeypatch.setattr(shared_index, "PULL_DEADLINE_S", 2)
    cold = engine_for(repo, tmp_path / "idx", tmp_path / "c")
    ws = Workspace([cold])
    started: list = []
    began = time.monotonic()
    worker = restore_in_background(ws, cold, "s3://team-index/prod", started.append)
    assert time.monotonic() - began < 1  # the caller (the MCP handshake) never waits for the store
    worker.join(30)
    assert ws.engines[cold.name] is cold and started == [cold]  # indexing from scratch, as without --from
    cold.close()
