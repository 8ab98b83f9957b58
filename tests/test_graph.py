import pytest

from mcp_retrieval import BadRequest


def ids(result):
    return {n.id for n in result.nodes}


def test_callers_of_a_method_called_through_self_are_found(engine, workspace):
    r = engine.query_graph("Cart.subtotal", relation="callers")
    assert "src/shop/cart.py::Cart.total" in ids(r)


def test_callees_follow_imports_to_their_definitions(engine):
    r = engine.query_graph("Cart.total", relation="callees")
    assert {"src/shop/pricing.py::apply_discount", "src/shop/pricing.py::with_tax",
            "src/shop/cart.py::Cart.subtotal"} <= ids(r)


def test_a_files_imports_and_importers_are_found(engine):
    imports = engine.query_graph("src/shop/cart.py", relation="imports")
    assert "src/shop/pricing.py::apply_discount" in ids(imports) or "src/shop/pricing.py" in ids(imports)
    importers = engine.query_graph("src/shop/cart.py", relation="imported_by")
    assert "src/shop/__init__.py" in ids(importers)


def test_an_import_path_above_the_root_links_nothing(engine, workspace):
    """`../../util` from `web/app.js` leaves the workspace: it is not the root's `util.js`
    (its dots once read as a Python relative import)."""
    (workspace / "web").mkdir(exist_ok=True)
    (workspace / "web" / "app.js").write_text("import { helper } from '../../util';\nimport { x } from './local';\n")
    (workspace / "web" / "local.js").write_text("export const x = 1;\n")
    (workspace / "util.js").write_text("export function helper() { return 1; }\n")
    engine.reindex()
    assert ids(engine.query_graph("web/app.js", relation="imports")) == {"web/app.js", "web/local.js"}


def test_defines_lists_a_files_definitions(engine):
    r = engine.query_graph("src/shop/pricing.py", relation="defines")
    assert {"src/shop/pricing.py::apply_discount", "src/shop/pricing.py::with_tax"} <= ids(r)


def test_other_languages_have_definitions_and_calls(engine):
    r = engine.query_graph("handleCheckout", relation="callees")
    assert "server/main.go::chargeCard" in ids(r)
    assert engine.query_graph("CartView.renderTotal", relation="callees").nodes


def test_an_unknown_node_is_a_not_found_miss_with_suggestions(engine):
    r = engine.query_graph("apply_discont")
    assert r.miss.reason == "not_found" and "apply_discount" in r.miss.suggestions
    assert engine.query_graph("../../etc/passwd").miss.reason == "not_found"


def test_out_of_range_arguments_are_clear_errors(engine):
    for kwargs in [{"depth": 0}, {"depth": 4}, {"relation": "friends"}, {"limit": 0}, {"kind": "planet"}]:
        with pytest.raises(BadRequest):
            engine.query_graph("Cart", **kwargs)


def test_traversal_is_bounded_and_says_when_truncated(engine):
    r = engine.query_graph("src/shop/cart.py", relation="neighbors", depth=3, limit=1)
    assert len(r.nodes) <= 2 and r.truncated is True


def _reference_pagerank(graph, seeds, hops):
    """The walk as first written (dicts and loops): what the vectorised one must reproduce."""
    from mcp_retrieval.graph_fusion import ALPHA, EDGE_WEIGHTS, ITERATIONS, MAX_NEIGHBOURHOOD

    frontier, seen = set(seeds), set(seeds)
    for _ in range(hops):
        nxt = {t for n in frontier for t, _ in graph.out.get(n, ())}
        nxt |= {s for n in frontier for s, _ in graph.inc.get(n, ())}
        nxt -= seen
        seen |= nxt
        frontier = nxt
        if len(seen) > MAX_NEIGHBOURHOOD:
            break
    total = sum(seeds.values())
    restart = {n: seeds.get(n, 0.0) / total for n in seen}
    rank = dict(restart)
    for _ in range(ITERATIONS):
        moved = dict.fromkeys(seen, 0.0)
        for n in seen:
            out_edges, in_edges = graph.out.get(n, ()), graph.inc.get(n, ())
            steps = [(t, EDGE_WEIGHTS.get(typ, 0.3)) for t, typ in out_edges if t in seen]
            steps += [(s, EDGE_WEIGHTS.get(typ, 0.3) * 0.7) for s, typ in in_edges if s in seen]
            weight = sum(w for _, w in steps)
            damp = 1.0 / (1.0 + max(0, len(out_edges) + len(in_edges) - 20) / 20)
            for to, w in steps:
                moved[to] += rank[n] * damp * w / weight
        rank = {n: ALPHA * restart[n] + (1 - ALPHA) * moved[n] for n in seen}
    return {n: r for n, r in rank.items() if r}


