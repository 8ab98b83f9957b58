import pytest

from mcp_retrieval.indexers.analysis import split_identifier, terms
from mcp_retrieval.indexers.chunk import MAX_CHARS, MIN_CHARS, chunk_file
from mcp_retrieval.indexers.languages import language_for


def chunks_of(workspace, rel):
    text = (workspace / rel).read_text()
    return text, chunk_file(rel, text, language_for(rel))


def test_python_definitions_become_chunks_with_qualified_symbols(workspace):
    text, chunks = chunks_of(workspace, "src/shop/cart.py")
    symbols = {c.symbol for c in chunks}
    assert "Cart" in symbols or {"Cart.add_item", "Cart.total"} <= symbols
    lines = text.splitlines()
    for c in chunks:  # every chunk is exactly its line range of the file
        assert c.text == "\n".join(lines[c.start_line - 1: c.end_line])
        assert c.header.startswith("src/shop/cart.py")


def test_typescript_go_and_rust_are_chunked_by_definition(workspace):
    _, ts = chunks_of(workspace, "web/app.ts")
    _, go = chunks_of(workspace, "server/main.go")
    _, rs = chunks_of(workspace, "engine/src/lib.rs")
    assert any(c.symbol and c.symbol.startswith("CartView") for c in ts)
    assert {"handleCheckout", "main"} <= {c.symbol for c in go} | {None} or any(c.symbol == "handleCheckout" for c in go)
    assert any(c.symbol == "compute_shipping" for c in rs)


def test_markdown_is_split_at_headings_with_the_heading_trail(workspace):
    _, chunks = chunks_of(workspace, "docs/guide.md")
    assert any(c.symbol == "Shop guide > Discounts" for c in chunks)


def test_a_long_function_is_split_and_every_piece_keeps_its_symbol():
    body = "\n".join(f"    value_{i} = compute({i}) + other_call({i})" for i in range(400))
    text = f"def enormous():\n{body}\n    return 0\n"
    chunks = chunk_file("big.py", text, "python")
    assert len(chunks) > 1
    assert all(c.symbol == "enormous" for c in chunks)
    assert all(len(c.text) <= MAX_CHARS * 2 + 200 for c in chunks)
    assert chunks[0].start_line == 1 and chunks[-1].end_line == len(text.splitlines())


def test_a_split_definition_leaves_no_tiny_last_piece():
    # EqualsBuilder.reflectionAppend's pieces once ended in `return this;` and its brace alone:
    # the two lines ranked first for "reflection equals builder internals"
    args = ",\n".join(f"                field_{i}.get(lhs), field_{i}.get(rhs)" for i in range(50))
    text = (f"class Builder {{\n    Builder reflectionAppend() {{\n        append(\n{args});\n"
            "        return this;\n    }\n}\n")
    pieces = [c for c in chunk_file("Builder.java", text, "java") if c.symbol == "Builder.reflectionAppend"]
    assert pieces and pieces[-1].end_line == len(text.splitlines()) - 1
    assert all(len(c.text) >= MIN_CHARS for c in pieces)


def test_syntax_errors_and_empty_files_do_not_raise():
    assert chunk_file("bad.py", "def broken(:\n  pass\n  ))))", "python")
    assert chunk_file("empty.py", "", "python") == []
    assert chunk_file("blank.rs", "\n\n  \n", "rust") == []


def test_identifiers_are_split_and_kept_whole():
    assert split_identifier("getHTTPResponse_code") == ["get", "http", "response", "code"]
    t = terms("merge_environment_settings XMLParser")
    assert {"merge_environment_settings", "merge", "environment", "settings", "xmlparser", "xml", "parser"} <= set(t)


