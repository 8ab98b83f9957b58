"""The MCP server: the only module that imports `mcp`. Each tool is a few lines — validate in
the Engine, run it off the event loop in a worker thread, return structured content plus a
text rendering. A `BadRequest` becomes a ToolError whose one line says what to send instead."""

# No `from __future__ import annotations`: the SDK evaluates tool signatures, and the
# resolver marker below is a local closure a string annotation could not name.
import json
import logging
import secrets
import time
from collections import Counter
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.resolve import Resolve, Sample
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.message import ServerMessageMetadata
from mcp_types import (CallToolResult, CreateMessageRequest, CreateMessageResult, ModelPreferences, NotificationParams,
                       SamplingMessage, TextContent)
from mcp_types.version import is_version_at_least
from pydantic import Field, ValidationError

from mcp_retrieval import prompts
from mcp_retrieval.client_roots import ClientRoots
from mcp_retrieval.engine import Engine
from mcp_retrieval.workspace import Workspace
from mcp_retrieval.classify import classify
from mcp_retrieval.models import ContextResult, GraphResult, PacketResult, ReindexResult
from mcp_retrieval.neutralize import neutralize, scrub
from mcp_retrieval.render import render_context, render_json, render_packet
from mcp_retrieval.sampling import HostOutcome, SamplingAsk, SamplingPlanner, host_question
from mcp_retrieval.validate import BadRequest, check_query, check_turns

log = logging.getLogger("mcp_retrieval")
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _result(model, render, window: str = "") -> CallToolResult:
    """The one exit for tool results: every string of the structured content passes the control-tag
    filter, and the text content is rendered from that filtered copy (plus the server-written
    `window`, built from filtered parts), so no field can reach the client unfiltered."""
    dumped = model.model_dump(mode="json")
    data = scrub(dumped)
    clean = model if data is dumped else type(model).model_validate(data)  # nothing to defuse: as it was
    return CallToolResult(content=[TextContent(type="text", text=render(clean, window))], structured_content=data)


_NAME_MAPS = ("properties", "$defs")  # maps of name -> schema: their keys are names, not keywords


def compact_schema(schema, optional_as_type: bool = True):
    """A JSON schema without `title`s; with `optional_as_type`, `anyOf [X, null]` with a null
    default is read as X (for arguments: leaving one out means null). Output schemas keep their
    nulls, which results carry and clients validate (see `compact_output_schema`)."""
    if isinstance(schema, list):
        return [compact_schema(x, optional_as_type) for x in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: compact_schema(v, optional_as_type) for k, v in schema.items() if k != "title" or not isinstance(v, str)}
    options = out.get("anyOf")
    if optional_as_type and isinstance(options, list) and len(options) == 2 and {"type": "null"} in options \
            and out.get("default", 0) is None:
        other = next(o for o in options if o != {"type": "null"})
        out.pop("anyOf")
        out.pop("default")
        out = {**other, **out}
    return out


def compact_output_schema(schema: dict) -> dict:
    """An output schema as `compact_schema` lists it, shorter still and validating the same
    results: no `default`s (an annotation; results carry their values) and `anyOf [X, null]` as
    `type: [X's type, "null"]` where X is a plain typed schema; a model's docstring (notes for
    this code's readers) is left out, its fields' descriptions kept. A host that hands output schemas
    to its model pays for every token (the four tools': 8.0k -> 6.4k tokens, BENCHMARKS 58a)."""
    def walk(node, names: bool = False):
        if isinstance(node, list):
            return [walk(x) for x in node]
        if not isinstance(node, dict):
            return node
        if names:
            return {k: walk(v) for k, v in node.items()}
        out = {k: walk(v, k in _NAME_MAPS) for k, v in node.items()
               if k != "default" and not (k == "description" and "properties" in node)}
        options = out.get("anyOf")
        if isinstance(options, list) and len(options) == 2 and {"type": "null"} in options:
            other = next(o for o in options if o != {"type": "null"})
            if isinstance(other.get("type"), str) and not {"enum", "const", "anyOf"} & set(other) \
                    and not set(other) & set(out) - {"anyOf"}:
                out.pop("anyOf")
                out = {**other, **out, "type": [other["type"], "null"]}
        return out
    return walk(_inline_single_use_defs(compact_schema(schema, optional_as_type=False)))


