"""Shared fixtures: a copy of the polyglot workspace in tmp_path (plus the ignored and generated
files git cannot carry), and Engines over it with real Tantivy and LanceDB."""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from pathlib import Path

import pytest

from mcp_retrieval.indexers.embed import HashEmbedder
from mcp_retrieval import Config, Engine

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "workspace"


def make_workspace(dest: Path) -> Path:
    shutil.copytree(FIXTURE, dest)
    (dest / "build").mkdir()
    (dest / "build" / "out.py").write_text("def build_output():\n    return 'ignored by .gitignore'\n")
    (dest / "node_modules" / "leftpad").mkdir(parents=True)
    (dest / "node_modules" / "leftpad" / "index.js").write_text("module.exports = () => 'vendored';\n")
    (dest / "debug.log").write_text("ignored by *.log\n")
    (dest / "web" / "generated").mkdir()
    (dest / "web" / "generated" / "bundle.js").write_text("export const bundle = 'generated, ignored';\n")
    (dest / "huge.txt").write_text("x" * 1_100_000)
    (dest / ".git" / "info").mkdir(parents=True)
    (dest / ".git" / "info" / "exclude").write_text("secret_notes.txt\n")
    (dest / "secret_notes.txt").write_text("excluded by .git/info/exclude\n")
    outside = dest.parent / "outside.txt"
    outside.write_text("a file outside the root\n")
    os.symlink(outside, dest / "link_outside.txt")
    return dest


@pytest.fixture(autouse=True)
def no_stage_raises(request, monkeypatch):
    """A pipeline stage that raises is recorded as `error` and its input passes through, so an
    answer never fails: in a test that would hide a bug. Every test fails if a stage raised,
    unless it is marked `stage_errors_expected` (it provokes one on purpose)."""
    from contextlib import contextmanager

    from mcp_retrieval.stages import StageLog

    raised: list[str] = []
    original = StageLog.run

    @contextmanager
    def run(self, name: str):
        with original(self, name) as record:
            try:
                yield record
            except Exception as exc:
                raised.append(f"{name}: {type(exc).__name__}: {exc}")
                raise

    monkeypatch.setattr(StageLog, "run", run)
    yield
    if raised and not request.node.get_closest_marker("stage_errors_expected"):
        pytest.fail("a pipeline stage raised: " + "; ".join(raised[:3]))


def engine_over(sources: dict[str, str], tmp: Path) -> Engine:
    """An indexed Engine (hash embedder) over a workspace of `sources` (path -> text) in `tmp`."""
    root = tmp / "ws"
    for rel, text in sources.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    config = Config.resolve(root, tmp / "index", persist_sessions=False)
    config.cache_dir = tmp / "cache"
    eng = Engine(config, embedder=HashEmbedder())
    eng.reindex()
    return eng


def wait_for(predicate, timeout=60.0) -> bool:
    """Whether `predicate()` came true within `timeout` seconds (polled every 0.2 s)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return False


@contextlib.contextmanager
def watching(engine: Engine, root: Path):
    """A file watcher feeding `engine` while the block runs (started and given half a second)."""
    from mcp_retrieval.indexers.watch import Watcher

    watcher = Watcher(root, engine.sync_paths, debounce_ms=100)
    watcher.start()
    try:
        time.sleep(0.5)
        yield watcher
    finally:
        watcher.stop()


def defined_ids(engine: Engine, path: str) -> set[str]:
    """The ids of the definitions in `path`, as `query_graph` lists them."""
    return {n.id for n in engine.query_graph(path, relation="defines", depth=3).nodes}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return make_workspace(tmp_path / "ws")


@pytest.fixture
def config(workspace: Path, tmp_path: Path) -> Config:
    return Config.resolve(workspace, tmp_path / "index", persist_sessions=False)


@pytest.fixture
def engine(config: Config, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """An indexed Engine with the hash embedder (vectors without meaning: fast, deterministic)."""
    monkeypatch.setenv("MCP_RETRIEVAL_CACHE_DIR", str(tmp_path / "cache"))
    config.cache_dir = tmp_path / "cache"
    eng = Engine(config, embedder=HashEmbedder())
    eng.reindex()
    yield eng
    eng.close()


@pytest.fixture(scope="session")
def minilm(tmp_path_factory):
    """The real embedding model, loaded once per test session."""
    from mcp_retrieval.indexers.embed import MiniLMEmbedder

    return MiniLMEmbedder(tmp_path_factory.mktemp("model-cache"))


def pytest_collection_modifyitems(items):
    """A test that runs the transformer (the `minilm` fixture) is slow: the full suite and CI run
    it, the inner loop (`-m "not slow"`) does not."""
    for item in items:
        if "minilm" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)
