"""Malformed JSON text on the wire gets a reply: a lone UTF-16 surrogate escape, which the SDK's
parser refuses (the request was dropped without a reply), is read as U+FFFD (mcp_retrieval.wire)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from mcp_retrieval.wire import without_lone_surrogates

pytestmark = pytest.mark.slow  # servers, subprocesses or builds: left out of `-m 'not slow'`


def test_lone_surrogates_become_replacement_characters_and_pairs_stay():
    fixed = without_lone_surrogates('{"q": "\\ud800 x \\udc00", "ok": "\\ud83d\\ude00"}')
    assert json.loads(fixed) == {"q": "\ufffd x \ufffd", "ok": "\U0001F600"}
    assert without_lone_surrogates('{"q": "plain"}') is None
    assert without_lone_surrogates('{"q": "\\ud800') is None  # not JSON: the SDK's own error stands


@pytest.mark.timeout(60)
def test_a_request_holding_a_lone_surrogate_is_answered_over_stdio(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (root / "retry.py").write_text("def backoff():\n    return 1\n")
    lines = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
    raw = "\n".join(json.dumps(x) for x in lines) + "\n" + \
        '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"packet","arguments":{"query":"\\ud800 backoff"}}}\n'
    proc = subprocess.Popen([sys.executable, "-m", "mcp_retrieval", "serve", "--root", str(root), "--index-dir",
                             str(tmp_path / "index"), "--no-watch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env={**os.environ, "MCP_RETRIEVAL_EMBEDDER": "none"})
    try:
        proc.stdin.write(raw.encode())
        proc.stdin.flush()
        replies = {}
        while 1 not in replies:
            line = proc.stdout.readline()  # the test's timeout bounds a missing reply
            assert line, "the server closed stdout without answering"
            message = json.loads(line)
            replies[message.get("id")] = message
        assert "result" in replies[1] or "error" in replies[1]
    finally:
        proc.kill()
        proc.wait()
