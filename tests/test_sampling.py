"""Host sampling for query understanding: the policy (budget, cache, retry, garbage) and the
whole flow over stdio with a scripted sampling callback, on both protocol generations."""

import json
import os
import sys
from datetime import date

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import CreateMessageResult, ErrorData, TextContent

from mcp_retrieval.sampling import SamplingAsk, SamplingPlanner, SamplingReplyError, parse_reply

pytestmark = pytest.mark.slow  # hosts that answer late or never: seconds each

GOOD = json.dumps({"rewrite": "apply_discount percentage cart total", "sub_queries": ["discount percent"],
                   "filters": {"path_prefix": "src/shop"}, "is_ambiguous": False})


# --- the policy ---------------------------------------------------------------------------------
def test_off_and_no_sampling_are_skips_with_their_reasons():
    assert SamplingPlanner(False).plan("q", client_can_sample=True).reason == "off"
    outcome = SamplingPlanner(True).plan("q", client_can_sample=False)
    assert outcome.status == "skipped" and outcome.reason.startswith("no_sampling")


def test_budget_counts_asks_and_a_cached_query_costs_nothing(tmp_path):
    planner = SamplingPlanner(True, budget_per_day=2, state_path=tmp_path / "u.json")
    assert isinstance(planner.plan("Where is the discount?", client_can_sample=True), SamplingAsk)
    assert planner.settle("Where is the discount?", GOOD).status == "done"
    cached = planner.plan("  where is the DISCOUNT? ", client_can_sample=True)  # normalised: same query
    assert (cached.status, cached.reason) == ("skipped", "cached") and cached.rewrite.path_prefix == "src/shop"
    assert isinstance(planner.plan("second question", client_can_sample=True), SamplingAsk)
    planner.settle("second question", "I am not JSON")
    over = planner.plan("third question", client_can_sample=True)
    assert over.status == "skipped" and over.reason.startswith("budget")
    assert planner.calls_today == 2
    again = SamplingPlanner(True, budget_per_day=2, state_path=tmp_path / "u.json")  # a restart keeps both
    assert again.calls_today == 2 and again.plan("where is the discount?", client_can_sample=True).reason == "cached"


def test_the_budget_is_per_day():
    day = [date(2026, 11, 29)]
    planner = SamplingPlanner(True, budget_per_day=1, today=lambda: day[0])
    assert isinstance(planner.plan("a question", client_can_sample=True), SamplingAsk)
    assert planner.plan("another question", client_can_sample=True).reason.startswith("budget")
    day[0] = date(2026, 11, 30)
    assert isinstance(planner.plan("another question", client_can_sample=True), SamplingAsk)


def test_a_retry_carrying_the_answer_is_not_charged_and_an_unanswered_ask_is_not_repeated():
    planner = SamplingPlanner(True, budget_per_day=5)
    first = planner.plan("how are parcels priced", client_can_sample=True)
    retry = planner.plan("how are parcels priced", client_can_sample=True, retry=True)
    assert retry == first and planner.calls_today == 1  # identical render: the protocol checks it
    fresh_call = planner.plan("how are parcels priced", client_can_sample=True)  # the host never answered
    assert fresh_call.status == "error" and planner.calls_today == 1


def test_broad_questions_ask_for_a_step_back():
    assert "step-back" in SamplingPlanner.ask_for("how does the pricing engine work").system_prompt
    assert "step-back" not in SamplingPlanner.ask_for("where is apply_discount defined").system_prompt


@pytest.mark.parametrize("reply,why", [
    ("", "empty"), ("Sure, here is what I think about your question.", "no JSON"),
    ('{"rewrite": ', "malformed"), ("[1, 2]", "no JSON object"), ('{"sub_queries": []}', "rewrite"),
    ('{"rewrite": "x", "sub_queries": "not a list"}', "list"), ("{" + "x" * 9000, "characters"),
])
def test_garbage_replies_are_rejected_with_a_reason(reply, why):
    with pytest.raises(SamplingReplyError, match=why):
        parse_reply(reply)


def test_a_reply_wrapped_in_prose_and_fences_is_read_and_unsafe_prefixes_dropped():
    r = parse_reply('Here you go:\n```json\n{"rewrite": "x y", "filters": {"path_prefix": "../../etc"}}\n```')
    assert r.rewrite == "x y" and r.path_prefix is None and r.sub_queries == []


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=3000))
def test_any_reply_settles_to_done_or_error_never_raises(reply):
    outcome = SamplingPlanner(True).settle("a query", reply)
    assert outcome.status in ("done", "error")


# --- over stdio with a scripted host --------------------------------------------------------------
def _params(workspace, tmp_path, *extra):
    env = {**os.environ, "MCP_RETRIEVAL_CACHE_DIR": str(tmp_path / "cache"), "MCP_RETRIEVAL_EMBEDDER": "none"}
    return StdioServerParameters(command=sys.executable, env=env,
                                 args=["-m", "mcp_retrieval", "serve", "--root", str(workspace),
                                       "--index-dir", str(tmp_path / "idx"), "--no-watch", *extra])


class ScriptedHost:
    """A sampling callback that answers from a script and counts what it was asked."""

    def __init__(self, reply=GOOD, hang=False):
        self.asked: list[str] = []
        self.reply, self.hang = reply, hang

    async def __call__(self, context, params):
        self.asked.append(params.messages[0].content.text)
        if self.hang:
            await anyio.sleep(3600)
        if isinstance(self.reply, ErrorData):
            return self.reply
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text=self.reply),
                                   model="scripted")


