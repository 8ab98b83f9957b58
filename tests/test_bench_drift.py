"""`bench drift`: a long-lived index against a fresh one over real checkouts (real git)."""

from __future__ import annotations

import json
import shutil

import pytest

from mcp_retrieval.bench import drift
from tests.test_bench_commits import commit, git

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

WORDS = ["invoice", "refund", "ledger", "shipping", "parcel", "coupon", "tariff", "voucher"]


def module(n: int, version: int) -> str:
    return "\n\n".join(f"def {WORDS[(n + f + version) % 8]}_{n}_{f}(order):\n"
                       f"    return order.{WORDS[(n * 3 + f) % 8]} + {version}\n" for f in range(3))


def test_drift_reports_both_indexes_against_a_fresh_one(tmp_path, capsys):
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q")
    bases = []
    for version in range(2):  # the second commit rewrites half of the files
        files = {f"shop/mod_{n}.py": module(n, version) for n in range(20) if version == 0 or n % 2 == version % 2}
        bases.append(commit(repo, files, f"version {version}"))
    instances = tmp_path / "instances.jsonl"
    instances.write_text("".join(json.dumps({"repo": "o/shop", "instance_id": f"o__shop-{n}", "base_commit": sha,
                                             "problem_statement": f"the {WORDS[n]} and {WORDS[n + 1]} are wrong"})
                                 + "\n" for n, sha in enumerate(bases)))
    assert drift.main(["--instances", str(instances), "--repo", f"o/shop={repo / '.git'}", "--steps", "2",
                       "--work", str(tmp_path / "work")]) == 0
    rows = {line.split("|")[1].strip(): line.split("|")[2:-1] for line in capsys.readouterr().out.splitlines()
            if line.startswith("| ") and "---" not in line and "index" not in line}
    assert set(rows) == {"rebuild at 20%", "never rebuilt", "fresh"}
    assert rows["rebuild at 20%"][0].split()[-1] == "0.00"  # rebuilt after every checkout here
    assert rows["rebuild at 20%"][3].strip() == "0.00%"  # so it scores as the fresh index (ties may swap)
    assert float(rows["never rebuilt"][0].split()[-1]) > 0.2 and rows["never rebuilt"][3].strip() != "0.00%"
