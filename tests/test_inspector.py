"""The official MCP Inspector CLI against our server, over stdio and streamable HTTP.

Needs Node and `npm install @modelcontextprotocol/inspector` (CI installs it into .ci/node);
skipped with a reason when the Inspector is not installed.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_http import serving

CANDIDATES = [os.environ.get("MCP_INSPECTOR", ""),
              str(Path(__file__).resolve().parent.parent / ".ci" / "node" / "node_modules" / ".bin" / "mcp-inspector"),
              shutil.which("mcp-inspector") or ""]
INSPECTOR = next((c for c in CANDIDATES if c and Path(c).exists()), None)
pytestmark = [pytest.mark.slow, pytest.mark.skipif(INSPECTOR is None, reason="MCP Inspector not installed (npm install "
                                                           "@modelcontextprotocol/inspector)")]


def inspect(*args, env_extra=()):
    env_args = [a for kv in env_extra for a in ("-e", kv)]
    r = subprocess.run([INSPECTOR, "--cli", *env_args, *args], capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout)


@pytest.mark.timeout(300)
def test_the_inspector_lists_all_four_tools_and_calls_context_over_stdio(workspace, tmp_path):
    env = [f"MCP_RETRIEVAL_CACHE_DIR={tmp_path / 'cache'}", "MCP_RETRIEVAL_EMBEDDER=hash"]
    server = [sys.executable, "-m", "mcp_retrieval", "serve", "--root", str(workspace), "--index-dir",
              str(tmp_path / "idx"), "--no-watch"]
    tools = inspect(*server, "--method", "tools/list", env_extra=env)
    assert {t["name"] for t in tools["tools"]} == {"context", "packet", "query_graph", "reindex"}
    r = inspect(*server, "--method", "tools/call", "--tool-name", "reindex", env_extra=env)
    assert r["structuredContent"]["index"]["files"] >= 8
    r = inspect(*server, "--method", "tools/call", "--tool-name", "context", "--tool-arg", "query=apply_discount",
                env_extra=env)
    assert r["structuredContent"]["chunks"][0]["path"] == "src/shop/pricing.py"


@pytest.mark.timeout(300)
def test_the_inspector_answers_over_streamable_http(workspace, tmp_path):
    with serving(workspace, tmp_path, "streamable-http") as port:
        url = f"http://127.0.0.1:{port}/mcp"
        tools = inspect(url, "--transport", "http", "--method", "tools/list")
        assert len(tools["tools"]) == 4
        r = inspect(url, "--transport", "http", "--method", "tools/call", "--tool-name", "packet",
                    "--tool-arg", "query=handleCheckout")
        assert r["structuredContent"]["items"][0]["path"] == "server/main.go"
