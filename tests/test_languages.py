"""Language-aware structure beyond Python: test conventions per ecosystem, noise files, anchors
in each language's naming, and file-level ranking with C/C++ header/source pairs."""

from __future__ import annotations

import pytest

from mcp_retrieval.indexers.languages import is_test_chunk, is_test_path
from mcp_retrieval.indexers.store import StoredChunk
from mcp_retrieval.extract import extract
from mcp_retrieval.file_rank import rank_files, with_file_evidence, with_learned_files
from tests.import_reading import Imports
from mcp_retrieval.retrieve import Candidate


def structural_factor(c, s, w):
    """The rerank stage's structural factors as `scoring` multiplies them (on a base of 1), and
    their reasons."""
    from mcp_retrieval import scoring
    from mcp_retrieval.rerank import structural_factors

    factors, why = structural_factors(c, s, w)
    return scoring.set_base(c, 1.0, factors), why


def test_each_ecosystems_test_conventions_are_recognised():
    tests = ["crates/searcher/src/testutil.rs", "pkg/server_test.go", "src/test/java/com/x/FooTest.java", "src/main/java/com/x/FooIT.java",
             "web/__tests__/app.js", "web/app.test.ts", "web/app.spec.js", "tests/cli.rs", "projects/Misc.tests.cpp",
             "internal/testdata/proto/x.pb.go", "test_thing.py", "spec/models/user_spec.rb",
             "rayon-core/src/join/test.rs", "crates/nu-plugin/src/plugin/interface/tests.rs"]  # Rust's `mod tests;`
    # a module named `test` elsewhere is often code: werkzeug's test client, terraform's `test` command,
    # Jinja's template tests (`tests.py`), an SDK's `test` object
    code = ["pkg/server.go", "src/main/java/com/x/Foo.java", "src/attest.rs", "web/contest.js", "src/Testing.java",
            "lib/latest.py", "src/werkzeug/test.py", "internal/command/test.go", "src/jinja2/tests.py",
            "packages/insomnia-sdk/src/objects/test.ts", "src/testing.rs"]
    assert all(is_test_path(p) for p in tests), [p for p in tests if not is_test_path(p)]
    assert not any(is_test_path(p) for p in code), [p for p in code if is_test_path(p)]


def test_a_python_packages_own_test_package_is_code_its_tests_still_tests():
    from mcp_retrieval.rules import Rules, applied

    library = ["django/test/runner.py", "django/test/__init__.py", "sympy/testing/runtests.py",
               "lib/matplotlib/testing/decorators.py", "numpy/testing/_private/utils.py",
               "xarray/testing/assertions.py", "sphinx/testing/fixtures.py"]
    tests = ["sympy/testing/tests/test_pytest.py", "pkg/testing/conftest.py", "pkg/test/test_util.py",
             "testing/python/collect.py",  # a project's own suite at the top (pytest's `testing/`)
             "test/helpers.py", "src/test/python/foo.py", "Lib/test/support/__init__.py",
             "tests/pkg/test/x.py", "crates/ruff/resources/test/fixtures/source.py",
             "pkg/test/helper.js"]  # Python only
    assert not any(is_test_path(p) for p in library), [p for p in library if is_test_path(p)]
    assert all(is_test_path(p) for p in tests), [p for p in tests if not is_test_path(p)]
    with applied(Rules(library_test_packages=False)):
        assert all(is_test_path(p) for p in library)


def test_a_rust_test_module_is_demoted_not_the_file_around_it():
    assert is_test_chunk("src/lib.rs", "tests.it_adds", "rust")
    assert is_test_chunk("src/lib.rs", "tests", "rust")
    assert not is_test_chunk("src/lib.rs", "Parser.tests_passed", "rust")
    assert not is_test_chunk("src/lib.rs", "add", "rust")


def test_scoped_names_macros_and_stack_frames_become_anchors():
    a = extract("calling Router::route_service and ctx->buf fails in format!(x) at com.google.gson.Gson.toJson(Gson.java:12)")
    assert {"Router.route_service", "ctx.buf", "com.google.gson.Gson.toJson"} <= set(a.dotted)
    assert "Gson.java" in a.paths and "Gson.java" not in a.dotted
    assert {"route_service", "format", "toJson"} <= set(a.identifiers)


