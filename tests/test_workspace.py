"""Several roots in one server: one ranking, results that say where they are, restriction by
`roots`, and a root added to the configuration indexed alone."""

from __future__ import annotations

import anyio
import pytest
from mcp import Client

from mcp_retrieval.config import default_index_dir
from mcp_retrieval.indexers.embed import HashEmbedder
from mcp_retrieval.roots import read_config, resolve_workspace
from mcp_retrieval.server import build_server
from mcp_retrieval.validate import BadRequest
from mcp_retrieval.workspace import CannotOpen, open_workspace
from mcp_retrieval.workspace import Workspace
from mcp_retrieval.rules import Rules, applied


def make_client_lib(root):
    (root / "client").mkdir(parents=True)
    (root / "client" / "http_client.py").write_text(
        "class RetryingClient:\n    '''HTTP client with exponential backoff between attempts.'''\n\n"
        "    def send_with_backoff(self, request, attempts=5):\n        return request\n")
    return root


def test_one_server_answers_from_each_root_with_its_name_and_restricts_by_roots(workspace, tmp_path, monkeypatch):
    monkeypatch.setenv("MCP_RETRIEVAL_CACHE_DIR", str(tmp_path / "cache"))
    lib = make_client_lib(tmp_path / "client-lib")
    spec = resolve_workspace([f"shop={workspace}", str(lib)], cwd=tmp_path)
    assert [r.name for r in spec.roots] == ["shop", "client-lib"]
    ws = open_workspace(spec, embedder=HashEmbedder(), persist_sessions=False)
    try:
        ws.reindex()

        async def go():
            async with Client(build_server(ws)) as client:
                r = await client.call_tool("packet", {"query": "send_with_backoff RetryingClient"})
                top = r.structured_content["items"][0]
                assert (top["root"], top["path"]) == ("client-lib", "client/http_client.py")
                r = await client.call_tool("context", {"query": "apply_discount", "budget_tokens": 2000})
                first = r.structured_content["chunks"][0]
                assert (first["root"], first["path"]) == ("shop", "src/shop/pricing.py")
                assert 'root="shop" path="src/shop/pricing.py"' in r.content[0].text
                r = await client.call_tool("packet", {"query": "send_with_backoff", "roots": ["shop"]})
                assert all(i["root"] == "shop" for i in r.structured_content["items"])
                r = await client.call_tool("packet", {"query": "x", "roots": ["nope"]})
                assert r.is_error and "unknown root" in r.content[0].text
                r = await client.call_tool("query_graph", {"node": "RetryingClient.send_with_backoff"})
                assert {n["root"] for n in r.structured_content["nodes"]} == {"client-lib"}
                status = await client.read_resource("index://status")
                assert '"client-lib"' in status.contents[0].text and '"shop"' in status.contents[0].text

        anyio.run(go)
    finally:
        ws.close()


def test_a_folder_given_twice_is_one_root_and_names_stay_unique(workspace, tmp_path):
    other = tmp_path / "elsewhere" / "ws"
    other.mkdir(parents=True)
    spec = resolve_workspace([f"shop={workspace}", str(workspace), str(workspace / "src"), str(other)], cwd=tmp_path)
    assert [(r.name, r.path) for r in spec.roots] == [("shop", workspace.resolve()), ("src", (workspace / "src").resolve()),
                                                      ("ws", other.resolve())]


def test_a_root_added_to_the_configuration_is_indexed_alone_on_reindex(workspace, tmp_path, monkeypatch):
    monkeypatch.setenv("MCP_RETRIEVAL_CACHE_DIR", str(tmp_path / "cache"))
    lib = make_client_lib(tmp_path / "client-lib")
    third = make_client_lib(tmp_path / "third")
    config = tmp_path / ".mcp-retrieval.toml"
    config.write_text(f'roots = ["shop={workspace}", "{lib}"]\n')
    ws = open_workspace(read_config(config), embedder=HashEmbedder(), persist_sessions=False)
    try:
        ws.reindex()
        before = {name: e.status().last_updated for name, e in ws.engines.items()}
        config.write_text(f'roots = ["shop={workspace}", "{lib}", "{third}"]\n')
        result = ws.reindex()
        assert set(ws.engines) == {"shop", "client-lib", "third"}
        assert result.files_scanned == 1  # only the new root was walked
        assert {name: e.status().last_updated for name, e in ws.engines.items() if name != "third"} == before
    finally:
        ws.close()


