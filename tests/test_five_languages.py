"""Bash, Lua, Elixir, Haskell and Zig are parsed: definitions are chunks with their names, symbols
and graph edges, imports resolve by each language's file convention, and each language's tests
are told from its code. Real Tantivy, LanceDB and tree-sitter grammars in a temporary workspace;
the sources are written in each language's common idioms (Elixir `@doc` + clauses, Haskell
signatures + equations, Lua `M.f`/`M:f`, Zig `const T = struct` and inline tests)."""

from __future__ import annotations

import pytest

from mcp_retrieval.indexers.chunk import MAX_CHARS, chunk_file
from tests.import_reading import Imports
from mcp_retrieval.indexers.languages import GRAMMAR_LANGUAGES, is_test_chunk, is_test_path, language_for
from mcp_retrieval.workspace import Workspace
from tests.conftest import defined_ids, engine_over

SOURCES = {
    "bash_it.sh": """#!/usr/bin/env bash
# Initialise the framework: load the helpers, then every enabled component.
source "${BASH_IT}/lib/helpers.bash"

function _load_enabled_components() {
  local component
  for component in "$@"; do
    _bash-it-component-help "$component"
  done
}

_load_enabled_components plugins aliases
""",
    "lib/helpers.bash": """# Helpers shared by the components.

function _bash-it-component-help() {
  local component="$1"
  local file
  file="$(_bash-it-component-cache-file "$component")"
  if [[ ! -s "${file}" ]]; then
    echo "no help cached for ${component}" >&2
    return 1
  fi
  cat "${file}"
}

_bash-it-component-cache-file () {
  printf '%s/%s' "${XDG_CACHE_HOME:-$HOME/.cache}/bash_it" "$1"
}
""",
    "lua/shop/init.lua": """local M = {}
local cart = require("shop.cart")

---@param opts table
function M.setup(opts)
  M.options = vim.tbl_deep_extend("force", {}, opts or {})
  cart.restore_basket(M.options.basket)
end

return M
""",
    "lua/shop/cart.lua": """local Cart = {}
Cart.__index = Cart

function Cart.restore_basket(path)
  local items = vim.json.decode(vim.fn.readfile(path))
  return setmetatable({ items = items }, Cart)
end

function Cart:weighted_total()
  local total = 0
  for _, item in ipairs(self.items) do
    total = total + item.price * item.weight
  end
  return total
end

return Cart
""",
    "lib/shop/cart.ex": """defmodule Shop.Cart do
  @moduledoc \"\"\"
  A basket of line items.
  \"\"\"
  alias Shop.PriceRules

  @doc \"\"\"
  Applies the coupon to every line of the cart.
  \"\"\"
  @spec apply_coupon(t(), String.t()) :: t()
  def apply_coupon(%{lines: []} = cart, _code), do: cart

  def apply_coupon(cart, code) when is_binary(code) do
    %{cart | lines: Enum.map(cart.lines, &PriceRules.discount_line(&1, code))}
  end

  defp normalise(code), do: String.upcase(code)
end
""",
    "lib/shop/price_rules.ex": """defmodule Shop.PriceRules do
  def discount_line(line, code) do
    %{line | price: line.price * rate(code)}
  end

  defp rate("HALF"), do: 0.5
  defp rate(_), do: 1.0
end
""",
    "test/shop/cart_test.exs": """defmodule Shop.CartTest do
  use ExUnit.Case

  test "an empty cart stays empty" do
    assert Shop.Cart.apply_coupon(%{lines: []}, "HALF") == %{lines: []}
  end
end
""",
    "src/Shop/Ledger.hs": """module Shop.Ledger (Entry(..), balanceAfter) where

import qualified Shop.Money as M
import Data.List (foldl')

data Entry = Credit M.Amount | Debit M.Amount
  deriving (Eq, Show)

class Describe a where
  describe :: a -> String

instance Describe Entry where
  describe (Credit a) = "credit " ++ show a
  describe (Debit a) = "debit " ++ show a

-- | The balance after every entry, starting from an opening amount.
balanceAfter :: M.Amount -> [Entry] -> M.Amount
balanceAfter opening = foldl' step opening
  where
    step acc (Credit a) = M.plus acc a
    step acc (Debit a) = M.minus acc a
""",
    "src/Shop/Money.hs": """module Shop.Money where

newtype Amount = Amount Integer deriving (Eq, Show)

plus :: Amount -> Amount -> Amount
plus (Amount a) (Amount b) = Amount (a + b)

minus :: Amount -> Amount -> Amount
minus (Amount a) (Amount b) = Amount (a - b)
""",
    "src/ring_buffer.zig": """const std = @import("std");
const mem = @import("mem_util.zig");

pub const RingBuffer = struct {
    data: []u8,
    read_index: usize = 0,

    pub fn init(allocator: std.mem.Allocator, capacity: usize) !RingBuffer {
        return .{ .data = try allocator.alloc(u8, capacity) };
    }

    pub fn writeSliceWrapping(self: *RingBuffer, bytes: []const u8) void {
        mem.copyWrapping(self.data, self.read_index, bytes);
    }
};

test "writeSliceWrapping wraps at the end" {
    var buf = try RingBuffer.init(std.testing.allocator, 4);
    buf.writeSliceWrapping("abcdef");
}
""",
    "src/mem_util.zig": """pub fn copyWrapping(dest: []u8, start: usize, bytes: []const u8) void {
    for (bytes, 0..) |b, i| dest[(start + i) % dest.len] = b;
}
""",
}


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory):
    eng = engine_over(SOURCES, tmp_path_factory.mktemp("five"))
    yield eng
    eng.close()