def test_the_vectorised_pagerank_walks_as_the_plain_one(engine):
    import pytest

    from mcp_retrieval.graph_fusion import personalized_pagerank

    graph = engine.graph(wait=True)
    linked = [i for i in range(len(graph.nodes)) if graph.out.get(i) or graph.inc.get(i)]
    assert len(linked) > 10
    for seeds, hops in (({linked[0]: 1.0}, 1), ({linked[1]: 1.0, linked[5]: 0.5, linked[-1]: 0.25}, 2),
                        (dict.fromkeys(linked[::3], 1.0), 3)):
        fast, plain = personalized_pagerank(graph, seeds, hops), _reference_pagerank(graph, seeds, hops)
        assert fast.keys() == plain.keys()
        assert all(fast[n] == pytest.approx(plain[n], rel=1e-9, abs=1e-15) for n in plain)


def test_a_member_a_class_inherits_is_found_at_the_base_that_defines_it(engine, workspace):
    (workspace / "src" / "shop" / "mixins.py").write_text(
        "class Arithmetic:\n    def multiply(self, other):\n        return self.value * other\n\n\n"
        "class Printable(Arithmetic):\n    def show(self):\n        return str(self.value)\n")
    (workspace / "src" / "shop" / "money.py").write_text(
        "from shop.mixins import Printable\n\n\nclass Money(Printable):\n    def __init__(self, value):\n"
        "        self.value = value\n")
    engine.reindex()
    r = engine.query_graph("Money.multiply", relation="callers")
    assert r.miss is None and r.nodes[0].id == "src/shop/mixins.py::Arithmetic.multiply"
    assert engine.query_graph("Money.divide").miss.reason == "not_found"  # no base defines it


def test_a_call_into_a_library_the_file_imports_is_no_call_of_a_workspace_namesake(engine, workspace):
    """`re.match(...)` and `join(...)` after `from os.path import join` call the library, not the
    workspace's `Router.match` or `join` that share their names (name-only resolution linked them)."""
    (workspace / "src" / "shop" / "routes.py").write_text(
        "class Router:\n    def match(self, path):\n        return path\n\n    def dispatch(self, path):\n"
        "        return self.match(path)\n\n\ndef join(*parts):\n    return '/'.join(parts)\n")
    (workspace / "src" / "shop" / "parse.py").write_text(
        "import re\nfrom os.path import join\nfrom shop.routes import Router\n\n\n"
        "def header(value):\n    return re.match(r'\\w+', value)\n\n\ndef where(base):\n    return join(base, 'x')\n\n\n"
        "def route(path):\n    return Router().match(path)\n")
    engine.reindex()
    callers = ids(engine.query_graph("Router.match", relation="callers"))
    assert "src/shop/routes.py::Router.dispatch" in callers and "src/shop/parse.py::route" in callers
    assert "src/shop/parse.py::header" not in callers
    assert "src/shop/parse.py::where" not in ids(engine.query_graph("src/shop/routes.py::join", relation="callers"))


def test_a_javascript_call_into_an_imported_package_is_no_call_of_a_workspace_namesake(engine, workspace):
    """`Readable.from(...)` after `import {Readable} from 'stream'`, `v.object(...)` after `import *
    as v from 'valibot'` call the package; a monorepo's own package (`@shop/core`, its `core`
    folder) and a relative import still link by name (axios lost 11 such edges, zod 29: all library calls)."""
    (workspace / "core").mkdir()
    (workspace / "core" / "schemas.ts").write_text(
        "export function object(shape) { return shape; }\nexport class Headers { static from(x) { return x; } }\n")
    (workspace / "web" / "stream.ts").write_text(
        "import { Readable } from 'stream';\nimport * as v from 'valibot';\nimport { Headers } from './headers';\n\n"
        "export function pipe(x) { return Readable.from(x); }\nexport function schema() { return v.object({}); }\n"
        "export function headers(x) { return Headers.from(x); }\n")
    (workspace / "web" / "own.ts").write_text(
        "import { object } from '@shop/core';\n\nexport function own() { return object({}); }\n")
    engine.reindex()
    object_callers = ids(engine.query_graph("core/schemas.ts::object", relation="callers"))
    assert "web/stream.ts::schema" not in object_callers and "web/own.ts::own" in object_callers
    from_callers = ids(engine.query_graph("core/schemas.ts::Headers.from", relation="callers"))
    assert "web/stream.ts::pipe" not in from_callers and "web/stream.ts::headers" in from_callers