def _inline_single_use_defs(schema: dict) -> dict:
    """The schema with each `$defs` entry that one `$ref` names written in that place: shorter,
    and a client validates a result without resolving a reference per item (packet's items,
    context's chunks; 0.78 -> 0.68 ms per `packet` result on sympy, BENCHMARKS 64f). A
    definition named twice, by itself, or by a `$ref` with a keyword beside it, stays a reference."""
    defs = dict(schema.get("$defs", {}))

    def refs(node, bare_only: bool = False) -> list[str]:
        """The definitions `node` names; `bare_only`: only by a `$ref` with nothing beside it."""
        if isinstance(node, list):
            return [r for x in node for r in refs(x, bare_only)]
        if not isinstance(node, dict):
            return []
        named = isinstance(node.get("$ref"), str) and (len(node) == 1 or not bare_only)
        own = [node["$ref"].rpartition("/")[2]] if named else []
        return own + [r for k, v in node.items() if k != "$defs" for r in refs(v, bare_only)]

    def inline(node, names: frozenset[str]):
        if isinstance(node, list):
            return [inline(x, names) for x in node]
        if not isinstance(node, dict):
            return node
        name = node["$ref"].rpartition("/")[2] if isinstance(node.get("$ref"), str) else None
        if name in names and len(node) == 1:
            return inline(defs[name], names)
        return {k: inline(v, names) for k, v in node.items() if k != "$defs"}

    def reaches_itself(name: str) -> bool:
        seen, todo = set(), list(refs(defs[name]))
        while todo:
            n = todo.pop()
            if n == name:
                return True
            if n in defs and n not in seen:
                seen.add(n)
                todo += refs(defs[n])
        return False

    def uses(bare_only: bool = False) -> Counter:
        return Counter(refs(schema, bare_only) + [r for d in defs.values() for r in refs(d, bare_only)])

    # a `$ref` with a keyword beside it (a field's `description`) is not replaced, so its definition stays
    counts, bare = uses(), uses(bare_only=True)
    once = frozenset(n for n in defs if counts[n] == 1 and bare[n] == 1 and not reaches_itself(n))
    out = inline(schema, once)
    kept = {n: inline(d, once) for n, d in defs.items() if n not in once}
    return {**out, "$defs": kept} if kept else out


def one_line_error(exc: BaseException) -> str:
    """A ToolError's text on one line, naming the argument: pydantic's multi-line report (with its
    documentation URL) becomes `name: what was wrong (got value)`, joined by `; `."""
    cause = exc.__cause__
    if isinstance(cause, ValidationError):
        parts = []
        for err in cause.errors(include_url=False):
            name = ".".join(str(p) for p in err["loc"]) or "arguments"
            got = "" if err["type"] == "missing" else f" (got {err.get('input')!r:.60})"
            parts.append(f"{name}: {err['msg'].lower()}{got}")
        text = "invalid arguments: " + "; ".join(parts) + " — see the tool's input schema"
    else:
        text = str(exc)
    return neutralize(" ".join(text.split()))[:500]


class RetrievalServer(MCPServer):
    """MCPServer whose tool errors leave as one neutralised line (argument errors included), and
    which reads the client's roots before a call when it follows them (`client_roots`)."""

    client_roots: ClientRoots | None = None

    def follow_client_roots(self, workspace: Workspace) -> None:
        self.client_roots = ClientRoots(workspace)

        async def on_list_changed(ctx, params) -> None:
            self.client_roots.changed()

        self._lowlevel_server.add_notification_handler("notifications/roots/list_changed", NotificationParams,
                                                       on_list_changed)

    async def list_tools(self):
        """The tools with compact schemas: no pydantic titles, an optional argument as its type
        alone (leaving it out means null). Arguments are still validated by the full model; this
        only trims what every agent pays for in context (tests/test_server.py counts it)."""
        tools = await super().list_tools()
        for tool in tools:
            tool.input_schema = compact_schema(tool.input_schema)
            if tool.output_schema:
                tool.output_schema = compact_output_schema(tool.output_schema)
        return tools

    async def call_tool(self, name, arguments, context=None):
        if self.client_roots is not None:
            await self.client_roots.sync(context)
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            raise
        except ToolError as exc:
            raise ToolError(one_line_error(exc)) from None


async def _call(fn, *args, **kwargs):
    try:
        return await anyio.to_thread.run_sync(lambda: fn(*args, **kwargs))
    except BadRequest as exc:
        raise ToolError(neutralize(str(exc))) from None
    except Exception as exc:  # never a bare "Error executing tool": say what happened and what to do
        log.exception("%s failed", getattr(fn, "__name__", "tool"))
        raise ToolError(neutralize(f"internal error ({type(exc).__name__}: {' '.join(str(exc).split())[:200]}); "
                                   "the index is unchanged — retry, or call reindex if it persists")) from None