def test_the_five_languages_are_parsed():
    assert {language_for(p) for p in ["a.sh", "b.bash", "c.lua", "d.ex", "e.exs", "f.hs", "g.zig"]} == \
        {"shell", "lua", "elixir", "haskell", "zig"}
    assert {"shell", "lua", "elixir", "haskell", "zig"} <= GRAMMAR_LANGUAGES


@pytest.mark.parametrize("path, symbol", [
    ("lib/helpers.bash", "_bash-it-component-help"),
    ("lib/helpers.bash", "_bash-it-component-cache-file"),
    ("lua/shop/init.lua", "M.setup"),
    ("lua/shop/cart.lua", "Cart.weighted_total"),  # `Cart:weighted_total` reads as a dotted name
    ("lib/shop/cart.ex", "Shop.Cart.apply_coupon"),
    ("lib/shop/price_rules.ex", "Shop.PriceRules.rate"),
    ("src/Shop/Ledger.hs", "balanceAfter"),
    ("src/Shop/Ledger.hs", "Entry"),
    ("src/Shop/Ledger.hs", "Describe Entry"),
    ("src/Shop/Ledger.hs", "Describe.describe"),  # a class method declared by its signature alone
    ("src/ring_buffer.zig", "RingBuffer.writeSliceWrapping"),
])
def test_definitions_are_found_by_qualified_name(shop, path, symbol):
    assert f"{path}::{symbol}" in defined_ids(shop, path)


def test_an_elixir_functions_doc_spec_and_clauses_are_one_chunk():
    report = "\n".join(f"    IO.puts(\"line {i}: #{{inspect(cart.lines)}}\")" for i in range(60))
    text = SOURCES["lib/shop/cart.ex"].replace("  defp normalise", f"  def report(cart) do\n{report}\n  end\n\n  defp normalise")
    chunks = chunk_file("lib/shop/cart.ex", text, "elixir")  # too long for one chunk: cut at definitions
    coupon = [c for c in chunks if c.symbol == "Shop.Cart.apply_coupon"]
    assert len(coupon) == 1, [(c.symbol, c.start_line, c.end_line) for c in chunks]
    assert "@doc" in coupon[0].text and "when is_binary(code)" in coupon[0].text


def test_a_haskell_signature_and_its_equations_are_one_definition(shop):
    chunks = chunk_file("src/Shop/Money.hs", SOURCES["src/Shop/Money.hs"], "haskell")
    minus = [c for c in chunks if c.symbol == "minus"]
    assert len(minus) == 1 and minus[0].text.startswith("minus :: Amount")
    node = next(n for n in shop.query_graph("src/Shop/Ledger.hs", relation="defines", depth=3).nodes
                if n.id == "src/Shop/Ledger.hs::balanceAfter")
    assert SOURCES["src/Shop/Ledger.hs"].splitlines()[node.start_line - 1].startswith("balanceAfter ::")


