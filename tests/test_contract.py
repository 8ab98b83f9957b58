"""docs/CONTRACT.md is the project's contract: the tools the server lists must match it."""

from __future__ import annotations

import pytest

import re
import typing
from pathlib import Path

import anyio
from mcp import Client

from mcp_retrieval.models import IndexStatus, Miss
from mcp_retrieval.server import build_server
from mcp_retrieval.workspace import Workspace

ROOT = Path(__file__).resolve().parent.parent
CONTRACT = (ROOT / "docs" / "CONTRACT.md").read_text()


def tables_after(heading: str) -> list[list[str]]:
    """First-column cells of each Markdown table in the section under `heading`."""
    section = CONTRACT.split(heading, 1)[1].split("\n### ", 1)[0].split("\n## ", 1)[0]
    tables, current = [], None
    for line in section.splitlines():
        if line.startswith("|---"):
            continue
        if line.startswith("|"):
            cell = line.split("|")[1].strip()
            if current is None:
                current = []  # the header row
                tables.append(current)
                continue
            current.append(cell)
        else:
            current = None
    return tables


def names(cells: list[str]) -> set[str]:
    return {n for cell in cells for n in re.findall(r"`([a-z_]+)`", cell)}


def served_tools(engine) -> dict:
    async def go():
        async with Client(build_server(engine)) as client:
            return {t.name: t for t in (await client.list_tools()).tools}

    return anyio.run(go)


@pytest.mark.slow
def test_every_tool_argument_and_result_field_is_documented_and_nothing_else(engine):
    tools = served_tools(engine)
    assert set(tools) == {"context", "packet", "query_graph", "reindex"}
    for name, tool in tools.items():
        arguments, results = tables_after(f"### `{name}`")[:2]
        assert names(arguments) == set(tool.input_schema["properties"]), name
        assert names(results) == set(tool.output_schema["properties"]), name


def test_the_documented_miss_reasons_and_escalations_are_exactly_those_produced():
    reasons = typing.get_args(Miss.model_fields["reason"].annotation)
    escalations = typing.get_args(Miss.model_fields["escalate_to"].annotation)
    section = CONTRACT.split("## Know and miss", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|") for line in section.splitlines() if line.startswith("| `") and "miss.reason" not in line]
    assert {re.search(r"`(\w+)`", r[1]).group(1) for r in rows} == set(reasons)
    assert {v for r in rows for v in re.findall(r"`(\w+)`", r[3])} == set(escalations)
    prompts = "\n".join(p.read_text() for p in (ROOT / "prompts").glob("*.txt"))
    for word in ("bad_query", "read_file"):  # values once promised and never produced
        assert word not in prompts and word not in CONTRACT


def test_the_readme_links_the_contract():
    assert "docs/CONTRACT.md" in (ROOT / "README.md").read_text()


def test_structured_content_validates_against_the_output_schema_and_leaves_out_nulls(engine):
    """What the host receives: each tool's structured content matches its published schema, and
    optional fields that are null or flags that are false are not sent (docs/CONTRACT.md)."""
    import jsonschema

    calls = [("context", {"query": "apply_discount", "budget_tokens": 1000}),
             ("context", {"query": "zzqx flurble wibbleton"}),
             ("packet", {"query": "apply_discount"}),
             ("query_graph", {"node": "apply_discount"}),
             ("query_graph", {"node": "src/shop/pricing.py", "relation": "history"}),
             ("context", {"query": "apply_discount", "debug": True}),  # the evidence fields, some null
             ("packet", {"query": "apply_discount", "debug": True})]

    async def go():
        async with Client(build_server(engine)) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            return [(tools[name], (await client.call_tool(name, args)).structured_content) for name, args in calls]

    results = anyio.run(go)
    for (_, args), (tool, data) in zip(calls, results):
        jsonschema.validate(data, tool.output_schema)
        assert ("debug" in data) == bool(args.get("debug")), tool.name
        assert data.get("know") is None or "miss" not in data
    know, miss = results[0][1], results[1][1]
    assert know["know"]["found"] and know["chunks"]
    assert miss["miss"]["found"] is False and "know" not in miss
    for chunk in know["chunks"]:
        assert {"symbol", "text"} <= set(chunk)  # required: sent even when null
        assert not {"root", "score", "tiers", "content_sha256", "tokens"} & set(chunk)  # one root; evidence: debug
        assert not {"delivered", "excerpt", "diff"} & {k for k, v in chunk.items() if v is False}
    assert set(know["know"]) == {"found", "confidence"}  # the evidence comes with debug
    settled = IndexStatus(**results[2][1]["index"]).settled()  # `packet` always reports the index
    assert settled == ("index" not in know), "context leaves out the status of a settled index, only that"
    assert "roots" not in results[2][1]["index"] and "store" not in results[2][1]["index"]


def test_context_reports_an_unsettled_index_and_a_settled_one_only_with_debug(engine):
    """The index status says something when work is pending; a settled one is left out of
    `context` (it cost ~150 characters, a fifth of a 256-token window's structured content)."""
    assert engine.status().settled()
    r = Workspace.single(engine).context("apply_discount", budget_tokens=256)
    assert r.index is None and r.chunks
    assert Workspace.single(engine).context("apply_discount", budget_tokens=256, debug=True).index.settled()
    engine.pending_paths.add("src/shop/pricing.py")  # a change seen by the watcher, not yet indexed
    try:
        pending = Workspace.single(engine).context("apply_discount", budget_tokens=256).index
        assert pending is not None and pending.pending_changes == 1 and not pending.settled()
    finally:
        engine.pending_paths.discard("src/shop/pricing.py")