def _progress_reporter(ctx: Context | None):
    """MCP progress notifications from the indexing thread (a no-op unless the client asked)."""
    if ctx is None:
        return None
    last = {"sent": -1.0}

    def report(phase: str, done: int, total: int) -> None:
        fraction = done / total if total else 1.0
        if fraction - last["sent"] < 0.05 and done != total:
            return
        last["sent"] = fraction
        try:
            anyio.from_thread.run(ctx.report_progress, float(done), float(total), f"{phase}: {done}/{total}")
        except Exception:  # progress is best effort; indexing goes on
            pass

    return report


# --- host sampling (serve --understand sampling) ----------------------------------------------
INPUT_REQUIRED_VERSION = "2026-07-28"  # from this protocol on, server requests ride InputRequiredResult
_CHEAP_MODEL = ModelPreferences(cost_priority=0.8, speed_priority=0.8, intelligence_priority=0.3)


def _sample(ask: SamplingAsk) -> Sample:
    return Sample([SamplingMessage(role="user", content=TextContent(type="text", text=ask.user_text))],
                  max_tokens=ask.max_tokens, system_prompt=ask.system_prompt, temperature=0.0,
                  model_preferences=_CHEAP_MODEL)


def _reply_text(result: CreateMessageResult) -> str | None:
    content = result.content if isinstance(result.content, list) else [result.content]
    texts = [c.text for c in content if isinstance(c, TextContent)]
    return "\n".join(texts) if texts else None


def host_understanding(planner: SamplingPlanner):
    """A resolver that runs before `context`/`packet`: asks the host's model to rewrite a novel
    query when sampling is on, offered, and within budget. On the 2026-07-28 protocol it returns
    a `Sample` marker (the SDK sends it inside an InputRequiredResult and the client retries with
    the answer); on older protocols it sends `sampling/createMessage` itself, bounded by
    `planner.timeout_s`, so a host that never answers delays the call by at most that long.
    Understanding is optional: whatever goes wrong here, the call goes on with the raw query."""

    async def understand_query(query: str, ctx: Context, recent_turns: list[str] | None = None) -> Sample | HostOutcome:
        if not planner.enabled:
            return HostOutcome("skipped", "off")
        try:
            return await _understand(planner, query, ctx, recent_turns)
        except Exception as exc:
            log.warning("query understanding failed (%s); the raw query is used", exc)
            return HostOutcome("error", f"understanding failed ({type(exc).__name__}); raw query used")

    return understand_query


async def _understand(planner: SamplingPlanner, query: str, ctx: Context,
                      recent_turns: list[str] | None = None) -> Sample | HostOutcome:
    try:
        text, _ = check_query(query)
        turns = check_turns(recent_turns)
    except BadRequest:
        return HostOutcome("skipped", "off: the query is rejected below")
    if classify(text).name in ("identifier", "path"):
        return HostOutcome("skipped", "not_needed: an exact identifier or path needs no rewrite")
    text = host_question(text, turns)  # the host's model reads the conversation with the question
    caps = ctx.client_capabilities
    modern = ctx.protocol_version is not None and is_version_at_least(ctx.protocol_version, INPUT_REQUIRED_VERSION)
    plan = planner.plan(text, client_can_sample=caps is not None and caps.sampling is not None,
                        retry=modern and (ctx.request_state is not None or bool(ctx.input_responses)))
    if isinstance(plan, HostOutcome):
        return plan
    return _sample(plan) if modern else await _ask_mid_call(planner, text, plan, ctx)


async def _ask_mid_call(planner: SamplingPlanner, text: str, ask: SamplingAsk, ctx: Context) -> HostOutcome:
    """Older protocols: a server-to-client request inside the tool call, bounded in time."""
    t0 = time.perf_counter()
    try:
        with anyio.fail_after(planner.timeout_s):
            result = await ctx.session.send_request(
                CreateMessageRequest(params=_sample(ask).params), CreateMessageResult,
                request_read_timeout_seconds=planner.timeout_s,
                metadata=ServerMessageMetadata(related_request_id=ctx.request_id))
    except TimeoutError:
        return planner.settle(text, None, f"no reply within {planner.timeout_s:.0f} s",
                              ms=(time.perf_counter() - t0) * 1000)
    except Exception as exc:  # refused, malformed, disconnected: the raw query serves
        return planner.settle(text, None, f"host sampling failed ({type(exc).__name__})",
                              ms=(time.perf_counter() - t0) * 1000)
    return planner.settle(text, _reply_text(result), ms=(time.perf_counter() - t0) * 1000)


