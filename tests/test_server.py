"""Drive the MCP server as clients do: in memory with the SDK client, and over stdio."""

import json
import os
import sys

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from mcp_retrieval.indexers.tokens import budget_tokens
from mcp_retrieval.server import build_server, compact_output_schema


def run(coro_fn, *args):
    return anyio.run(coro_fn, *args)


def test_the_server_lists_four_tools_with_descriptions_and_answers_context(engine):
    async def go():
        async with Client(build_server(engine)) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert set(tools) == {"context", "packet", "query_graph", "reindex"}
            assert all(len(t.description) > 100 for t in tools.values())
            # what every agent pays before its first call: descriptions and input schemas
            cost = sum(budget_tokens(t.description) + budget_tokens(json.dumps(t.input_schema)) for t in tools.values())
            assert cost <= 1500, cost
            assert set(tools["packet"].input_schema["properties"]) >= {"query", "session_id", "max_items", "task",
                                                                       "active_files", "sub_queries", "debug"}
            assert "title" not in json.dumps(tools["context"].input_schema)
            r = await client.call_tool("context", {"query": "apply_discount", "budget_tokens": 1000})
            assert not r.is_error
            assert r.structured_content["know"]["found"] is True
            assert r.structured_content["chunks"][0]["path"] == "src/shop/pricing.py"
            assert "<mcp-retrieval:chunk" in r.content[0].text
            status = await client.read_resource("index://status")
            assert '"files"' in status.contents[0].text

    run(go)


def test_bad_input_is_a_tool_error_naming_the_argument_and_the_next_call_works(engine):
    async def go():
        async with Client(build_server(engine)) as client:
            for args, word in [({"query": ""}, "query"), ({"query": "x", "budget_tokens": 1}, "budget_tokens"),
                               ({"query": 12}, "query"), ({"query": "x", "active_files": ["../../etc/passwd"]}, "outside")]:
                r = await client.call_tool("context", args)
                assert r.is_error and word in r.content[0].text
                assert "Error executing tool context" not in r.content[0].text.replace(
                    "Error executing tool context: ", "", 1) or word in r.content[0].text
            r = await client.call_tool("query_graph", {"node": "Cart", "depth": 9})
            assert r.is_error and "depth" in r.content[0].text
            r = await client.call_tool("packet", {"query": "compute_shipping"})
            assert not r.is_error and r.structured_content["items"][0]["path"] == "engine/src/lib.rs"

    run(go)


def test_reindex_and_query_graph_tools_return_structured_results(engine):
    async def go():
        async with Client(build_server(engine)) as client:
            r = await client.call_tool("reindex", {})
            assert not r.is_error and r.structured_content["files_changed"] == 0
            r = await client.call_tool("query_graph", {"node": "Cart.subtotal", "relation": "callers"})
            assert "src/shop/cart.py::Cart.total" in {n["id"] for n in r.structured_content["nodes"]}
            r = await client.call_tool("query_graph", {"node": "Crat"})
            assert r.structured_content["miss"]["reason"] == "not_found"

    run(go)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_server_runs_over_stdio_as_a_subprocess(workspace, tmp_path):
    env = {**os.environ, "MCP_RETRIEVAL_CACHE_DIR": str(tmp_path / "cache"), "MCP_RETRIEVAL_EMBEDDER": "none"}
    params = StdioServerParameters(command=sys.executable, env=env,
                                   args=["-m", "mcp_retrieval", "serve", "--root", str(workspace),
                                         "--index-dir", str(tmp_path / "idx"), "--no-watch"])

    async def go():
        async with Client(params) as client:
            r = await client.call_tool("reindex", {})
            assert not r.is_error and r.structured_content["index"]["files"] >= 8  # serve indexes on start
            r = await client.call_tool("context", {"query": "how is shipping priced for express parcels"})
            assert r.structured_content["chunks"][0]["path"] in ("engine/src/lib.rs", "docs/guide.md")
            r = await client.call_tool("context", {"query": "  "})
            assert r.is_error and "query" in r.content[0].text
            r = await client.call_tool("packet", {"query": "handleCheckout"})
            assert r.structured_content["items"][0]["path"] == "server/main.go"
            r = await client.call_tool("query_graph", {"node": "Cart.subtotal", "relation": "callers"})
            assert "src/shop/cart.py::Cart.total" in {n["id"] for n in r.structured_content["nodes"]}
            r = await client.call_tool("query_graph", {"node": "src/shop/cart.py", "relation": "imported_by"})
            assert "src/shop/__init__.py" in {n["id"] for n in r.structured_content["nodes"]}
            r = await client.call_tool("query_graph", {"node": "Cart.subtotl"})
            assert r.structured_content["miss"]["reason"] == "not_found"
            assert "Cart.subtotal" in r.structured_content["miss"]["suggestions"]
            r = await client.call_tool("query_graph", {"node": "Cart", "depth": 5})
            assert r.is_error and "depth" in r.content[0].text
            r = await client.call_tool("context", {"query": "cart subtotal", "debug": True})
            graph = next(s for s in r.structured_content["debug"]["stages"] if s["name"] == "graph")
            assert graph["status"] == "done"

    anyio.run(go)


