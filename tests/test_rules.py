"""The rules that can be switched off are settings of a root (`Config.rules`), in force for the
requests that root answers: two roots with different rules answer side by side, each by its own."""

from concurrent.futures import ThreadPoolExecutor

import pytest

from mcp_retrieval.rules import DEFAULT, Rules, applied, current
from mcp_retrieval.stages import StageLog
from tests.conftest import engine_over

SOURCES = {
    "shop/cart.py": "def apply_discount(cart, rate):\n    \"\"\"Apply a discount rate to every item of the cart.\"\"\"\n"
                    "    for item in cart.items:\n        item.price = item.price * (1 - rate)\n    return cart\n",
    "tests/test_cart.py": "from shop.cart import apply_discount\n\n\ndef test_apply_discount_twice(cart):\n"
                          "    apply_discount(cart, 0.1)\n    apply_discount(cart, 0.1)\n"
                          "    assert cart.items[0].price == 81\n",
}
REPORT = ("apply_discount applies the discount twice\n\nWhen I call apply_discount on a cart with a rate of 0.1 "
          "twice, every item of the cart loses the discount twice over and the price of the item is wrong. "
          "I expected apply_discount to apply the discount rate once per cart item. The test "
          "test_apply_discount_twice shows the price of the first item after two calls. "
          "This happens with every cart I tried, whatever the rate of the discount is, and it did not "
          "happen before the last release of the shop package.\n")


def test_a_rule_changed_by_name_and_an_unknown_name_is_a_clear_error():
    assert Rules().with_changes(continuations=False) == Rules(continuations=False)
    with pytest.raises(ValueError, match="no such rule: contnuations"):
        Rules().with_changes(contnuations=False)


def test_rules_in_force_are_the_blocks_own_and_restored_after_it():
    assert current() is DEFAULT
    with applied(Rules(tokens_per_chunk=None)):
        assert current().tokens_per_chunk is None
        with ThreadPoolExecutor(1) as pool:  # another thread is outside the block
            assert pool.submit(current).result() is DEFAULT
    assert current() is DEFAULT


ENVIRONMENT = "\n\nEnvironment:\npython: 3.11.7\nnumpy: 1.26.4\nshop: 2.0.1\npytest: 8.0.0\n"


def _question_read(engine) -> str:
    """The question as the engine's stages read it (`Ranked.query`)."""
    return engine.gather(REPORT + ENVIRONMENT, [], [], None, StageLog()).ranked.query


def test_two_roots_with_different_rules_answer_at_once_each_by_its_own(tmp_path):
    served = engine_over(SOURCES, tmp_path / "a")
    flipped = engine_over(SOURCES, tmp_path / "b")
    flipped.config.rules = Rules(environment_set_aside=False)
    try:
        alone = _question_read(served), _question_read(flipped)
        assert "numpy" not in alone[0] and "numpy" in alone[1]  # the dump is set aside only where the rule is on
        with ThreadPoolExecutor(2) as pool:  # side by side, as a workspace of two roots asks them
            together = tuple(pool.map(_question_read, [served, flipped]))
        assert together == alone
    finally:
        served.close(), flipped.close()