def candidate(path: str, score: float, text: str | None = None, start: int = 1) -> Candidate:
    text = text or f"int fn_{abs(hash((path, start)))}(void) {{ return {start}; }}"
    chunk = StoredChunk(f"{path}:{start}", path, start, start + 5, None, "function", "c", path, text,
                        f"{abs(hash((path, start))):064d}"[:64], 10, True)
    return Candidate(chunk=chunk, score=score)


def test_several_hits_raise_a_file_but_many_weak_ones_do_not_beat_one_strong_match():
    pool = [candidate("a.c", 1.0), candidate("b.c", 0.9), candidate("b.c", 0.8, start=20),
            *[candidate("long.c", 0.3, start=i * 10) for i in range(20)]]
    order = list(dict.fromkeys(c.chunk.path for c in rank_files(pool, per_file=2)))
    assert order == ["b.c", "a.c", "long.c"]


def test_a_files_further_chunks_wait_behind_the_files_scoring_near_it():
    pool = [candidate("a.c", 1.0), candidate("a.c", 0.95, start=20), candidate("a.c", 0.9, start=40),
            candidate("b.c", 0.8), candidate("b.c", 0.7, start=20), candidate("c.c", 0.75)]
    ranked = rank_files(pool, per_file=3)
    assert [c.chunk.path for c in ranked[:4]] == ["a.c", "b.c", "c.c", "a.c"]


def test_a_question_about_one_file_gets_its_chunks_first_up_to_per_file():
    pool = [candidate("big.c", 1.0 - i / 100, start=i * 10) for i in range(10)] + [candidate("small.c", 0.2)]
    ranked = rank_files(pool, per_file=3)
    assert [c.chunk.path for c in ranked[:4]] == ["big.c"] * 3 + ["small.c"]


def test_near_duplicate_chunks_are_shown_once():
    same = "int parse(const char *s) { return atoi(s) + offset * factor; }"
    ranked = rank_files([candidate("a/x.c", 1.0, same), candidate("vendored/x.c", 0.9, same)], per_file=3)
    assert [c.chunk.path for c in ranked] == ["a/x.c"]


def test_import_specs_of_each_language_name_the_files_they_import():
    cases = [  # (importer, spec, file, imports it)
        ("sympy/utilities/lambdify.py", "sympy.printing.pycode:MpmathPrinter=Printer", "sympy/printing/pycode.py", True),
        ("sympy/utilities/lambdify.py", "sympy.printing.pycode:MpmathPrinter", "sympy/printing/numpy.py", False),
        ("sympy/categories/__init__.py", ".baseclasses:Object", "sympy/categories/baseclasses.py", True),
        ("pkg/a/b/x.py", "..c:Y", "pkg/a/c.py", True),
        ("pkg/a/x.py", "pkg.a:b", "pkg/a/__init__.py", True),
        ("pkg/a/x.py", "foo.os", "os.py", False),
        ("src/main/java/com/x/A.java", "com.x.util.Strings", "src/main/java/com/x/util/Strings.java", True),
        ("compat/src/PureComponent.js", "./util", "compat/src/util.js", True),
        ("api/index.js", "../src/cards/stats-card.js", "src/cards/stats-card.js", True),
        ("core/breaker/breaker.go", "github.com/acme/app/core/collection", "core/collection/window.go", True),
        ("core/breaker/breaker.go", "github.com/acme/app/core/collection", "core/stat/x.go", False),
        ("crates/cli/src/wtr.rs", "super::human::Size", "crates/cli/src/human.rs", True),
        ("crates/core/main.rs", "crate::search::SearchWorker", "crates/core/search.rs", True),
        ("crates/core/app/mod.rs", "self::args::X", "crates/core/app/args.rs", True),
        ("lib/compress/zstd_compress.c", "zstd_compress_internal.h", "lib/compress/zstd_compress_internal.h", True),
        ("lib/compress/zstd_compress.c", "common/mem.h", "lib/common/mem.h", True),
        ("lib/compress/zstd_compress.c", "common/mem.h", "lib/common/pool.h", False),
    ]
    for importer, spec, path, expected in cases:
        assert (path in Imports(importer, [spec])) is expected, (importer, spec, path)


