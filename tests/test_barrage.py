"""A barrage of malformed calls through the MCP layer: each gets a result or an explained error,
nothing outside the root leaks, and the index still answers correctly afterwards."""

import pytest
import anyio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from mcp_retrieval.server import build_server
from mcp_retrieval.workspace import Workspace

pytestmark = pytest.mark.slow  # servers, subprocesses or builds: left out of `-m 'not slow'`

BAD_VALUES = ["", " ", "\x00", "\x00" * 50, "a" * 1_000_000, "\ud800", "../../etc/passwd", "/etc/passwd", -1, 0,
              10**12, -(10**12), 3.5, None, True, [], {}, ["x"] * 5, {"a": 1}, "🙂" * 1000]
CALLS = [("context", "query"), ("context", "budget_tokens"), ("context", "max_chunks"), ("context", "active_files"),
         ("context", "path_prefix"), ("context", "session_id"), ("context", "sub_queries"),
         ("packet", "max_items"), ("packet", "task"), ("packet", "active_files"),
         ("query_graph", "node"), ("query_graph", "depth"), ("query_graph", "limit"), ("query_graph", "relation"),
         ("reindex", "paths"), ("reindex", "full")]
BASE = {"context": {"query": "apply_discount"}, "packet": {"query": "apply_discount"},
        "query_graph": {"node": "Cart"}, "reindex": {}}


def check_result(r, tool):
    text = r.content[0].text if r.content else ""
    if r.is_error:
        assert text.strip() and text.strip() != f"Error executing tool {tool}", text
    else:
        assert "/etc/passwd" not in str(r.structured_content) or "not_found" in str(r.structured_content)
        assert "root:x:" not in text


def test_malformed_calls_each_get_a_result_or_an_explained_error(engine):
    async def go():
        count = 0
        async with Client(build_server(engine)) as client:
            for tool, arg in CALLS:
                for value in BAD_VALUES[:8] if arg == "query" else BAD_VALUES:
                    if tool == "reindex" and arg == "paths" and value in ("", " ") :
                        continue
                    r = await client.call_tool(tool, {**BASE[tool], arg: value})
                    check_result(r, tool)
                    count += 1
            r = await client.call_tool("context", {"query": "apply_discount"})
            assert r.structured_content["chunks"][0]["symbol"] == "apply_discount"
        assert count >= 120

    anyio.run(go)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=st.text(max_size=300), budget=st.integers(-10, 100_000), chunks=st.integers(-5, 100),
       prefix=st.one_of(st.none(), st.text(max_size=30)))
def test_any_context_arguments_give_a_contract_result_or_a_bad_request(engine, query, budget, chunks, prefix):
    from mcp_retrieval import BadRequest

    try:
        r = Workspace.single(engine).context(query, budget_tokens=budget, max_chunks=chunks, path_prefix=prefix, debug=True)
    except BadRequest as exc:
        assert str(exc)
        return
    assert (r.know is None) != (r.miss is None)
    assert sum(c.tokens + 24 for c in r.chunks if c.text is not None) <= budget
    for c in r.chunks:
        assert not c.path.startswith(("/", "..")) and (engine.config.root / c.path).resolve().is_relative_to(
            engine.config.root)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(node=st.text(max_size=80), depth=st.integers(-2, 6), limit=st.integers(-2, 1000))
def test_any_graph_arguments_give_a_result_or_a_bad_request(engine, node, depth, limit):
    from mcp_retrieval import BadRequest

    try:
        r = engine.query_graph(node, depth=depth, limit=limit)
    except BadRequest:
        return
    assert r.miss is not None or r.nodes
    assert all(not n.path.startswith(("/", "..")) for n in r.nodes)
