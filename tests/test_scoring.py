"""One function writes a candidate chunk's score (`scoring.rescore`), from evidence the stages
record; `debug` shows that evidence by name."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from mcp_retrieval import scoring
from mcp_retrieval.indexers.store import StoredChunk
from mcp_retrieval.retrieve import Candidate
from mcp_retrieval.workspace import Workspace

REPO = Path(__file__).resolve().parent.parent


def _candidate(score: float = 0.0) -> Candidate:
    chunk = StoredChunk(id="a", path="src/a.py", start_line=1, end_line=2, symbol="f", kind="function",
                        language="python", header="", text="def f(): pass", sha256="", tokens=5, embedded=False)
    return Candidate(chunk=chunk, score=score)


def test_the_score_is_base_times_factors_plus_the_files_share_at_least_what_it_inherits():
    c = _candidate()
    assert scoring.set_base(c, 0.5, {"test": 0.35, "conversation": 1.15}) == pytest.approx(0.5 * 0.35 * 1.15)
    assert scoring.multiply(c, "path_prefix", 1.2) == pytest.approx(0.5 * 0.35 * 1.15 * 1.2)
    assert scoring.share(c, 0.1) == pytest.approx(0.5 * 0.35 * 1.15 * 1.2 + 0.1)
    assert scoring.inherit(c, 0.05) == pytest.approx(0.5 * 0.35 * 1.15 * 1.2 + 0.1)  # lower: no change
    assert scoring.inherit(c, 0.9) == 0.9
    assert scoring.terms(c) == {"base": 0.5, "test": 0.35, "conversation": 1.15, "path_prefix": 1.2,
                                "shared": 0.1, "inherited": 0.9}
    scoring.set_base(c, 0.2)  # a new reading replaces every earlier piece of evidence
    assert c.score == 0.2 and scoring.terms(c) == {"base": 0.2}


def test_a_ceiling_holds_the_score_below_it():
    c = _candidate()
    scoring.set_base(c, 0.8)
    assert scoring.cap(c, 0.3) == 0.3 and scoring.cap(c, 0.5) == 0.3


def test_a_candidate_made_with_a_score_keeps_it_as_its_base():
    c = _candidate(0.7)
    assert c.base == 0.7 and scoring.share(c, 0.1) == pytest.approx(0.8)


def _score_writes(path: Path) -> list[int]:
    """Lines of `path` that assign or augment an attribute named `score`."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        lines += [node.lineno for t in targets if isinstance(t, ast.Attribute) and t.attr == "score"]
    return lines


def test_no_module_but_scoring_writes_a_candidates_score():
    sources = [p for folder in ("mcp_retrieval", "indexers") for p in (REPO / folder).rglob("*.py")
               if "bench" not in p.parts]
    writers = {str(p.relative_to(REPO)): lines for p in sources if (lines := _score_writes(p))}
    assert set(writers) == {"mcp_retrieval/scoring.py"}, writers


def test_debug_shows_how_each_score_was_made(engine):
    ws = Workspace.single(engine)
    question = "apply a discount code to the cart total"
    plain = ws.packet(question)
    assert all(i.terms is None for i in plain.items)
    explained = ws.packet(question, debug=True, path_prefix="src/shop")
    assert explained.items and any(i.path.startswith("src/shop/") for i in explained.items)
    for item in explained.items:
        assert "base" in item.terms
        assert ("path_prefix" in item.terms) == item.path.startswith("src/shop/")
    window = ws.context(question, debug=True)
    assert window.chunks and all(c.terms and "base" in c.terms for c in window.chunks if not c.delivered)
    assert all(c.terms is None for c in ws.context(question).chunks)