def test_c_functions_under_conditional_compilation_are_definitions():
    # much of a C library sits inside `#ifndef FEATURE_DISABLED ... #endif`; `extern "C" { }` in C++
    body = "\n".join(f"  total += part_{i};" for i in range(60))
    text = (f'#include "http.h"\n#define CLAMP(x, lo, hi) ((x) < (lo) ? (lo) : (x) > (hi) ? (hi) : (x))\n'
            f'#ifndef CURL_DISABLE_HTTP\nstatic int http_total(void)\n{{\n  int total = 0;\n{body}\n  return total;\n}}\n'
            f'#ifdef USE_HTTP2\nint http2_total(void)\n{{\n{body}\n  return 2;\n}}\n#endif\n#endif\n')
    symbols = {c.symbol for c in chunk_file("lib/http.c", text, "c")}
    assert {"http_total", "http2_total"} <= symbols, symbols
    cpp = 'extern "C" {\n' + text.split("#ifndef")[1].split("\n", 1)[1].rsplit("#endif", 2)[0] + "}\n"
    assert "http_total" in {c.symbol for c in chunk_file("lib/http.cc", cpp, "cpp")}


def test_a_generic_rust_impl_is_named_after_its_type():
    body = "\n".join(f"        write!(f, \"{{}}\", self.{i})?;" for i in range(120))
    text = f"impl<T: Clone> fmt::Display for Wrapper<T> {{\n    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {{\n{body}\n        Ok(())\n    }}\n}}\n"
    assert "Wrapper.fmt" in {c.symbol for c in chunk_file("src/wrapper.rs", text, "rust")}


def test_typescript_namespaces_and_ambient_modules_name_their_members():
    body = "\n".join(f"    if (!rule{i}.test(s)) return false;" for i in range(80))
    text = (f"export namespace Validation {{\n  export function isEmail(s: string): boolean {{\n{body}\n    return true;\n  }}\n"
            f"  export class Rule {{}}\n}}\ndeclare module \"express\" {{\n  interface Request {{ user?: string }}\n}}\n")
    symbols = {c.symbol for c in chunk_file("src/validation.ts", text, "typescript")}
    assert "Validation.isEmail" in symbols, symbols


def test_a_c_files_banner_and_includes_are_not_its_first_functions_comments():
    """`#include` starts with `#` as a comment does in Python; a directive is code, so the banner and
    the includes above a C file's first function stay out of its chunk. Comments alone still go
    with the definition below them (`# if` is a comment, `#if` a directive)."""
    banner = "/*" + "\n * Copyright (C) the authors; see the license file." * 20 + "\n */\n"
    c = banner + '#include "curl_setup.h"\n#include "urldata.h"\n#include "connect.h"\n\n' \
        "int alpn_id(const char *name, size_t len)\n{\n" + "  if(len == 2) return 2;\n" * 30 + "  return 0;\n}\n"
    first = next(ch for ch in chunk_file("lib/connect.c", c, "c") if ch.symbol == "alpn_id")
    assert first.text.startswith("int alpn_id") and "Copyright" not in first.text
    py = "# if the cache is cold, build it first\n# (the walk is slow)\ndef warm(cache):\n" + "    cache.fill()\n" * 40
    warm = next(ch for ch in chunk_file("cache.py", py, "python") if ch.symbol == "warm")
    assert warm.text.startswith("# if the cache is cold")


def test_a_cpp_header_named_dot_h_is_read_as_cpp_and_a_c_header_as_c():
    """C++ libraries name their headers `.h` (abseil, simdjson, fmt): read by the C grammar a class
    in a namespace was a parse error and its methods no definitions."""
    from mcp_retrieval.indexers.languages import language_of

    methods = "\n".join(f"  int size_{i}() const {{\n    int n = size_ * {i};\n    return n + offset_;\n  }}" for i in range(60))
    cpp = (f"#pragma once\n#include <vector>\n\nnamespace absl {{\ntemplate <typename T>\nclass FixedArray {{\n public:\n"
           f"{methods}\n private:\n  int size_;\n}};\n}}  // namespace absl\n")
    assert language_of("absl/container/fixed_array.h", cpp) == "cpp"
    def methods_found(language):
        return [c.symbol for c in chunk_file("absl/container/fixed_array.h", cpp, language)
                if (c.symbol or "").startswith("absl.FixedArray.size_")]
    assert len(methods_found("cpp")) >= 2 and not methods_found("c")
    c = ('#ifndef CJSON_H\n#define CJSON_H\n#include <string.h>\n#ifdef __cplusplus\nextern "C" {\n#endif\n'
         "typedef struct cJSON { struct cJSON *next; int type; } cJSON;\nvoid cJSON_Delete(cJSON *item);\n"
         "#ifdef __cplusplus\n}\n#endif\n#endif\n")
    assert language_of("cJSON.h", c) == "c" and language_of("src/cJSON.c", cpp) == "c"


