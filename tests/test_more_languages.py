"""Ruby, PHP, C#, Swift, Scala and Kotlin are parsed (definitions are chunks, symbols and graph
edges); other code without a grammar here (Objective-C, Perl, ...) is chunked in line windows and ranked
as code, never as documentation. Real Tantivy and LanceDB, in a temporary workspace."""

from __future__ import annotations


import pytest

from mcp_retrieval.extract import extract
from tests.import_reading import Imports
from mcp_retrieval.indexers.chunk import chunk_file
from mcp_retrieval.indexers.languages import CODE_LANGUAGES, GRAMMAR_LANGUAGES, PROSE_LANGUAGES, is_test_path, \
    language_for
from mcp_retrieval.workspace import Workspace
from tests.conftest import defined_ids, engine_over

SOURCES = {
    "lib/shop/cart.rb": """require_relative '../util/pricing'

module Shop
  class Cart < Base
    include Enumerable

    def initialize(items)
      @items = items
    end

    def total_with_coupon(code)
      raise ArgumentError, "coupon code is not redeemable here" unless valid?(code)
      Pricing.discount(@items.sum, code)
    end
  end
end
""",
    "lib/util/pricing.rb": """module Pricing
  def self.discount(amount, code)
    amount * 0.9
  end
end
""",
    "src/Billing/Invoice.php": """<?php
namespace App\\Billing;

use App\\Util\\Money;

class Invoice extends Document implements Payable
{
    public function settleBalance(int $cents): Money
    {
        return Money::fromCents($cents)->round();
    }
}
""",
    "src/Util/Money.php": """<?php
namespace App\\Util;

final class Money
{
    public static function fromCents(int $cents): Money { return new Money($cents); }
}
""",
    "Shop.Core/Ledger.cs": """using System.Linq;

namespace Shop.Core
{
    public class Ledger : Journal
    {
        public decimal ReconcileAccounts(int year)
        {
            return Entries.Where(e => e.Year == year).Sum(e => e.Amount);
        }
    }
}
""",
    "Sources/Shop/Basket.swift": """import Foundation

class Basket: Container {
    init(items: [Item]) { self.items = items }
    func checkoutTotal() -> Int { return items.reduce(0) { $0 + $1.price } }
}
""",
    "src/main/scala/shop/Catalog.scala": """package shop

import shop.util.Helper

class Catalog extends Registry {
  def lookupSku(sku: String): Option[Item] = Helper.find(sku)
}
""",
    "app/src/main/kotlin/shop/Wallet.kt": """package shop

class Wallet(val owner: String) {
    fun refundPayment(amount: Int): Int = amount
}

fun String.toSlug(): String = lowercase().replace(' ', '-')

fun <T> List<T>.secondOrNone(): T? = getOrNull(1)
""",
    "docs/notes.txt": "How to refundPayment from a Wallet: see the guide.\n",
}


@pytest.fixture(scope="module")
def polyglot(tmp_path_factory: pytest.TempPathFactory):  # read-only questions: one index for the module
    eng = engine_over(SOURCES, tmp_path_factory.mktemp("polyglot"))
    yield eng
    eng.close()


def test_each_new_language_is_recognised_and_code_is_never_prose():
    assert {language_for(p) for p in SOURCES if p.endswith((".rb", ".php", ".cs", ".swift", ".scala"))} == \
        {"ruby", "php", "csharp", "swift", "scala"}
    assert {"ruby", "php", "csharp", "swift", "scala", "kotlin"} <= GRAMMAR_LANGUAGES
    for path in ["run.pl", "View.m", "lib/x.erl", "Main.ml"]:
        assert language_for(path) in CODE_LANGUAGES and language_for(path) not in PROSE_LANGUAGES, path
    assert language_for("notes.txt") in PROSE_LANGUAGES


@pytest.mark.parametrize("path, symbol", [
    ("lib/shop/cart.rb", "Shop.Cart.total_with_coupon"),
    ("src/Billing/Invoice.php", "Invoice.settleBalance"),
    ("Shop.Core/Ledger.cs", "Ledger.ReconcileAccounts"),
    ("Sources/Shop/Basket.swift", "Basket.checkoutTotal"),
    ("src/main/scala/shop/Catalog.scala", "Catalog.lookupSku"),
    ("app/src/main/kotlin/shop/Wallet.kt", "Wallet.refundPayment"),
    ("app/src/main/kotlin/shop/Wallet.kt", "String.toSlug"),  # an extension function: named as it is called
    ("app/src/main/kotlin/shop/Wallet.kt", "List.secondOrNone"),
])
def test_definitions_are_found_by_qualified_name(polyglot, path, symbol):
    assert f"{path}::{symbol}" in defined_ids(polyglot, path)