def test_a_long_module_header_is_cut_at_its_statements():
    doc = "\n".join(f"  Paragraph {i} of the module's documentation, long enough to matter." for i in range(120))
    text = f'defmodule Shop.Docs do\n  @moduledoc """\n{doc}\n  """\n  use Shop.Base\n\n  def last, do: :ok\nend\n'
    chunks = chunk_file("lib/shop/docs.ex", text, "elixir")
    assert max(len(c.text) for c in chunks) <= 2 * MAX_CHARS + 200
    assert "Shop.Docs.last" in {c.symbol for c in chunks}


@pytest.mark.parametrize("importer, imported", [
    ("bash_it.sh", "lib/helpers.bash"),
    ("lua/shop/init.lua", "lua/shop/cart.lua"),
    ("lib/shop/cart.ex", "lib/shop/price_rules.ex"),
    ("src/Shop/Ledger.hs", "src/Shop/Money.hs"),
    ("src/ring_buffer.zig", "src/mem_util.zig"),
])
def test_imports_resolve_by_each_languages_file_convention(shop, importer, imported):
    imports = {n.id.split("::")[0] for n in shop.query_graph(importer, relation="imports").nodes}
    assert imported in imports


def test_calls_reach_definitions_in_other_files(shop):
    callees = {n.id for n in shop.query_graph("src/Shop/Ledger.hs::balanceAfter", relation="callees").nodes}
    assert {"src/Shop/Money.hs::plus", "src/Shop/Money.hs::minus"} <= callees  # through `M.plus`
    callees = {n.id for n in shop.query_graph("_load_enabled_components", relation="callees").nodes}
    assert "lib/helpers.bash::_bash-it-component-help" in callees
    callers = {n.id for n in shop.query_graph("src/mem_util.zig::copyWrapping", relation="callers").nodes}
    assert "src/ring_buffer.zig::RingBuffer.writeSliceWrapping" in callers


def test_lua_init_files_name_their_folder():
    assert "lua/shop/init.lua" in Imports("plugin/shop.lua", ["shop"])


def test_test_conventions():
    assert all(is_test_path(p) for p in ["test/shop/cart_test.exs", "test/Shop/LedgerSpec.hs", "spec/cart_spec.lua",
                                          "test/install.bats"])
    assert is_test_chunk("src/ring_buffer.zig", 'test "writeSliceWrapping wraps at the end"', "zig")
    assert not is_test_chunk("src/ring_buffer.zig", "RingBuffer.writeSliceWrapping", "zig")
    assert not any(is_test_path(p) for p in SOURCES if not p.startswith("test/"))


@pytest.mark.parametrize("question, path", [
    ("the component cache file ignores XDG_CACHE_HOME", "lib/helpers.bash"),
    ("weighted_total ignores the item weight", "lua/shop/cart.lua"),
    ("apply_coupon crashes on an empty cart", "lib/shop/cart.ex"),
    ("balanceAfter gives the wrong balance for debits", "src/Shop/Ledger.hs"),
    ("writeSliceWrapping overwrites unread bytes", "src/ring_buffer.zig"),
])
def test_a_question_naming_a_definition_finds_its_file_first(shop, question, path):
    r = Workspace.single(shop).packet(question)
    assert r.items and r.items[0].path == path, [i.path for i in r.items]


def test_a_hyphenated_function_name_in_backticks_is_a_name_to_look_up(shop):
    """bash (and Lisp-like) names hold hyphens; written as code they name one definition, not four words."""
    r = Workspace.single(shop).packet("`_bash-it-component-help` prints nothing for a disabled component", debug=True)
    first = r.items[0]
    assert first.path == "lib/helpers.bash" and "symbol" in first.tiers, [(i.path, i.tiers) for i in r.items[:3]]