def test_a_line_of_one_macro_name_does_not_swallow_the_definitions_below_it():
    """`ABSL_NAMESPACE_BEGIN` alone on a line reads to the C and C++ grammars as the start of a
    declaration: the enum and functions after it were lost, most of abseil's definitions with them."""
    body = "\n".join(f"  k{name} = {i}," for i, name in enumerate("Ok Cancelled Unknown Invalid Deadline".split()))
    funcs = "\n".join(f"inline int Code{i}(int x) {{\n  return x * {i} + {i};\n}}\n" for i in range(90))
    text = (f"#include <string>\nnamespace absl {{\nABSL_NAMESPACE_BEGIN\n\nenum class StatusCode : int {{\n{body}\n}};\n\n"
            f"{funcs}\nABSL_NAMESPACE_END\n}}  // namespace absl\n")
    symbols = {c.symbol for c in chunk_file("absl/status/status.h", text, "cpp")}
    assert any(s and s.endswith("StatusCode") for s in symbols), symbols
    assert any(s and s.endswith("Code7") for s in symbols), symbols
    assert all(c.text.count("\n") + 1 == c.end_line - c.start_line + 1 for c in chunk_file("s.h", text, "cpp"))
    assert "ABSL_NAMESPACE_BEGIN" in "".join(c.text for c in chunk_file("s.h", text, "cpp"))  # kept in the chunks


def test_definitions_the_parser_recovered_inside_an_error_are_definitions():
    """A brace opened under one `#ifdef` and closed under another (curl's `else {` for Unix
    sockets) is more than the grammar can fit: the whole `#ifndef` block around it became one ERROR
    node and its functions line windows (curl's `cf-haproxy.c` kept 1 of its 9 definitions)."""
    funcs = "\n".join(f"static int haproxy_step{i}(int state)\n{{\n  if(state > {i})\n    return state - {i};\n"
                      f"  return {i};\n}}\n" for i in range(30))
    split = ("static int haproxy_format(int unix_socket)\n{\n  int result;\n#ifdef USE_UNIX_SOCKETS\n"
             "  if(unix_socket)\n    result = 1;\n  else {\n#endif\n  result = 2;\n#ifdef USE_UNIX_SOCKETS\n  }\n"
             "#endif\n  return result;\n}\n\n")
    text = ('#include "curl_setup.h"\n\n#ifndef CURL_DISABLE_PROXY\n#include "urldata.h"\n\n'
            f"{split}{funcs}\n#endif /* CURL_DISABLE_PROXY */\n")
    steps = {c.symbol for c in chunk_file("lib/cf-haproxy.c", text, "c") if (c.symbol or "").startswith("haproxy_step")}
    assert len(steps) >= 10, steps


@pytest.mark.parametrize("language,path", [("tsx", "src/ui/cookies-modal.tsx"), ("javascript", "lib/modal.js")])
def test_an_exported_arrow_function_is_a_definition(language, path):
    """`export const CookiesModal = ({ onHide }) => {...}`: the way most JS/TS modules define their
    functions and React components; it was read as line windows without a name."""
    body = "\n".join(f"  const value{i} = useSetting({i});" for i in range(80))
    text = (f"import {{ useSetting }} from './settings';\n\n/** The cookies of a workspace. */\n"
            f"export const CookiesModal = ({{ onHide }}) => {{\n{body}\n  return onHide;\n}};\n\n"
            f"export const closeAll = function () {{\n  return null;\n}};\n\n"
            f"export const SvgIcon = memo((props) => {{\n  const size = props.size ?? 16;\n  const label = props.label;\n"
            f"  const view = `0 0 ${{size}} ${{size}}`;\n  return render(view, size, label, props.fill);\n}});\n")
    chunks = chunk_file(path, text, language)
    modal = [c for c in chunks if c.symbol == "CookiesModal"]
    assert modal and modal[0].kind == "function" and modal[0].text.startswith("export const CookiesModal"), chunks
    assert all(len(c.text) <= 2400 for c in chunks)  # a long one is cut between its statements
    assert {"closeAll", "SvgIcon"} <= {c.symbol for c in chunks}