def test_stack_frames_of_other_runtimes_become_path_anchors_with_their_functions():
    from mcp_retrieval.retrieve import PathResolver

    q = ("TypeError: Cannot read property '$u' of undefined\n"
         "    at diff (/home/ci/project/node_modules/dayjs/plugin/utc.js:1:1941)\n"
         "\tat com.google.gson.Gson.toJson(Gson.java:123)\n"
         "main.main()\n\t/home/u/go/src/github.com/x/y/server.go:42 +0x1d\n"
         "thread 'main' panicked at src/printer.rs:10:5")
    frames = extract(q).frames
    assert ("Gson.java", 123, "toJson") in frames and ("src/printer.rs", 10, None) in frames
    resolver = PathResolver(["src/plugin/utc/index.js", "src/index.js", "gson/src/main/java/com/google/gson/Gson.java",
                             "src/printer.rs", "cmd/server.go"])
    resolved = {f[0]: resolver.resolve_path(f[0]) for f in frames}
    assert resolved["/home/ci/project/node_modules/dayjs/plugin/utc.js"] == ["src/plugin/utc/index.js"]
    assert resolved["Gson.java"] == ["gson/src/main/java/com/google/gson/Gson.java"]


def test_a_go_panic_pasted_with_crlf_line_ends_gives_its_frames_deepest_first_with_functions():
    # GitHub issue bodies arrive with CRLF: `$` did not match before the `\r`, and the frames were lost
    q = ("panic: runtime error: slice bounds out of range [:1] with capacity 0\r\n\r\n"
         "goroutine 1 [running]:\r\n"
         "github.com/gin-gonic/gin.(*node).getValue(0xc000327a40, 0x9, ...)\r\n"
         "      /go/pkg/mod/github.com/gin-gonic/gin@v1.7.1/tree.go:446 +0x1105\r\n"
         "github.com/gin-gonic/gin.(*Engine).handleHTTPRequest(0xc00037e4e0)\r\n"
         "       /go/pkg/mod/github.com/gin-gonic/gin@v1.7.1/gin.go:482 +0x2f9\r\n"
         "main.main()\r\n       cmd/scratch/main.go:22 +0x27d\r\n")
    frames = extract(q).frames
    assert [(f[0].rsplit("/", 1)[-1], f[2]) for f in frames] == [
        ("tree.go", "getValue"), ("gin.go", "handleHTTPRequest"), ("main.go", "main")]
    # Python prints the most recent call last: its frames are turned round to the same order
    py = 'Traceback (most recent call last):\r\n  File "app.py", line 3, in main\r\n  File "lib/core.py", line 9, in run\r\n'
    assert [f[0] for f in extract(py).frames] == ["lib/core.py", "app.py"]
    assert "slice bounds out of range" in extract(q).messages


def test_context_pool_gains_file_evidence_without_reordering_a_file():
    lone = candidate("a.c", 1.0)
    busy = [candidate("b.c", 0.9), candidate("b.c", 0.8, start=20), candidate("b.c", 0.7, start=40)]
    ranked = with_file_evidence([lone, *busy])
    # each b.c chunk gains 0.25*0.8 + 0.1*0.7 = 0.27: 1.17, 1.07, 0.97 around the lone 1.0
    assert [c.chunk.path for c in ranked] == ["b.c", "b.c", "a.c", "b.c"]
    assert [c.chunk.start_line for c in ranked if c.chunk.path == "b.c"] == [1, 20, 40]
    assert ranked[0].score == pytest.approx(1.17) and "other matches in the same file" in ranked[0].why
    assert lone.score == 1.0 and not lone.why  # a file with one hit gains nothing
    weak = [candidate("c.c", 0.7), candidate("c.c", 0.69, start=20), candidate("c.c", 0.68, start=40)]
    assert with_file_evidence([candidate("a.c", 1.0), *weak])[0].chunk.path == "a.c"  # many weak hits stay below