def _host_outcome(planner: SamplingPlanner, query: str, resolved: Any, recent_turns=None) -> HostOutcome:
    """The resolver's outcome; a `CreateMessageResult` injected by the SDK (modern protocol) is settled here."""
    if isinstance(resolved, CreateMessageResult):
        try:
            return planner.settle(host_question(check_query(query)[0], check_turns(recent_turns)), _reply_text(resolved))
        except Exception as exc:  # never fail the call over the optional stage
            return HostOutcome("error", f"understanding failed ({type(exc).__name__}); raw query used")
    return resolved if isinstance(resolved, HostOutcome) else HostOutcome("skipped", "off")


# Argument descriptions are kept short: every agent pays for them before its first call (the
# whole of the four tools' definitions is held under 1,500 tokens by tests/test_server.py).
ROOTS_FIELD = Field(description="default all")
TURNS_FIELD = Field(description="your last messages (max 5)")
QUERY_FIELD = Field(description="question, identifier, path or pasted error")


def build_server(target: Engine | Workspace) -> MCPServer:
    """The MCP server over a workspace (one `Engine` is a workspace of one root)."""
    workspace = target if isinstance(target, Workspace) else Workspace.single(target)
    server = RetrievalServer(name="mcp-retrieval", instructions=prompts.load("server_instructions"), version="0.1.0")
    understand_query = host_understanding(workspace.sampling)

    @server.tool(description=prompts.load("context"))
    async def context(
        query: Annotated[str, QUERY_FIELD],
        session_id: Annotated[str | None, Field(description="stable id of your task")] = None,
        budget_tokens: Annotated[int, Field(description="256-64000", strict=True)] = 6000,
        max_chunks: Annotated[int | None, Field(description="1-64", strict=True)] = None,
        path_prefix: Annotated[str | None, Field(description="folder to prefer")] = None,
        active_files: Annotated[list[str] | None, Field(description="files you work on")] = None,
        sub_queries: Annotated[list[str] | None, Field(description="up to 3 facets")] = None,
        ignore_delivered: Annotated[bool, Field(strict=True)] = False,
        debug: Annotated[bool, Field(strict=True)] = False,
        roots: Annotated[list[str] | None, ROOTS_FIELD] = None,
        render: Annotated[str, Field(description="frontier | compact (small models)")] = "frontier",
        recent_turns: Annotated[list[str] | None, TURNS_FIELD] = None,
        host: Annotated[Any, Resolve(understand_query)] = None,
    ) -> ContextResult:
        r = await _call(workspace.context, query, session_id=session_id, budget_tokens=budget_tokens,
                        max_chunks=max_chunks, path_prefix=path_prefix, active_files=active_files,
                        sub_queries=sub_queries, ignore_delivered=ignore_delivered, debug=debug, roots=roots,
                        render=render, recent_turns=recent_turns,
                        host=_host_outcome(workspace.sampling, query, host, recent_turns))
        return _result(r, render_context, r.window)

    @server.tool(description=prompts.load("packet"))
    async def packet(
        query: Annotated[str, QUERY_FIELD],
        session_id: Annotated[str | None, Field(description="stable id of your task")] = None,
        max_items: Annotated[int, Field(description="1-50", strict=True)] = 12,
        active_files: Annotated[list[str] | None, Field(description="files you work on")] = None,
        task: Annotated[str, Field(description="explain | edit | debug | review")] = "explain",
        sub_queries: Annotated[list[str] | None, Field(description="up to 3 facets")] = None,
        path_prefix: Annotated[str | None, Field(description="folder to prefer")] = None,
        debug: Annotated[bool, Field(strict=True)] = False,
        roots: Annotated[list[str] | None, ROOTS_FIELD] = None,
        recent_turns: Annotated[list[str] | None, TURNS_FIELD] = None,
    ) -> PacketResult:
        # Model-free always: never asks the host's model, even under --understand sampling.
        r = await _call(workspace.packet, query, session_id=session_id, max_items=max_items, active_files=active_files,
                        task=task, sub_queries=sub_queries, path_prefix=path_prefix, debug=debug, roots=roots,
                        recent_turns=recent_turns,
                        host=HostOutcome("skipped", "off: packet is model-free"))
        return _result(r, render_packet)

    @server.tool(description=prompts.load("query_graph"))
    async def query_graph(
        node: Annotated[str, Field(description="symbol, qualified name or path")],
        relation: str = "neighbors",
        depth: Annotated[int, Field(description="1-3", strict=True)] = 1,
        limit: Annotated[int, Field(description="1-500", strict=True)] = 50,
        kind: Annotated[str | None, Field(description="function|class|method|module|file")] = None,
        roots: Annotated[list[str] | None, ROOTS_FIELD] = None,
    ) -> GraphResult:
        r = await _call(workspace.query_graph, node, relation=relation, depth=depth, limit=limit, kind=kind, roots=roots)
        return _result(r, render_json)

    @server.tool(description=prompts.load("reindex"))
    async def reindex(
        paths: Annotated[list[str] | None, Field(description="files or folders (default all)")] = None,
        full: Annotated[bool, Field(description="re-read unchanged files too", strict=True)] = False,
        wait: Annotated[bool, Field(description="false: index in the background", strict=True)] = True,
        roots: Annotated[list[str] | None, ROOTS_FIELD] = None,
        ctx: Context | None = None,
    ) -> ReindexResult:
        r = await _call(workspace.reindex, paths, full=full, wait=wait, progress=_progress_reporter(ctx), roots=roots)
        return _result(r, render_json)

    @server.resource("index://status", name="index-status", description="index freshness and size",
                     mime_type="application/json")
    def index_status() -> str:
        return json.dumps(scrub(workspace.status().model_dump(mode="json")), indent=1)

    return server


