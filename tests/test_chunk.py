from mcp_retrieval.indexers.analysis import split_identifier, terms
from mcp_retrieval.indexers.chunk import MAX_CHARS, chunk_file
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