def test_context_pool_weighed_by_the_learned_file_shares_keeps_each_files_order():
    from mcp_retrieval import scoring

    pool = [candidate("a.c", 1.0), candidate("b.c", 0.9), candidate("b.c", 0.5, start=20)]
    for c in pool:
        scoring.set_base(c, c.score)
    ranked = with_learned_files(pool, {("", "a.c"): 0.5, ("", "b.c"): 1.0})
    assert [(c.chunk.path, c.chunk.start_line) for c in ranked] == [("b.c", 1), ("a.c", 1), ("b.c", 20)]
    assert [c.score for c in ranked] == pytest.approx([0.9, 0.5, 0.5])
    assert ranked[1].factors == {"file": 0.5}  # named, for `debug`'s terms


def test_a_lone_word_before_a_dot_names_a_python_module_only():
    """`gin.Default` in a Go question is package `gin`'s function, not the file `gin.go`;
    `logging.getLogger` is not `doc/logging.rst`. Several words (`pkg.mod.f`) still name any file."""
    from mcp_retrieval.retrieve import PathResolver

    resolver = PathResolver(["gin.go", "context.go", "doc/en/logging.rst", "src/app/logging.py",
                             "src/pkg/utils.py", "web/router.js", "lib/shop/cart.go"])
    assert resolver.resolve_module("gin.Default") == []
    assert resolver.resolve_module("router.get") == []
    assert resolver.resolve_module("logging.getLogger") == ["src/app/logging.py"]
    assert resolver.resolve_module("utils.helper") == ["src/pkg/utils.py"]
    assert resolver.resolve_module("shop.cart.Total") == ["lib/shop/cart.go"]


def test_a_written_path_names_at_most_three_files_and_never_by_a_generic_name_alone():
    """`globset-0.4.8/src/lib.rs` from a distribution's registry is none of a workspace's crates;
    a bare `index.js` or `main.rs` is any folder's. A distinctive name alone still resolves."""
    from mcp_retrieval.retrieve import PathResolver

    resolver = PathResolver(["crates/cli/src/lib.rs", "crates/globset/src/lib.rs", "crates/grep/src/lib.rs",
                             "crates/core/src/lib.rs", "demo/people/index.tsx", "examples/a/main.rs",
                             "src/JsonTreeReader.java", "src/plugin/utc/index.js"])
    assert resolver.resolve_path("/usr/share/cargo/registry/globset-0.4.8/src/lib.rs") == []
    assert resolver.resolve_path("index.js") == [] and resolver.resolve_path("src/main.rs") == []
    assert resolver.resolve_path("esm/2.0/es2022/react.mjs") == []
    assert resolver.resolve_path("JsonTreeReader.java") == ["src/JsonTreeReader.java"]
    assert resolver.resolve_path("crates/globset/src/lib.rs") == ["crates/globset/src/lib.rs"]
    assert resolver.resolve_path("node_modules/dayjs/plugin/utc.js") == ["src/plugin/utc/index.js"]


def test_test_code_ranks_after_code_unless_the_question_is_about_tests():
    from mcp_retrieval.rerank import RerankWeights, signals_for

    test = candidate("test/src/unit-udt.cpp", 1.0, "TEST_CASE(\"pair\") { auto p = j.get<std::pair<int, int>>(); }\n")
    code = candidate("src/json.hpp", 1.0, "void from_json(const BasicJsonType& j, std::pair<Args...>& p)\n")
    w = RerankWeights()
    report = "broken from_json for pair and tuple: the second element is read from the first one. " * 6
    assert len(report) >= 400
    assert structural_factor(test, signals_for(report, [], "default"), w)[0] < \
        structural_factor(code, signals_for(report, [], "default"), w)[0]
    short = signals_for("which unit tests cover from_json for pairs?", [], "default")
    assert structural_factor(test, short, w)[0] == structural_factor(code, short, w)[0]


def test_a_files_suffix_and_map_folder_are_read_as_pathlib_reads_them():
    from pathlib import PurePosixPath

    from mcp_retrieval.corpus_map import folder_of
    from mcp_retrieval.indexers.languages import suffix_of

    for path in ("src/a/b.py", ".bashrc", "etc/.bashrc", "name.", "a.tar.gz", "Makefile", "dir.d/file", "README.MD"):
        assert suffix_of(path) == PurePosixPath(path).suffix, path
        parts = PurePosixPath(path).parts[:-1]
        assert folder_of(path) == ("/".join(parts[:2]) + "/" if parts else "./"), path