def test_reindex_sends_progress_notifications_when_the_client_asks(workspace, tmp_path):
    from mcp_retrieval.indexers.embed import HashEmbedder
    from mcp_retrieval import Config, Engine

    cfg = Config.resolve(workspace, tmp_path / "idx-progress", persist_sessions=False)
    cfg.cache_dir = tmp_path / "cache"
    eng = Engine(cfg, embedder=HashEmbedder())
    seen = []

    async def on_progress(progress, total, message):
        seen.append((progress, total, message))

    async def go():
        async with Client(build_server(eng)) as client:
            r = await client.call_tool("reindex", {}, progress_callback=on_progress)
            assert not r.is_error and r.structured_content["files_changed"] >= 8

    run(go)
    eng.close()
    assert seen and seen[-1][0] == seen[-1][1]


def assert_validate_alike(full: dict, small: dict, good: list, bad: list) -> None:
    """Both schemas accept every `good` document and refuse every `bad` one."""
    import jsonschema

    for doc in good:
        jsonschema.validate(doc, full), jsonschema.validate(doc, small)
    for doc in bad:
        for schema in (full, small):
            with pytest.raises(jsonschema.ValidationError):
                jsonschema.validate(doc, schema)


def test_a_definition_named_once_is_written_in_place_and_validates_alike():
    """Single-use `$defs` are inlined (a client then resolves no reference per item); one named
    twice, or by itself, or by a `$ref` with a keyword beside it, stays a reference."""
    from pydantic import BaseModel, Field

    class Once(BaseModel):
        n: int

    class Twice(BaseModel):
        s: str

    class Tree(BaseModel):
        kids: list["Tree"] = []

    class Described(BaseModel):
        k: int

    class Out(BaseModel):
        items: list[Once]
        a: Twice | None = None
        b: Twice | None = None
        tree: Tree | None = None
        d: Described = Field(description="a `$ref` with a keyword beside it")

    full = Out.model_json_schema()
    small = compact_output_schema(full)
    assert set(small["$defs"]) == {"Twice", "Tree", "Described"} and "Once" not in json.dumps(small)
    good = [{"items": [{"n": 1}], "a": {"s": "x"}, "tree": {"kids": [{"kids": []}]}, "d": {"k": 1}},
            {"items": [], "b": None, "d": {"k": 2}}]
    bad = [{"items": [{"n": "x"}], "d": {"k": 1}}, {"items": [], "a": {"s": 1}, "d": {"k": 1}},
           {"items": [], "tree": {"kids": [{"kids": 1}]}, "d": {"k": 1}}, {"items": [], "d": {"k": "x"}}]
    assert_validate_alike(full, small, good, bad)


def test_compact_output_schemas_accept_and_refuse_what_the_full_ones_do():
    """The listed output schema drops defaults and docstrings and writes `anyOf [X, null]` as a
    type list; a field named like a keyword stays a field, and an enum still refuses null."""
    from typing import Literal
    from pydantic import BaseModel

    class Inner(BaseModel):
        """Notes for this code's readers."""
        n: int | None = None

    class Out(BaseModel):
        default: str | None = None
        title: int = 0
        state: Literal["a", "b"] | None = None
        tags: list[str] | None = None
        inner: Inner | None = None

    full = Out.model_json_schema()
    small = compact_output_schema(full)
    assert len(json.dumps(small)) < len(json.dumps(full))
    assert set(small["properties"]) == {"default", "title", "state", "tags", "inner"}
    assert "Notes" not in json.dumps(small) and '"default": null' not in json.dumps(small)
    good = [{}, {"default": None, "title": 3, "state": "a", "tags": None, "inner": {"n": None}},
            {"tags": ["x"], "inner": None, "state": None}]
    bad = [{"title": None}, {"state": "c"}, {"tags": [1]}, {"inner": {"n": "x"}}, {"default": 1}]
    assert_validate_alike(full, small, good, bad)
