"""`training.commit_code_pairs`: a commit's message paired with the chunk it changed (real git)."""

from __future__ import annotations

import shutil

import pytest

from tests.test_bench_commits import commit, git
from training.commit_code_pairs import pairs_of, query_of

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

BODY = "".join(f"    step_{i} = {i}  # one of the steps the cost takes\n" for i in range(25))
CART = (f"def subtotal(items):\n{BODY}    return sum(i.price for i in items)\n\n\n"
        f"def shipping(items):\n{BODY}    return 5\n")  # long enough to be chunks of their own


def test_the_pair_is_the_message_and_the_chunk_holding_the_change(tmp_path):
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q")
    commit(repo, {"shop/cart.py": CART}, "Add the cart module with subtotal and shipping costs")
    commit(repo, {"shop/cart.py": CART.replace("return 5", "return 0 if len(items) > 3 else 5")},
           "Free delivery for larger orders\n\nCustomers buying more than three things pay nothing.\n\nSigned-off-by: x")
    pairs = pairs_of(repo / ".git", "owner/shop", per_repo=10, scan=100)
    assert [p["query"] for p in pairs] == ["Free delivery for larger orders "
                                           "Customers buying more than three things pay nothing."]
    assert "def shipping" in pairs[0]["code"] and "subtotal" not in pairs[0]["code"].split("\n", 1)[1]
    assert pairs[0]["repo"] == "owner/shop" and pairs[0]["language"] == "python"


def test_a_long_message_is_cut():
    assert len(query_of("word " * 200)) == 300