# A root that holds a facade but not the crate or package defining its items (axum's `axum/src`
# re-exports `FromRequest` from `axum-core`): the re-export is the only place for the name.
FACADE = {
    "extract/mod.rs": """//! Types and traits for extracting data from requests.

pub mod rejection;

pub use axum_core::extract::{DefaultBodyLimit, FromRef, FromRequest, FromRequestParts, Request};

#[doc(inline)]
pub use self::form::Form;
""",
    "form.rs": "".join(f"""
impl<T, S> FromRequest<S> for Form{i}<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{{
    type Rejection = FormRejection;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {{
        let bytes = Bytes::from_request(req, state).await?;  // FromRequest for the body first
        Ok(Form{i}(serde_urlencoded::from_bytes(&bytes)?))
    }}
}}
""" for i in range(4)),
    "routing/mod.rs": "pub struct Router<S = ()> {\n    inner: Arc<RouterInner<S>>,\n}\n",
    "lib.rs": "pub mod extract;\npub mod routing;\n\npub use self::routing::Router;\n",
    "src/index.ts": "export { initTRPC, TRPCError } from '@trpc/core';\nexport * from './adapters';\n",
    "src/adapters.ts": "".join(f"export function handler{i}(e: unknown) {{\n  if (e instanceof TRPCError) throw new TRPCError({{ code: 'BAD_REQUEST' }});\n}}\n" for i in range(4)),
    "markupsafe/__init__.py": "from ._speedups import (\n    escape,\n    soft_str,\n)\n\n__version__ = '3.0'\n",
    "markupsafe/render.py": "".join(f"def render{i}(s):\n    return soft_str(s) + soft_str(s.upper())\n\n" for i in range(4)),
}


@pytest.fixture(scope="module")
def facade(tmp_path_factory):
    from tests.conftest import engine_over

    eng = engine_over(FACADE, tmp_path_factory.mktemp("facade"))
    yield eng
    eng.close()


@pytest.mark.parametrize("question, path", [
    ("FromRequest", "extract/mod.rs"),
    ("how extractors implement FromRequest and FromRequestParts", "extract/mod.rs"),
    ("TRPCError", "src/index.ts"),
    ("soft_str", "markupsafe/__init__.py"),
    ("Router", "routing/mod.rs"),  # defined in the workspace: the definition, not `lib.rs`'s re-export
])
def test_a_name_the_workspace_only_re_exports_is_found_where_it_is_re_exported(facade, question, path):
    from mcp_retrieval.workspace import Workspace

    r = Workspace.single(facade).packet(question)
    assert r.items and r.items[0].path == path, [i.path for i in r.items]


def test_a_rust_module_is_found_by_its_name_at_its_own_file(tmp_path):
    """`mod parser;` in `lib.rs` defines nothing (chunker 14): asked for `parser`, `query_graph`
    answers with the module's own file, `parser.rs` or `parser/mod.rs`, not the line declaring it."""
    from tests.conftest import engine_over
    engine = engine_over({"src/lib.rs": "mod parser;\nmod lexer;\npub use parser::Parser;\n",
                          "src/parser.rs": "pub struct Parser { depth: u32 }\nimpl Parser {\n    pub fn parse(&self) {}\n}\n",
                          "src/lexer/mod.rs": "pub fn lex(text: &str) -> usize { text.len() }\n"}, tmp_path)
    assert [n.path for n in engine.query_graph("parser").nodes][:1] == ["src/parser.rs"]
    assert [n.path for n in engine.query_graph("lexer").nodes][:1] == ["src/lexer/mod.rs"]
    assert engine.query_graph("tokenizer").miss.reason == "not_found"
    assert [n.path for n in engine.query_graph("parser.rs").nodes][:1] == ["src/parser.rs"]  # a file by its name
    assert {n.path for n in engine.query_graph("mod.rs", relation="defines").nodes} == {"src/lexer/mod.rs"}
