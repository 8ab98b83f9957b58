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