def test_an_elixir_alias_resolves_calls_through_it_even_to_a_common_name():
    from mcp_retrieval.indexers.graph import Node, _Resolver

    nodes = [Node("lib/shop/cart.ex", "lib/shop/cart.ex", "cart.ex", "cart.ex", "file", 1, 9),
             Node("lib/shop/cart.ex::Shop.Cart.total", "lib/shop/cart.ex", "total", "Shop.Cart.total", "function", 3, 5),
             Node("lib/shop/repo.ex", "lib/shop/repo.ex", "repo.ex", "repo.ex", "file", 1, 9),
             Node("lib/shop/repo.ex::Shop.Repo.get", "lib/shop/repo.ex", "get", "Shop.Repo.get", "function", 2, 4)]
    for i in range(4):  # `get` is defined everywhere: by name alone it resolves nowhere
        nodes += [Node(f"lib/x{i}.ex", f"lib/x{i}.ex", f"x{i}.ex", f"x{i}.ex", "file", 1, 3),
                  Node(f"lib/x{i}.ex::X{i}.get", f"lib/x{i}.ex", "get", f"X{i}.get", "function", 1, 2)]
    resolver = _Resolver(nodes)
    source = "lib/shop/cart.ex::Shop.Cart.total"
    assert resolver.resolve("lib/shop/cart.ex", source, "Repo.get", "call") == []
    assert resolver.resolve("lib/shop/cart.ex", "lib/shop/cart.ex", "Shop.Repo", "import") == [2]
    assert resolver.resolve("lib/shop/cart.ex", source, "Repo.get", "call") == [3]


# Scripts no extension names, as projects ship them: rbenv's `libexec/` commands, a Python
# package's `bin/` entry point, a Rakefile, a dotfiles repository's `.bashrc`; and a plain note.
SCRIPTS = {
    "libexec/rbenv-version-file": """#!/usr/bin/env bash
# Usage: rbenv version-file [<dir>]
# Summary: Detect the file that sets the current rbenv version
set -e
[ -n "$RBENV_DEBUG" ] && set -x

target_dir="$1"

find_local_version_file() {
  local root="$1"
  while ! [[ "$root" =~ ^//[^/]*$ ]]; do
    if [ -s "${root}/.ruby-version" ]; then
      echo "${root}/.ruby-version"
      return 0
    fi
    [ -n "$root" ] || break
    root="${root%/*}"
  done
  return 1
}

if [ -n "$target_dir" ]; then
  find_local_version_file "$target_dir"
else
  find_local_version_file "$RBENV_DIR" || echo "${RBENV_ROOT}/version"
fi
""",
    "bin/isympy": """#!/usr/bin/env python3
\"\"\"Python shell for SymPy: starts IPython when it is installed, else the plain console.\"\"\"
import sys


def main(argv=None):
    from sympy.interactive import init_session
    init_session(ipython="--no-ipython" not in (argv or sys.argv), quiet=True)


if __name__ == "__main__":
    main()
""",
    "Rakefile": """require "rake/testtask"

def gem_version
  File.read("lib/shop/version.rb")[/VERSION = "(.+)"/, 1]
end

task default: :test
""",
    ".bashrc": """export EDITOR=vim

mkcd() {
  mkdir -p "$1" && cd "$1"
}
""",
    "NOTES": "#!/not/a/program\nA plain note: what this folder is for.\n",
}


def test_a_script_without_an_extension_is_read_in_the_language_its_name_or_first_line_says():
    from mcp_retrieval.indexers.languages import interpreter_language, language_of

    assert [interpreter_language(line) for line in (
        "#!/bin/sh", "#!/usr/bin/env bash", "#! /usr/bin/python3.11 -u", "#!/usr/bin/env -S node --no-warnings",
        "#!/usr/bin/env DEBUG=1 ruby", "#!/usr/local/bin/lua5.4", "#!/usr/bin/awk -f", "# a comment", "#!")] == \
        ["shell", "shell", "python", "javascript", "ruby", "lua", None, None, None]
    # an extension decides first: a `.txt` or `.md` that starts with `#!` is still prose, `.py` still Python
    assert language_of("notes.txt", "#!/bin/sh\n") == "text"
    assert language_of("tool.py", "#!/bin/sh\n") == "python"
    assert language_of("script/cibuild", "#!/bin/sh\nset -e\n") == "shell"
    assert language_of("LICENSE", "MIT License\n") == "text"


def test_scripts_without_an_extension_get_their_definitions(tmp_path):
    eng = engine_over(SCRIPTS, tmp_path)
    try:
        assert "libexec/rbenv-version-file::find_local_version_file" in defined_ids(eng, "libexec/rbenv-version-file")
        assert "bin/isympy::main" in defined_ids(eng, "bin/isympy")
        assert "Rakefile::gem_version" in defined_ids(eng, "Rakefile")
        assert ".bashrc::mkcd" in defined_ids(eng, ".bashrc")
        languages = dict(eng.store.query("SELECT path, language FROM chunks"))
        assert languages["libexec/rbenv-version-file"] == "shell" and languages["NOTES"] == "text"
    finally:
        eng.close()
