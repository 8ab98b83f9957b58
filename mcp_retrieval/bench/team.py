"""A team's shared index: publish a repository's index at one commit, then time a fresh clone a
few commits later from `--from` to every chunk searchable by vector.

    python -m mcp_retrieval.bench team --git-dir /path/to/sympy.git [--publish-at HEAD~5] [--clone-at HEAD] \\
        [--work DIR] [--endpoint http://127.0.0.1:PORT]

Without `--endpoint` (or AWS_ENDPOINT_URL) a moto S3 server is started on loopback. The clones
are `git clone --shared` of the git directory, so history and remotes are as on a user's machine;
the publisher embeds everything (the slow part, once); the clone starts with an empty index and
an empty embedding cache.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

from mcp_retrieval.bench.commits import git_text
from mcp_retrieval.config import Config
from mcp_retrieval.engine import Engine
from mcp_retrieval.indexers.embed import EmbeddingCache
from mcp_retrieval.shared_index import publish, pull
from mcp_retrieval.workspace import Workspace


def _clone(git_dir: Path, rev: str, dest: Path) -> str:
    if not dest.exists():
        git_text(None, "clone", "-q", "--shared", "--no-checkout", str(git_dir), str(dest))
    git_text(None, "checkout", "-q", "--detach", rev, directory=dest)
    return git_text(None, "rev-parse", "HEAD", directory=dest).strip()


def _moto() -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    binary = Path(sys.executable).parent / "moto_server"
    proc = subprocess.Popen([str(binary), "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    time.sleep(3)
    return proc, f"http://127.0.0.1:{port}"


def _engine(root: Path, index: Path, cache: Path) -> Engine:
    config = Config.resolve(root, index, persist_sessions=False)
    config.cache_dir = cache
    return Engine(config)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m mcp_retrieval.bench team")
    ap.add_argument("--git-dir", required=True)
    ap.add_argument("--publish-at", default="HEAD~5")
    ap.add_argument("--clone-at", default="HEAD")
    ap.add_argument("--work", default="/tmp/mcp-retrieval-team")
    ap.add_argument("--endpoint", default=os.environ.get("AWS_ENDPOINT_URL"))
    args = ap.parse_args(argv)
    work = Path(args.work)
    moto = None
    if not args.endpoint:
        moto, args.endpoint = _moto()
    os.environ.update(AWS_ENDPOINT_URL=args.endpoint, AWS_ACCESS_KEY_ID=os.environ.get("AWS_ACCESS_KEY_ID", "bench"),
                      AWS_SECRET_ACCESS_KEY=os.environ.get("AWS_SECRET_ACCESS_KEY", "bench"))
    url = "s3://team-bench/index"
    try:
        ci = work / "ci"
        published_at = _clone(Path(args.git_dir), args.publish_at, ci)
        t0 = time.perf_counter()
        publisher = _engine(ci, work / "ci-index", work / "ci-cache")
        publisher.reindex()
        cold_s = time.perf_counter() - t0
        report = publish(publisher, url)
        publisher.close()
        print(f"publisher at {published_at[:12]}: cold index with every vector {cold_s:.0f} s; "
              f"publish {report['seconds']} s ({report['chunks']} chunks, {report['embeddings_uploaded']} embeddings)",
              file=sys.stderr)

        clone = work / "clone"
        head = _clone(Path(args.git_dir), args.clone_at, clone)
        shutil.rmtree(work / "clone-index", ignore_errors=True)
        shutil.rmtree(work / "clone-cache", ignore_errors=True)
        t0 = time.perf_counter()
        outcome = pull(url, clone, work / "clone-index",
                       EmbeddingCache(work / "clone-cache" / "embeddings.sqlite"))
        pulled_s = time.perf_counter() - t0
        engine = _engine(clone, work / "clone-index", work / "clone-cache")
        first = Workspace.single(engine).context("where is the main entry point").know is not None
        answer_s = time.perf_counter() - t0
        result = engine.reindex()
        status = engine.status()
        total_s = time.perf_counter() - t0
        engine.close()
        print(json.dumps({"published_at": published_at, "clone_at": head, "pull": outcome,
                          "pull_s": round(pulled_s, 1), "first_answer_s": round(answer_s, 1), "first_is_know": first,
                          "all_vectors_s": round(total_s, 1), "vectors_pending": status.vectors_pending,
                          "files_changed": result.files_changed, "chunks_embedded": result.chunks_embedded,
                          "embeddings_reused": result.embeddings_reused, "publisher_cold_s": round(cold_s, 1)},
                         indent=1))
    finally:
        if moto is not None:
            moto.terminate()
    return 0