@pytest.mark.parametrize("language,path,head,name", [
    ("javascript", "api/index.js", "export default async (req, res) => {", "default"),
    ("typescript", "src/index.ts", "export default declare((api, options) => {", "default"),
    ("javascript", "lib/adapters/http.js", "export default isHttpAdapterSupported && function httpAdapter(config) {",
     "httpAdapter"),
])
def test_a_default_exported_function_is_a_definition(language, path, head, name):
    """A module whose one export is an anonymous or guarded function (a serverless handler, a Babel
    plugin's `declare(api => ...)`, axios's `httpAdapter`) was read as line windows without a name."""
    body = "\n".join(f"  const value{i} = await fetchStats(req.query.user, {i});" for i in range(70))
    text = f"import {{ fetchStats }} from '../src/fetchers.js';\n\n/** Serves the card. */\n{head}\n{body}\n  return value1;\n}};\n"
    if "declare(" in head:
        text = text.rstrip().rstrip(";") + ");\n"
    chunks = chunk_file(path, text, language)
    named = [c for c in chunks if c.symbol == name]
    assert named and named[0].kind == "function" and named[0].text.startswith(head), chunks
    assert all(c.kind != "window" for c in chunks), chunks


@pytest.mark.parametrize("language,path,text,name", [
    ("java", "gson/annotations/Expose.java",
     "package com.google.gson.annotations;\n\n@Retention(RetentionPolicy.RUNTIME)\n@Target(ElementType.FIELD)\n"
     "public @interface Expose {\n  public boolean serialize() default true;\n  public boolean deserialize() default true;\n}\n",
     "Expose"),
    ("scala", "cats/data/package.scala",
     "package cats\n\npackage object data {\n  type NonEmptyStream[A] = OneAnd[Stream, A]\n"
     "  def NonEmptyStream[A](head: A, tail: A*): NonEmptyStream[A] = OneAnd(head, tail.toStream)\n}\n",
     "data"),
])
def test_annotation_types_and_package_objects_are_definitions(language, path, text, name):
    assert name in {c.symbol for c in chunk_file(path, text, language)}


def test_the_methods_of_class_self_are_the_class_methods():
    """Ruby's `class << self` holds a class's own methods (Jekyll's `Command.subclasses`): they were
    lines of the class, not definitions."""
    long_body = "\n".join(f"        site.process({i})" for i in range(150))
    text = (f"module Jekyll\n  class Command\n    class << self\n      def subclasses\n        @subclasses ||= []\n"
            f"      end\n\n      def process_site(site)\n{long_body}\n      end\n    end\n  end\nend\n")
    symbols = {c.symbol for c in chunk_file("lib/jekyll/command.rb", text, "ruby")}
    assert {"Jekyll.Command.subclasses", "Jekyll.Command.process_site"} <= symbols, symbols


def test_a_function_assigned_to_a_property_is_a_definition():
    """CommonJS modules (express, koa) define their methods as `app.use = function use(fn) {...}`:
    express's `application.js` was sixty-line windows without a name."""
    body = "\n".join(f"  this.stack.push(layer{i});" for i in range(30))
    text = ("'use strict';\nvar app = exports = module.exports = {};\n\n/**\n * Proxy `Router#use()`.\n */\n"
            f"app.use = function use(fn) {{\n{body}\n  return this;\n}};\n\n"
            f"/**\n * A route for `path`.\n */\nRouter.prototype.route = function route(path) {{\n{body}\n  return path;\n}};\n")
    chunks = chunk_file("lib/application.js", text, "javascript")
    assert next(c for c in chunks if c.symbol == "app.use").kind == "function"
    assert next(c for c in chunks if c.symbol == "Router.route").text.startswith("/**\n * A route")