def transport_security(host: str) -> TransportSecuritySettings:
    """DNS-rebinding protection: only loopback Host/Origin headers unless bound elsewhere on purpose."""
    hosts = ["127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost", "[::1]"]
    origins = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]
    if host not in LOOPBACK:
        hosts += [f"{host}:*", host]
        origins += [f"http://{host}:*", f"https://{host}:*"]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins)


class BearerAuth:
    """ASGI middleware: every request must carry `Authorization: Bearer <token>`."""

    def __init__(self, app, token: str):
        self.app = app
        self.token = token.encode()

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            supplied = headers.get(b"authorization", b"")
            if not secrets.compare_digest(supplied, b"Bearer " + self.token):
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"text/plain"), (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body", "body": b"missing or wrong bearer token\n"})
                return
        await self.app(scope, receive, send)


MAX_HTTP_SESSIONS = 500
HTTP_SESSION_IDLE_S = 30 * 60


def evict_idlest_when_full(manager) -> None:
    """A flood of idle streamable-HTTP sessions must not lock the next client out. The SDK refuses
    new sessions with 503 at `max_sessions` until its idle expiry (30 min); here, at the limit, the
    session idle the longest (no request in flight, earliest idle deadline) is ended instead and the
    new one admitted. Its next request gets 404, and per the MCP spec its client re-initialises.
    Only when every session has a request in flight is a new one refused (genuine overload).
    This wraps the SDK's session admission (a private method, pinned by tests/test_http.py)."""
    admit = manager._admit_session

    def admit_or_evict(requestor):
        sessions = manager._server_instances
        if manager.max_sessions is not None and len(sessions) >= manager.max_sessions:
            idle = [(t.idle_scope.deadline, sid) for sid, t in sessions.items()
                    if t.idle_scope is not None and not getattr(t, "_requests_in_flight", 0)]
            if idle:
                _, sid = min(idle)
                transport = sessions.pop(sid)
                manager._session_owners.pop(sid, None)
                transport.idle_scope.cancel()  # its server task ends and terminates the transport
                log.info("evicted idle HTTP session %s to admit a new client", sid[:12])
        return admit(requestor)

    manager._admit_session = admit_or_evict


def http_app(server: MCPServer, transport: str, host: str, auth_token: str | None,
             max_sessions: int = MAX_HTTP_SESSIONS):
    security = transport_security(host)
    if transport == "streamable-http":
        app = server.streamable_http_app(transport_security=security, host=host, max_sessions=max_sessions,
                                         session_idle_timeout=HTTP_SESSION_IDLE_S)
        evict_idlest_when_full(server.session_manager)
    else:
        app = server.sse_app(transport_security=security, host=host)
    return BearerAuth(app, auth_token) if auth_token else app