def test_commonjs_requires_are_imports(engine, workspace):
    """`require('./application')` links a CommonJS file to the file it loads, as an ES import does
    (express's `lib/express.js` had no imports); a package (`router`) is no file whose name ends in
    it (`app.router.js`); a required package's calls are the package's; `require` is no call."""
    (workspace / "node").mkdir()
    (workspace / "node" / "application.js").write_text("exports.init = function init() { return 1; };\n"
                                                         "function json(x) { return x; }\nexports.json = json;\n")
    (workspace / "node" / "index.js").write_text(
        "var app = require('./application');\nvar bodyParser = require('body-parser');\nvar Router = require('router');\n"
        "const { join } = require('node:path');\n\n"
        "function create() { app.init(); return bodyParser.json(); }\nmodule.exports = create;\n")
    (workspace / "node" / "app.router.js").write_text("exports.route = function route() {};\n")  # not the package
    engine.reindex()
    assert ids(engine.query_graph("node/index.js", relation="imports")) == {"node/index.js", "node/application.js"}
    assert "node/index.js" in ids(engine.query_graph("node/application.js", relation="imported_by"))
    callees = ids(engine.query_graph("node/index.js::create", relation="callees"))
    assert "node/application.js::json" not in callees  # `bodyParser.json()` is the package's
    assert not any(i.endswith("require") for i in ids(engine.query_graph("node/index.js", relation="neighbors")))


def test_a_go_call_into_the_standard_library_is_no_call_of_a_workspace_namesake(engine, workspace):
    (workspace / "mw").mkdir()
    (workspace / "mw" / "chain.go").write_text(
        "package mw\n\ntype Middlewares []func()\n\nfunc (m Middlewares) HandlerFunc(h func()) func() {\n    return h\n}\n")
    (workspace / "mw" / "recover.go").write_text(
        'package mw\n\nimport (\n    "net/http"\n    "example.com/app/mw/util"\n)\n\n'
        "func Recoverer(next http.Handler) http.Handler {\n    return http.HandlerFunc(func() {})\n}\n\n"
        "func Chained(m Middlewares) {\n    m.HandlerFunc(nil)\n    util.HandlerFunc(nil)\n}\n")
    engine.reindex()
    callers = ids(engine.query_graph("Middlewares.HandlerFunc", relation="callers"))
    assert "mw/recover.go::Recoverer" not in callers  # `http` is the standard library's
    assert "mw/recover.go::Chained" in callers  # a module path's package may still be the workspace's


def same_graph(a, b) -> bool:
    """The same nodes, edges (with their types) and unresolved imports."""
    import numpy as np

    ea, eb = a.edges(), b.edges()
    return ([n.id for n in a.nodes] == [n.id for n in b.nodes] and a.external == b.external and ea.types == eb.types
            and all(np.array_equal(x, y) for x, y in [(ea.source, eb.source), (ea.target, eb.target), (ea.code, eb.code)]))


def test_a_save_updates_the_graph_it_changes_without_building_it_again(engine, workspace, monkeypatch):
    """Building the graph costs seconds on a large repository, and most saves change a body: the
    graph takes the new lines; a save that adds a call or an import resolves that file's references
    again; either way it is the graph a build gives. A new definition builds it again."""
    from mcp_retrieval.indexers.graph import CodeGraph

    pricing = workspace / "src" / "shop" / "pricing.py"
    graph = engine.graph(wait=True)
    builds = []
    load = CodeGraph.load.__func__
    monkeypatch.setattr(CodeGraph, "load", classmethod(lambda cls, store: builds.append(1) or load(cls, store)))
    node = graph.index["src/shop/pricing.py::apply_discount"]
    start = graph.nodes[node].start_line
    pricing.write_text('"""Prices, discounts and tax."""\n# rounding: see with_tax\n\n' + pricing.read_text().split("\n", 1)[1])
    engine.reindex(["src/shop/pricing.py"])
    assert engine.graph(wait=True) is graph and graph.nodes[node].start_line == start + 2
    assert node in graph.nodes_in("src/shop/pricing.py", start + 2, start + 2)
    called = ids(engine.query_graph("apply_discount", relation="callees"))
    pricing.write_text(pricing.read_text().replace("        return amount / 2", "        return with_tax(amount) / 2")
                       .replace('"""Prices', 'import math\n"""Prices', 1))
    engine.reindex(["src/shop/pricing.py"])  # a new call and import: the same definitions, other references
    updated = engine.graph(wait=True)
    assert updated is not graph and not builds
    assert ids(engine.query_graph("apply_discount", relation="callees")) - called == {"src/shop/pricing.py::with_tax"}
    assert same_graph(updated, load(CodeGraph, engine.store))
    pricing.write_text(pricing.read_text() + "\n\ndef net_of_tax(amount: float) -> float:\n    return amount / 1.2\n")
    engine.reindex(["src/shop/pricing.py"])  # a new definition
    assert engine.graph(wait=True) is not updated and builds and "src/shop/pricing.py::net_of_tax" in engine.graph().index