@pytest.mark.parametrize("language,path,text,names", [
    ("typescript", "src/ui/editor.ts",
     "class Editor extends Component {\n  handleClick = () => {\n" + "    this.count += 1;\n" * 80 + "  };\n"
     "  static create = function () {\n" + "    return new Editor();\n" * 80 + "  };\n}\n"
     "export const CodeEditor = memo(forwardRef((props, ref) => {\n" + "  const view = useView(props);\n" * 80 + "  return view;\n}));\n",
     {"Editor.handleClick", "Editor.create", "CodeEditor"}),
    ("javascript", "lib/editor.js",
     "class Editor {\n  handleClick = () => {\n" + "    this.count += 1;\n" * 150 + "  };\n}\n",
     {"Editor.handleClick"}),
    ("java", "core/JsonReadFeature.java",
     "public enum JsonReadFeature {\n  ALLOW_COMMENTS(false),\n  ALLOW_NAN(false);\n\n  private final boolean _default;\n\n"
     "  public boolean enabledByDefault() {\n" + "    int x = 1;\n" * 120 + "    return _default;\n  }\n\n"
     "  public int getMask() {\n" + "    int y = 2;\n" * 120 + "    return 1;\n  }\n}\n",
     {"JsonReadFeature.enabledByDefault", "JsonReadFeature.getMask"}),
])
def test_class_fields_holding_functions_and_enum_methods_are_definitions(language, path, text, names):
    assert names <= {c.symbol for c in chunk_file(path, text, language)}


def test_a_crates_own_docs_and_an_overlong_doc_comment_stay_with_the_file():
    """`//!` documents the crate or module it is in, not the item below it (axum's 550 lines of crate
    docs were one 19 kB chunk named after `mod macros`); a doc comment longer than a chunk is read
    in the file's own windows (ripgrep's `struct JSON` was one 16 kB chunk)."""
    crate_docs = "".join(f"//! Line {i} of what the crate does and how routing works.\n" for i in range(200))
    fields = "".join(f"    route_{i}: Route,\n" for i in range(12))
    text = crate_docs + f"/// The routes.\npub(crate) fn macros() {{}}\n\n/// A short doc.\npub struct Router {{\n{fields}}}\n"
    chunks = chunk_file("axum/src/lib.rs", text, "rust")
    assert next(c for c in chunks if c.symbol == "macros").text.startswith("/// The routes.\npub(crate) fn macros")
    assert next(c for c in chunks if c.symbol == "Router").text.startswith("/// A short doc.")
    assert all(len(c.text) <= 2 * 2400 for c in chunks)
    long_doc = "".join(f"/// Field {i}: what the JSON printer writes for it, in detail.\n" for i in range(120))
    chunks = chunk_file("printer/src/json.rs", long_doc + "pub struct JSON<W> {\n    wtr: W,\n}\n", "rust")
    assert next(c for c in chunks if c.symbol == "JSON").text.startswith("pub struct JSON")


def test_the_items_inside_a_rust_macros_braces_are_definitions():
    """tokio gates whole modules behind `cfg_rt! { ... }`, pin-project wraps structs in
    `pin_project! { ... }`: their items were one macro's tokens. Braces that do not hold items
    (serde's `seq_impl! { #[cfg(...)] Vec<T> }`) stay shut and break nothing around them."""
    body = "\n".join(f"        run({i});" for i in range(60))
    text = (f"cfg_rt! {{\n    /// Spawns a task.\n    pub fn spawn<F>(f: F) {{\n{body}\n    }}\n\n"
            f"    pub fn block_on<F>(f: F) {{\n{body}\n    }}\n}}\n\n"
            "seq_impl! {\n    #[cfg(feature = \"std\")]\n    Vec<T>\n}\n\n"
            f"pub fn after_the_macros() {{\n{body}\n}}\n")
    chunks = chunk_file("tokio/src/task/spawn.rs", text, "rust")
    assert {"spawn", "block_on", "after_the_macros"} <= {c.symbol for c in chunks}
    assert [c.start_line for c in chunks] == sorted(c.start_line for c in chunks)
    assert "".join(c.text + "\n" for c in chunks).count("cfg_rt! {") == 1  # the text is the file's own


