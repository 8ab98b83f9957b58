"""A leading Go or Rust file brings the other files of its package into `packet`'s pool: a fix
often spans a package whose other files the question's words do not reach."""

from mcp_retrieval import Config, Engine
from mcp_retrieval.module_neighbours import with_module_neighbours
from mcp_retrieval.stages import StageLog
from mcp_retrieval.workspace import Workspace

GO = {
    "mux/router.go": "package mux\n\n// Register adds routes to the router for a method and a path.\n"
                        "func (r *Router) Register(method, path string, h Handler) {\n\tr.routes = append(r.routes, route{method, path, h})\n}\n",
    "mux/tree.go": "package mux\n\n// insert puts a path into the radix tree.\nfunc (n *node) insert(path string) {\n"
                      "\tfor _, c := range n.children {\n\t\t_ = c\n\t}\n}\n",
    "mux/colors.go": "package mux\n\nfunc paint(shade string) string {\n\treturn shade\n}\n",
    "mux/router_test.go": "package mux\n\nfunc TestRegister(t *testing.T) { insert(path) }\n",
    "api/routes.go": "package api\n\n// Register the routes of the API with the router: routes add routes.\nfunc Register(r *Router) {\n"
                     "\tr.Register(routes)\n}\n",
    "api/handlers.go": "package api\n\n// handlers the router calls for routes that add items\nfunc add(r *Router) {}\n",
}


def test_a_leading_go_files_package_joins_a_crowded_pool_with_its_files_that_match_at_all(tmp_path):
    root = tmp_path / "ws"
    for rel, text in GO.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    config = Config.resolve(root, tmp_path / "index", persist_sessions=False, embedder="none")
    config.cache_dir, config.pool_size = tmp_path / "cache", 3  # the question's words fill the pool elsewhere
    engine = Engine(config)
    engine.reindex()
    try:
        question = "how does Register add routes to the router path"
        found = {c.chunk.path: c for c in engine.gather(question, [], [], None, StageLog(), for_packet=True).candidates}
        assert found["mux/tree.go"].ranks == {"module": 1}  # crowded out, brought by its package
        assert "mux/colors.go" not in found  # no word of the question: stays out
        assert "mux/router_test.go" not in found  # tests are no part of the package's code
        assert "mux/tree.go" in [i.path for i in Workspace.single(engine).packet(question, max_items=10).items]
    finally:
        engine.close()


def test_only_go_and_rust_files_among_the_first_files_bring_their_packages():
    from mcp_retrieval.indexers.store import StoredChunk
    from mcp_retrieval.retrieve import Candidate

    def cand(path, score):
        return Candidate(chunk=StoredChunk(path, path, 1, 2, None, "block", "x", "", "x", "0" * 64, 1, True), score=score)

    listing = {"src/routing": ["src/routing/mod.rs", "src/routing/future.rs"], "src": ["src/lib.rs", "src/error.rs"],
               "app": ["app/main.py", "app/util.py"]}
    asked = []

    def best(paths):
        asked.extend(paths)
        return [(cand(p, 0).chunk, 1.0) for p in paths]

    out = with_module_neighbours([cand("src/routing/mod.rs", 1.0)], lambda f: listing.get(f, []), best)
    assert [c.chunk.path for c in out] == ["src/routing/mod.rs", "src/routing/future.rs", "src/lib.rs", "src/error.rs"]
    assert all(c.ranks == {"module": i} and c.score == 0 for i, c in enumerate(out[1:], 1))  # no lexical scale
    lead = cand("src/routing/mod.rs", 0.9)
    lead.raw = {"lexical": 2.0}
    other = cand("src/other.rs", 0.3)
    other.raw = {"lexical": 0.5}
    out = with_module_neighbours([lead, other], lambda f: listing.get(f, []), best)
    assert {c.chunk.path: c.score for c in out if "module" in c.ranks}["src/routing/future.rs"] == 0.3  # BM25 1.0: nearest 0.5
    asked.clear()
    assert len(with_module_neighbours([cand("app/main.py", 1.0)], lambda f: listing.get(f, []), best)) == 1
    assert not asked  # Python: a folder is no package of one unit