def test_a_long_definition_is_its_own_chunk_with_its_name():
    body = "\n".join(f"    total += line_{i}" for i in range(120))
    text = f"class Register\n  def tally\n    total = 0\n{body}\n  end\n\n  def other\n  end\nend\n"
    chunks = chunk_file("lib/register.rb", text, "ruby")
    assert "Register.tally" in {c.symbol for c in chunks}


def test_calls_inheritance_and_imports_are_edges(polyglot):
    callees = {n.id for n in polyglot.query_graph("Shop.Cart.total_with_coupon", relation="callees").nodes}
    assert "lib/util/pricing.rb::Pricing.discount" in callees
    imports = {n.id.split("::")[0] for n in polyglot.query_graph("lib/shop/cart.rb", relation="imports").nodes}
    assert "lib/util/pricing.rb" in imports
    assert Imports("src/Billing/Invoice.php", ["App\\Util\\Money"]).__contains__("src/Util/Money.php")
    assert Imports("src/main/scala/shop/Catalog.scala", ["shop.util.Helper"]).__contains__(
        "src/main/scala/shop/util/Helper.scala")


@pytest.mark.parametrize("question, path", [
    ("total_with_coupon raises for a valid coupon", "lib/shop/cart.rb"),
    ("settleBalance rounds the wrong way", "src/Billing/Invoice.php"),
    ("ReconcileAccounts ignores the year", "Shop.Core/Ledger.cs"),
    ("checkoutTotal is off by one", "Sources/Shop/Basket.swift"),
    ("lookupSku returns None for a known sku", "src/main/scala/shop/Catalog.scala"),
    ("refundPayment in Wallet returns the wrong amount", "app/src/main/kotlin/shop/Wallet.kt"),
])
def test_a_question_naming_a_definition_finds_its_file_first(polyglot, question, path):
    r = Workspace.single(polyglot).context(question, budget_tokens=600)
    assert r.chunks and r.chunks[0].path == path, [c.path for c in r.chunks]


def test_rubys_class_hash_method_names_a_definition(polyglot):
    assert "Shop.Cart.total_with_coupon" in extract("Shop::Cart#total_with_coupon ignores the code").dotted
    r = Workspace.single(polyglot).packet("Cart#total_with_coupon ignores the code")
    assert r.items[0].path == "lib/shop/cart.rb"


def test_query_graph_reads_scoped_names_as_qualified_ones(polyglot):
    for written in ["Shop::Cart#total_with_coupon", "Cart#total_with_coupon", "Shop.Cart.total_with_coupon"]:
        assert [n.id for n in polyglot.query_graph(written, relation="callees").nodes][:1] == \
            ["lib/shop/cart.rb::Shop.Cart.total_with_coupon"], written


def test_a_quoted_ruby_error_finds_its_raise_site(polyglot):
    r = Workspace.single(polyglot).packet('ArgumentError: "coupon code is not redeemable here" when checking out')
    assert r.items[0].path == "lib/shop/cart.rb"


def test_stack_frames_of_ruby_php_csharp_and_swift_name_files_and_functions():
    frames = extract("/app/lib/shop/cart.rb:12:in 'Shop::Cart#total_with_coupon'\n"
                     "#0 /var/www/src/Billing/Invoice.php(9): App\\Billing\\Invoice->settleBalance()\n"
                     "   at Shop.Core.Ledger.ReconcileAccounts(Int32 year) in /src/Shop.Core/Ledger.cs:line 9\n"
                     "Sources/Shop/Basket.swift:5: Fatal error: Index out of range").frames
    assert ("/app/lib/shop/cart.rb", 12, "total_with_coupon") in frames
    assert ("/var/www/src/Billing/Invoice.php", 9, "settleBalance") in frames
    assert ("/src/Shop.Core/Ledger.cs", 9, "ReconcileAccounts") in frames
    assert ("Sources/Shop/Basket.swift", 5, None) in frames


def test_test_conventions_of_the_new_ecosystems():
    assert all(is_test_path(p) for p in ["spec/models/cart_spec.rb", "tests/Unit/InvoiceTest.php",
                                          "Shop.Tests/LedgerTests.cs", "Tests/ShopTests/BasketTests.swift",
                                          "src/test/scala/shop/CatalogSpec.scala"])
    assert not any(is_test_path(p) for p in SOURCES)