def test_a_rust_module_declared_without_a_body_is_no_definition():
    """`mod parser;` names the file that defines the module (`parser.rs`): read as a definition, a
    crate root's list of modules answered every question naming one (just's `lib.rs`, BENCHMARKS 69c).
    A module written inline is one."""
    text = ("mod alias;\npub mod parser;\n#[cfg(test)]\nmod testing;\n\n"
            "pub mod inline {\n    pub fn helper() -> u32 {\n" + "        1 + 1;\n" * 40 + "        2\n    }\n}\n")
    symbols = {c.symbol for c in chunk_file("src/lib.rs", text, "rust")}
    assert {"alias", "parser", "testing"}.isdisjoint(symbols)
    assert symbols & {"inline", "inline.helper"}


@pytest.mark.parametrize("language,path,text,declared,defined", [
    ("c", "include/event.h", "struct event_base;\nstruct evbuffer;\nenum ev_color;\n\n"
     "struct ev_point {\n  int x;\n  int y;\n};\n", {"event_base", "evbuffer", "ev_color"}, {"ev_point"}),
    ("cpp", "include/widget.hpp", "namespace ui {\nclass Canvas;\nstruct Theme;\ntemplate <typename T> class Model;\n}\n"
     "class Widget {\n public:\n  int width;\n};\n", {"Canvas", "Theme", "Model"}, {"Widget"}),
])
def test_a_forward_declaration_is_no_definition(language, path, text, declared, defined):
    """`struct event_base;` names a type another file defines: the header that forward-declares it
    is not where it is defined (the symbol table and the symbol tier read definitions from here)."""
    from mcp_retrieval.indexers.chunk import parse
    from mcp_retrieval.indexers.symbols import extract
    names = {s[2] for s in extract(path, language, parse(text, language)).symbols}
    assert defined <= names and not declared & names


def test_each_type_of_a_go_type_group_is_a_definition():
    """Only the first type of a `type ( ... )` group was a definition (gin's `HandlersChain` was
    defined nowhere, for the symbol tier or `query_graph`)."""
    from mcp_retrieval.indexers.chunk import parse
    from mcp_retrieval.indexers.symbols import extract
    text = ("package gin\n\ntype (\n\tHandlerFunc func(*Context)\n\tHandlersChain []HandlerFunc\n\tRoutes = []Route\n)\n\n"
            "type Engine struct{ trees int }\n\nfunc (c *Context) Next() {\n\tc.index++\n}\n")
    symbols = {(s[2], s[4]) for s in extract("gin.go", "go", parse(text, "go")).symbols}
    assert {("HandlerFunc", "class"), ("HandlersChain", "class"), ("Routes", "class"), ("Engine", "class"),
            ("Next", "method")} <= symbols


def test_a_form_feed_or_line_separator_does_not_shift_the_chunks_below_it():
    """Lines end at "\\n" alone, as tree-sitter's rows and an editor's line numbers do
    (`str.splitlines` also broke at a form feed, `\\x1c` and U+2028, shifting every chunk below)."""
    from mcp_retrieval.indexers.chunk import chunk_file

    body = "def alpha():\n    return 1\n\x0c\n" + "".join(
        f"def filler_{i}():\n    \"\"\"Doc {i} \x0c and \u2028\"\"\"\n    x = {i}\n    y = x * 2\n    return y\n\n"
        for i in range(60)) + "def gamma_target():\r\n    return 3\r\n"
    target_line = body.split("\n").index("def gamma_target():\r") + 1
    chunk = next(c for c in chunk_file("pg.py", body, "python") if "gamma_target" in c.text)
    assert chunk.start_line <= target_line <= chunk.end_line
    assert chunk.text.split("\n")[target_line - chunk.start_line] == "def gamma_target():"  # "\r" dropped
