"""Streamable HTTP and SSE transports, served by a real subprocess on loopback."""

import os
import socket
import subprocess
import sys
import time
from contextlib import contextmanager

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.sse import sse_client

pytestmark = pytest.mark.slow  # servers, subprocesses or builds: left out of `-m 'not slow'`


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, proc, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        if proc.poll() is not None:
            raise RuntimeError(proc.stderr.read().decode() if proc.stderr else f"exited with {proc.returncode}")
        time.sleep(0.2)
    raise TimeoutError(f"nothing listens on port {port}")


@contextmanager
def serving(workspace, tmp_path, transport, *extra):
    port = free_port()
    env = {**os.environ, "MCP_RETRIEVAL_CACHE_DIR": str(tmp_path / "cache"), "MCP_RETRIEVAL_EMBEDDER": "hash"}
    proc = subprocess.Popen([sys.executable, "-m", "mcp_retrieval", "serve", "--root", str(workspace), "--index-dir",
                             str(tmp_path / f"idx-{transport}"), "--no-watch", "--transport", transport,
                             "--port", str(port), *extra], env=env, stderr=subprocess.PIPE)
    try:
        wait_for_port(port, proc)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=20)


async def exercise(client):
    tools = {t.name for t in (await client.list_tools()).tools}
    assert tools == {"context", "packet", "query_graph", "reindex"}
    await client.call_tool("reindex", {})
    r = await client.call_tool("context", {"query": "apply_discount"})
    assert r.structured_content["chunks"][0]["path"] == "src/shop/pricing.py"
    r = await client.call_tool("context", {"query": ""})
    assert r.is_error and "query" in r.content[0].text


@pytest.mark.timeout(180)
def test_streamable_http_answers_the_sdk_client_and_refuses_a_foreign_origin(workspace, tmp_path):
    with serving(workspace, tmp_path, "streamable-http") as port:
        url = f"http://127.0.0.1:{port}/mcp"

        async def go():
            async with Client(url) as client:
                await exercise(client)

        anyio.run(go)
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        headers = {"Origin": "http://evil.example", "Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream"}
        r = httpx.post(url, json=body, headers=headers)
        assert r.status_code in (400, 403)


@pytest.mark.timeout(180)
def test_the_sse_transport_answers_too(workspace, tmp_path):
    with serving(workspace, tmp_path, "sse") as port:
        async def go():
            async with Client(sse_client(f"http://127.0.0.1:{port}/sse")) as client:
                await exercise(client)

        anyio.run(go)


@pytest.mark.timeout(120)
def test_a_bearer_token_is_required_when_one_is_set(workspace, tmp_path):
    with serving(workspace, tmp_path, "streamable-http", "--auth-token", "s3cret") as port:
        r = httpx.post(f"http://127.0.0.1:{port}/mcp", json={})
        assert r.status_code == 401


def test_binding_off_loopback_without_a_token_is_refused(workspace, tmp_path):
    env = {**os.environ, "MCP_RETRIEVAL_CACHE_DIR": str(tmp_path / "cache"), "MCP_RETRIEVAL_EMBEDDER": "none"}
    env.pop("MCP_RETRIEVAL_AUTH_TOKEN", None)
    r = subprocess.run([sys.executable, "-m", "mcp_retrieval", "serve", "--root", str(workspace), "--transport",
                        "streamable-http", "--host", "0.0.0.0"], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "auth-token" in r.stderr


@pytest.mark.timeout(180)
@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
def test_host_sampling_works_over_the_http_transports(workspace, tmp_path, transport):
    from tests.test_sampling import GOOD, ScriptedHost

    host = ScriptedHost(GOOD)
    with serving(workspace, tmp_path, transport, "--understand", "sampling", "--understand-budget", "1") as port:
        async def go():
            target = f"http://127.0.0.1:{port}/mcp" if transport == "streamable-http" else \
                sse_client(f"http://127.0.0.1:{port}/sse")
            async with Client(target, sampling_callback=host) as client:
                await client.call_tool("reindex", {})
                for _ in range(2):  # the second is served from the cache
                    r = await client.call_tool("context", {"query": "where are discounts applied", "debug": True})
                    assert r.structured_content["debug"]["rewrite"]["rewrite"] == "apply_discount percentage cart total"
                assert len(host.asked) == 1

        anyio.run(go)


def open_raw_session(url: str) -> str:
    """An initialize over plain HTTP that is then left idle (a flooding client)."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "flood", "version": "0"}}}
    r = httpx.post(url, json=body, headers={"Accept": "application/json, text/event-stream"})
    assert r.status_code == 200, r.text
    return r.headers["mcp-session-id"]


@pytest.mark.timeout(180)
def test_a_flood_of_idle_http_sessions_does_not_lock_out_the_next_client(workspace, tmp_path):
    with serving(workspace, tmp_path, "streamable-http", "--max-sessions", "10") as port:
        url = f"http://127.0.0.1:{port}/mcp"
        flood = [open_raw_session(url) for _ in range(40)]  # four times the cap, all left idle
        assert len(set(flood)) == 40

        async def go():
            async with Client(url) as client:
                await exercise(client)

        anyio.run(go)
        body = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
        r = httpx.post(url, json=body, headers={"Accept": "application/json, text/event-stream",
                                                "mcp-session-id": flood[0], "mcp-protocol-version": "2025-06-18"})
        assert r.status_code == 404  # the idlest was ended to make room; its client re-initialises
