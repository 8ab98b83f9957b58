"""Read-only replicas over a real S3 API (moto on loopback): every published repository answered
by identity, several replicas behind one store, a killed replica's calls retried on another."""

from __future__ import annotations

import os
import subprocess
import sys

import anyio
import pytest
from mcp import Client

from tests.test_shared_index import MOTO, aws, engine_for, free_port, git, make_repo, s3_endpoint  # noqa: F401
from tests.test_http import wait_for_port
from mcp_retrieval.shared_index import publish

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not os.path.exists(MOTO), reason="moto[server] is not installed (test extras)")]


def publish_two_repos(workspace, tmp_path, url):
    shop = make_repo(workspace)
    lib = tmp_path / "client-lib"
    (lib / "client").mkdir(parents=True)
    (lib / "client" / "http_client.py").write_text(
        "class RetryingClient:\n    def send_with_backoff(self, request, attempts=5):\n        return request\n")
    git(lib, "init", "-q")
    git(lib, "remote", "add", "origin", "https://github.com/acme/client-lib.git")
    git(lib, "add", "-A")
    git(lib, "commit", "-qm", "client")
    for n, repo in enumerate((shop, lib)):
        engine = engine_for(repo, tmp_path / f"ci-{n}", tmp_path / "ci-cache")
        engine.reindex()
        publish(engine, url)
        engine.close()


def start_replica(tmp_path, url, name):
    port = free_port()
    env = {**os.environ, "MCP_RETRIEVAL_EMBEDDER": "hash", "MCP_RETRIEVAL_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.Popen([sys.executable, "-m", "mcp_retrieval", "serve", "--store", url, "--transport",
                             "streamable-http", "--port", str(port), "--index-dir", str(tmp_path / name)],
                            env=env, stderr=open(tmp_path / f"{name}.log", "wb"))  # a file: never a full pipe
    wait_for_port(port, proc)
    return proc, f"http://127.0.0.1:{port}/mcp"


@pytest.mark.timeout(300)
def test_two_replicas_answer_eight_clients_and_a_killed_one_loses_no_retried_call(workspace, tmp_path, aws):
    url = "s3://replicas/prod"
    publish_two_repos(workspace, tmp_path, url)
    (a, url_a), (b, url_b) = start_replica(tmp_path, url, "ra"), start_replica(tmp_path, url, "rb")
    errors, answered = [], []
    questions = [("apply_discount", "acme/shop", "src/shop/pricing.py"),
                 ("send_with_backoff RetryingClient", "client-lib", "client/http_client.py")]

    async def call(target, n):
        query, repo, path = questions[n % 2]
        async with Client(target) as client:
            r = await client.call_tool("packet", {"query": query, "roots": [repo]})
            if r.is_error:
                raise RuntimeError(r.content[0].text)
            top = r.structured_content["items"][0]
            assert top["root"].endswith(repo) and top["path"] == path
            answered.append(target)

    async def worker(n):
        for i in range(4):
            first, second = (url_a, url_b) if (n + i) % 2 else (url_b, url_a)
            try:
                await call(first, n + i)
            except Exception:  # a replica gone mid-run: the same call on the other one
                try:
                    await call(second, n + i)
                except Exception as exc:
                    errors.append(repr(exc))
            if n == 0 and i == 1:
                a.kill()

    try:
        async def run():
            async with anyio.create_task_group() as tg:
                for n in range(8):
                    tg.start_soon(worker, n)

        anyio.run(run)
        assert errors == [] and len(answered) == 32
        assert url_b in answered

        async def status():
            async with Client(url_b) as client:
                text = (await client.read_resource("index://status")).contents[0].text
                assert "github.com/acme/shop" in text and "reachable" in text
                r = await client.call_tool("reindex", {})
                assert r.is_error and "read-only" in r.content[0].text

        anyio.run(status)
    finally:
        for proc in (a, b):
            proc.kill()
            proc.wait(timeout=20)


def test_a_replica_that_loses_its_store_keeps_answering_and_says_so(workspace, tmp_path, aws, monkeypatch):
    from mcp_retrieval.indexers.embed import HashEmbedder
    from mcp_retrieval.replica import Replica

    url = "s3://replicas-lost/p"
    publish_two_repos(workspace, tmp_path, url)
    monkeypatch.setenv("MCP_RETRIEVAL_CACHE_DIR", str(tmp_path / "cache"))
    replica = Replica(url, tmp_path / "replica-cache", embedder=HashEmbedder())
    workspace_ = replica.open()
    try:
        assert set(workspace_.engines) == {"github.com/acme/shop", "github.com/acme/client-lib"}
        monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # the store is gone
        replica.refresh()
        assert workspace_.status().store.startswith("unreachable")
        r = workspace_.packet("apply_discount", roots=["shop"])
        assert r.items[0].root == "github.com/acme/shop" and r.items[0].path == "src/shop/pricing.py"
    finally:
        replica.close()