def test_roots_share_one_embedding_model_and_a_question_is_embedded_once(workspace, tmp_path, monkeypatch):
    """MiniLM (selectable; the static default costs ~0.1 ms a question and caches nothing)."""
    monkeypatch.setenv("MCP_RETRIEVAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("MCP_RETRIEVAL_EMBEDDER", "minilm")
    lib = make_client_lib(tmp_path / "client-lib")
    spec = resolve_workspace([f"shop={workspace}", str(lib)], cwd=tmp_path)
    ws = open_workspace(spec, persist_sessions=False)  # the real model, loaded as `serve` loads it
    try:
        first, second = ws.engines.values()
        assert first.embedder is not None and first.embedder is second.embedder
        ws.reindex()
        runs = []
        real_run = first.embedder._run
        monkeypatch.setattr(first.embedder, "_run", lambda model, texts: runs.append(texts) or real_run(model, texts))
        ws.packet("where is the retry backoff between attempts")
        assert len(runs) == 1, runs  # both roots searched by vector, the question embedded once
    finally:
        ws.close()


def test_the_graph_crosses_into_another_root_where_code_imports_it(tmp_path, monkeypatch):
    monkeypatch.setenv("MCP_RETRIEVAL_CACHE_DIR", str(tmp_path / "cache"))
    lib = tmp_path / "retrylib"
    (lib / "src" / "retrylib").mkdir(parents=True)
    (lib / "src" / "retrylib" / "__init__.py").write_text("from .policy import Backoff\n")
    (lib / "src" / "retrylib" / "policy.py").write_text("class Backoff:\n    def delay(self, n):\n        return 2 ** n\n")
    svc = tmp_path / "service"
    (svc / "app").mkdir(parents=True)
    (svc / "app" / "worker.py").write_text(
        "from retrylib.policy import Backoff\nimport os\n\n\ndef run():\n    return Backoff().delay(os.getpid())\n")
    npm = tmp_path / "web-client"
    (npm / "src").mkdir(parents=True)
    (npm / "package.json").write_text('{"name": "@acme/web-client", "main": "./dist/index.js"}')
    (npm / "src" / "index.ts").write_text("export function fetchCart(id: string) { return id; }\n")
    (npm / "src" / "retry.ts").write_text("export function withRetry(f: () => void) { f(); }\n")
    ui = tmp_path / "ui"
    ui.mkdir()
    (ui / "cart.ts").write_text('import { fetchCart } from "@acme/web-client";\n'
                                'import { withRetry } from "@acme/web-client/retry";\n'
                                'export const load = () => withRetry(() => fetchCart("1"));\n')
    spec = resolve_workspace([str(lib), str(svc), str(npm), str(ui)], cwd=tmp_path)
    ws = open_workspace(spec, embedder=None, persist_sessions=False)
    try:
        ws.reindex()
        assert ws.status().state == "lexical_only"  # without vectors that is the steady state:
        assert ws.context("backoff delay of the retry policy").index is None  # nothing new to report
        r = ws.query_graph("app/worker.py", relation="imports")
        crossing = [e for e in r.edges if e.source_root != e.target_root]
        assert [(e.source_root, e.source, e.target_root, e.target) for e in crossing] == \
            [("service", "app/worker.py", "retrylib", "src/retrylib/policy.py")]
        assert ("retrylib", "src/retrylib/policy.py") in {(n.root, n.path) for n in r.nodes}
        back = ws.query_graph("src/retrylib/policy.py", relation="imported_by")
        assert ("service", "app/worker.py") in {(n.root, n.path) for n in back.nodes}
        js = ws.query_graph("cart.ts", relation="imports")
        assert {(n.root, n.path) for n in js.nodes} >= {("web-client", "src/index.ts"), ("web-client", "src/retry.ts")}
        alone = ws.query_graph("app/worker.py", relation="imports", roots=["service"])
        assert all(e.target_root == "service" for e in alone.edges)  # `roots` keeps the graph inside
    finally:
        ws.close()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_started_without_roots_the_server_follows_the_clients_roots_over_stdio(workspace, tmp_path):
    import os
    import sys

    from mcp.client.stdio import StdioServerParameters
    from mcp_types import ListRootsResult, Root

    lib = make_client_lib(tmp_path / "client-lib")
    elsewhere = tmp_path / "empty-cwd"
    elsewhere.mkdir()
    home = tmp_path / "home"  # a client that offers the home folder: not indexed (`roots.too_wide`)
    home.mkdir()
    offered = [home, workspace]

    async def list_roots(context):
        return ListRootsResult(roots=[Root(uri=p.as_uri(), name=p.name) for p in offered])

    env = {**os.environ, "MCP_RETRIEVAL_CACHE_DIR": str(tmp_path / "cache"), "MCP_RETRIEVAL_EMBEDDER": "none",
           "HOME": str(home)}
    params = StdioServerParameters(command=sys.executable, env=env, cwd=str(elsewhere),
                                   args=["-m", "mcp_retrieval", "serve", "--no-watch"])

    async def go():
        async with Client(params, list_roots_callback=list_roots, mode="legacy") as client:
            r = await client.call_tool("reindex", {})
            assert [x["name"] for x in r.structured_content["index"].get("roots") or []] in ([], [workspace.name])
            r = await client.call_tool("packet", {"query": "apply_discount"})
            assert r.structured_content["items"][0]["root"] == workspace.name
            offered.append(lib)
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                await client.send_roots_list_changed()
            r = await client.call_tool("reindex", {"roots": ["client-lib"]})
            r = await client.call_tool("packet", {"query": "send_with_backoff RetryingClient"})
            top = r.structured_content["items"][0]
            assert (top["root"], top["path"]) == ("client-lib", "client/http_client.py")

    anyio.run(go)


def test_the_off_by_default_mechanisms_are_switched_on_in_the_settings(workspace, tmp_path, monkeypatch):
    monkeypatch.setenv("MCP_RETRIEVAL_CACHE_DIR", str(tmp_path / "cache"))
    config = tmp_path / ".mcp-retrieval.toml"
    config.write_text(f'roots = ["shop={workspace}"]\n[settings]\nsignatures = true\ncoactivation = true\n')  # retired: read, ignored
    ws = open_workspace(read_config(config), embedder=HashEmbedder(), persist_sessions=False)
    try:
        ws.reindex()
        engine = ws.engines["shop"]
        assert engine.config.signatures and not hasattr(engine.config, "coactivation")
        r = ws.context("Cart total checkout", max_chunks=1)
        assert r.signatures and "<mcp-retrieval:signatures " in r.window
    finally:
        ws.close()
    config.write_text(f'roots = ["shop={workspace}"]\n[settings]\nsignatures = "yes"\n')
    with pytest.raises(ValueError, match="signatures"):
        read_config(config)


def test_a_window_may_hold_more_chunks_when_its_budget_is_wide_unless_the_caller_named_a_number():
    from mcp_retrieval import workspace

    assert workspace.chunk_cap(1000, None) == 20  # a narrow window: the default
    assert workspace.chunk_cap(6000, None) == 40  # one per 150 tokens
    assert workspace.chunk_cap(64000, None) == 64  # never past the argument's own limit
    assert workspace.chunk_cap(6000, 12) == 12  # the caller's lower number is kept
    assert workspace.chunk_cap(1000, 30) == 20  # ... a higher one meets the same cap
    with applied(Rules(tokens_per_chunk=None)):
        assert workspace.chunk_cap(6000, None) == 20


def test_a_wide_window_of_short_definitions_is_not_stopped_at_twenty(tmp_path, monkeypatch):
    from mcp_retrieval import Config, Engine

    root = tmp_path / "repo"
    root.mkdir()
    for f in range(6):  # 60 short functions that all match the question
        (root / f"rates_{f}.py").write_text("\n\n".join(
            f"def discount_rate_{f}_{n}(order):\n    return order.total * {n} / 100 - discount_floor({n})\n"
            for n in range(10)))
    engine = Engine(Config.resolve(root, tmp_path / "idx", persist_sessions=False, embedder="hash"))
    engine.reindex()
    try:
        def full_chunks(**kwargs):
            r = Workspace.single(engine).context("discount rate of an order", budget_tokens=12000, **kwargs)
            assert r.know is not None
            return len(r.chunks)

        assert full_chunks() > 20
        assert full_chunks(max_chunks=20) <= 20
        monkeypatch.setattr(engine.config, "rules", Rules(tokens_per_chunk=None))
        assert full_chunks() <= 20
    finally:
        engine.close()


def test_the_window_shows_its_files_in_the_file_rankers_order(engine, monkeypatch):
    # each file's learned share (its chunks' `file` factor, 1 for the best file) decides where the
    # file stands in the window, as it decides `packet`'s order; a file's strongest chunk no longer
    # does (here the guide's best chunk outscores two code files the ranker puts before it)
    def shares_in_window_order(**rules):
        monkeypatch.setattr(engine.config, "rules", Rules(**rules))
        r = Workspace.single(engine).context("how is the discount applied to an order total", debug=True)
        files: dict[str, float] = {}
        for c in r.chunks:
            files.setdefault(c.path, c.terms.get("file", 1.0))
        return list(files.values())

    shares = shares_in_window_order()
    assert len(shares) > 3 and shares == sorted(shares, reverse=True)
    assert shares_in_window_order(window_files_by_ranker=False) != sorted(shares, reverse=True)


def test_with_several_roots_the_index_variable_holds_each_roots_own_index(workspace, tmp_path, monkeypatch):
    """Both roots' indexes in the one folder the variable names answered from each other's files."""
    monkeypatch.setenv("MCP_RETRIEVAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("MCP_RETRIEVAL_INDEX_DIR", str(tmp_path / "indexes"))
    lib = make_client_lib(tmp_path / "client-lib")
    ws = open_workspace(resolve_workspace([f"shop={workspace}", str(lib)], cwd=tmp_path),
                        embedder=HashEmbedder(), persist_sessions=False)
    try:
        folders = {name: e.config.index_dir for name, e in ws.engines.items()}
        assert len(set(folders.values())) == 2 and all(f.parent == tmp_path / "indexes" for f in folders.values())
        ws.reindex()
        top = ws.packet("send_with_backoff RetryingClient").items[0]
        assert (top.root, top.path) == ("client-lib", "client/http_client.py")
    finally:
        ws.close()


def test_a_root_that_cannot_be_served_is_named_and_the_others_are_served(workspace, tmp_path, monkeypatch):
    """A teammate without `../client-lib` cloned, and a root whose index folder cannot be made:
    each is left out with its reason, not the whole workspace refused."""
    monkeypatch.setenv("MCP_RETRIEVAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("MCP_RETRIEVAL_INDEX_DIR", str(tmp_path / "indexes"))
    lib = make_client_lib(tmp_path / "client-lib")
    blocked = make_client_lib(tmp_path / "blocked")
    (tmp_path / "indexes").mkdir()
    default_index_dir(blocked.resolve(), (tmp_path / "indexes").resolve()).write_text("")  # a file in the way
    config = tmp_path / ".mcp-retrieval.toml"
    config.write_text(f'roots = ["shop={workspace}", "{blocked}", "client=../not-cloned"]\n')
    spec = read_config(config)
    assert list(spec.unavailable) == ["client"]
    ws = open_workspace(spec, embedder=HashEmbedder(), persist_sessions=False)
    try:
        assert list(ws.engines) == ["shop"]
        ws.reindex()
        assert ws.packet("apply_discount").items[0].path == "src/shop/pricing.py"
        unavailable = ws.status().unavailable
        assert len(unavailable) == 2 and "not a directory" in unavailable[0] and "cannot open the index" in unavailable[1]
        with pytest.raises(BadRequest, match="root 'blocked' is not served: cannot open the index"):
            ws.packet("send_with_backoff", roots=["blocked"])
        with pytest.raises(BadRequest, match="root 'client' is not served: root .*not-cloned is not a directory"):
            ws.context("send_with_backoff", roots=["client"])
        config.write_text(f'roots = ["shop={workspace}", "{lib}", "client=../not-cloned"]\n')
        ws.reindex()  # the configuration read again: the new root served, the reasons current
        assert set(ws.engines) == {"shop", "client-lib"} and len(ws.status().unavailable) == 1
    finally:
        ws.close()
    config.write_text('roots = ["../not-cloned", "../nor-this"]\n')
    with pytest.raises(ValueError, match="no root it lists is a folder here"):
        read_config(config)
    config.write_text(f'roots = ["{blocked}"]\n')  # a workspace of one root is refused with the reason
    monkeypatch.setenv("MCP_RETRIEVAL_INDEX_DIR", str(default_index_dir(blocked.resolve(), (tmp_path / "indexes").resolve())))
    with pytest.raises(CannotOpen, match="cannot open the index of blocked"):
        open_workspace(read_config(config), embedder=HashEmbedder(), persist_sessions=False)


def test_the_home_folder_or_the_file_systems_root_is_refused_unless_a_configuration_lists_it(tmp_path, monkeypatch):
    """`--root .` from a host that starts servers in the home folder or in `/` indexed all of it."""
    import subprocess
    from pathlib import Path

    home = tmp_path / "home"
    (home / "project").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    for flags, cwd in (([str(home)], tmp_path), (["."], home), (["/"], tmp_path), (None, Path("/")), (None, home)):
        with pytest.raises(ValueError, match="is your home folder|is the file system's root"):
            resolve_workspace(flags, cwd=cwd)
    assert resolve_workspace(None, cwd=home / "project").roots[0].path == (home / "project").resolve()
    subprocess.run(["git", "init", "-q", str(home)], check=True)  # dotfiles kept in git: the project is inside its tree
    with pytest.raises(ValueError, match="is your home folder"):
        resolve_workspace(None, cwd=home / "project")
    (home / ".mcp-retrieval.toml").write_text("roots = []\n")  # said in so many words
    assert resolve_workspace(None, cwd=home / "project").roots[0].path == home.resolve()