def _understand(result) -> dict:
    return next(s for s in result.structured_content["debug"]["stages"] if s["name"] == "understand")


@pytest.mark.timeout(300)
@pytest.mark.parametrize("mode", ["auto", "legacy"])  # 2026-07-28 InputRequiredResult, and mid-call requests
def test_sampling_asks_once_per_novel_query_caches_and_keeps_to_the_budget(workspace, tmp_path, mode):
    host = ScriptedHost()

    async def go():
        async with Client(_params(workspace, tmp_path, "--understand", "sampling", "--understand-budget", "2"),
                          sampling_callback=host, mode=mode) as client:
            await client.call_tool("reindex", {})
            q1 = "which function reduces the price of the basket by a percentage"
            r = await client.call_tool("context", {"query": q1, "debug": True})
            assert _understand(r)["status"] == "done" and len(host.asked) == 1
            rewrite = r.structured_content["debug"]["rewrite"]
            assert rewrite["rewrite"] == "apply_discount percentage cart total" and rewrite["path_prefix"] == "src/shop"
            # the rewrite and its folder lead the window to the shop (the question alone puts web/app.ts first)
            first = []  # a chunk continuing the previous one's file leaves `path` out
            for c in r.structured_content["chunks"][:3]:
                first.append(c.get("path") or first[-1])
            assert all(p.startswith("src/shop/") for p in first) and "src/shop/pricing.py" in first
            r = await client.call_tool("packet", {"query": q1, "debug": True})  # packet never asks a model
            assert _understand(r)["status"] == "skipped" and len(host.asked) == 1
            r = await client.call_tool("context", {"query": q1, "debug": True})  # identical query: the cache
            assert (_understand(r)["status"], _understand(r)["detail"]) == ("skipped", "cached")
            assert len(host.asked) == 1
            r = await client.call_tool("context", {"query": "how is express shipping priced", "debug": True})
            assert _understand(r)["status"] == "done" and len(host.asked) == 2
            r = await client.call_tool("context", {"query": "what does the checkout handler do", "debug": True})
            assert _understand(r)["status"] == "skipped" and _understand(r)["detail"].startswith("budget")
            assert not r.is_error and r.structured_content["chunks"]  # still answers past the budget
            assert len(host.asked) == 2
            r = await client.call_tool("context", {"query": "apply_discount", "debug": True})
            assert _understand(r)["detail"].startswith("not_needed")  # an exact name costs no call

    anyio.run(go)


@pytest.mark.timeout(300)
def test_without_sampling_the_stage_is_skipped_and_agent_sub_queries_find_both_facets(workspace, tmp_path):
    async def go():
        async with Client(_params(workspace, tmp_path)) as client:
            await client.call_tool("reindex", {})
            r = await client.call_tool("packet", {
                "query": "how does the shop reduce prices and how are express parcels charged", "debug": True,
                "sub_queries": ["apply a percentage discount to the cart", "shipping cost for express parcels"]})
            assert _understand(r)["status"] == "skipped" and _understand(r)["detail"].startswith("off")
            top4 = [i["path"] for i in r.structured_content["items"][:4]]
            assert "src/shop/pricing.py" in top4 and "engine/src/lib.rs" in top4
            assert r.structured_content["debug"]["rewrite"]["source"] == "agent"
        async with Client(_params(workspace, tmp_path, "--understand", "sampling")) as client:  # no callback
            r = await client.call_tool("context", {"query": "where are discounts applied", "debug": True})
            assert _understand(r)["status"] == "skipped" and _understand(r)["detail"].startswith("no_sampling")

    anyio.run(go)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("host", [ScriptedHost(reply="I'd rather chat about the weather."),
                                  ScriptedHost(reply="{" * 20000), ScriptedHost(hang=True)],
                         ids=["prose", "huge", "never-answers"])
def test_a_bad_host_falls_back_to_the_raw_query_in_bounded_time(workspace, tmp_path, host):
    async def go():
        async with Client(_params(workspace, tmp_path, "--understand", "sampling", "--understand-timeout", "2"),
                          sampling_callback=host, mode="legacy") as client:
            await client.call_tool("reindex", {})
            with anyio.fail_after(30):
                r = await client.call_tool("context", {"query": "where are discounts applied", "debug": True})
            assert not r.is_error and _understand(r)["status"] == "error"
            assert r.structured_content["chunks"]  # the raw query still answers
            assert len(host.asked) == 1

    anyio.run(go)


@pytest.mark.timeout(300)
def test_a_host_that_refuses_on_the_new_protocol_is_not_asked_again_for_that_query(workspace, tmp_path):
    host = ScriptedHost(reply=ErrorData(code=-1, message="user declined sampling"))

    async def go():
        async with Client(_params(workspace, tmp_path, "--understand", "sampling"),
                          sampling_callback=host) as client:
            await client.call_tool("reindex", {})
            with pytest.raises(Exception):  # on 2026-07-28 the refusal ends the call at the client
                await client.call_tool("context", {"query": "where are discounts applied"})
            r = await client.call_tool("context", {"query": "where are discounts applied", "debug": True})
            assert not r.is_error and _understand(r)["status"] == "error" and len(host.asked) == 1

    anyio.run(go)
