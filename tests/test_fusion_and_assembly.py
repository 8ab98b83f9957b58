import random

from hypothesis import given, settings
from hypothesis import strategies as st

from indexers.store import StoredChunk
from mcp_retrieval.assemble import HEADER_TOKENS, STUB_TOKENS, assemble, render_window
from mcp_retrieval.fusion import order, rrf
from mcp_retrieval.retrieve import Candidate


def make_candidate(i: int, tokens: int, score: float, text: str | None = None) -> Candidate:
    text = text or f"def function_{i}():\n    return value_{i} * unique_{i}\n"
    chunk = StoredChunk(f"id{i:04d}", f"pkg/mod{i % 7}.py", i * 10 + 1, i * 10 + 5, f"function_{i}", "function",
                        "python", f"pkg/mod{i % 7}.py", text, f"{i:064x}", tokens, True)
    return Candidate(chunk=chunk, raw={"lexical": score}, fused=score, score=score)


ranked_lists = st.dictionaries(st.sampled_from(["lexical", "dense", "path", "symbol"]),
                               st.lists(st.integers(0, 30).map(lambda n: f"d{n}"), max_size=25), min_size=1)


@given(ranked_lists, st.floats(0.1, 10), st.floats(-5, 5))
def test_rrf_order_is_unchanged_under_monotone_rescaling_of_raw_scores(lists, scale, shift):
    # Raw scores only decide the order inside a tier; rescaling them keeps each tier's order, so RRF agrees.
    raw = {t: {d: random.Random(d).random() for d in ids} for t, ids in lists.items()}
    by_raw = {t: sorted(dict.fromkeys(ids), key=lambda d: -raw[t][d]) for t, ids in lists.items()}
    by_scaled = {t: sorted(dict.fromkeys(ids), key=lambda d: -(raw[t][d] * scale + shift)) for t, ids in lists.items()}
    weights = {"lexical": 1.0, "dense": 0.8, "path": 1.2, "symbol": 1.2}
    assert order(rrf(by_raw, weights, 20)) == order(rrf(by_scaled, weights, 20))


def test_rrf_rewards_agreement_between_tiers():
    scores = rrf({"lexical": ["a", "b", "c"], "dense": ["b", "x", "y"]}, {"lexical": 1, "dense": 1}, k=20)
    assert order(scores)[0] == "b"


@settings(max_examples=200)
@given(st.lists(st.tuples(st.integers(1, 3000), st.floats(0.01, 1.0)), min_size=1, max_size=40),
       st.integers(256, 8000), st.integers(1, 64), st.sets(st.integers(0, 39), max_size=10))
def test_assembled_tokens_never_exceed_the_budget(specs, budget, max_chunks, delivered_idx):
    candidates = [make_candidate(i, tokens, score) for i, (tokens, score) in enumerate(specs)]
    delivered = {candidates[i].chunk.sha256 for i in delivered_idx if i < len(candidates)}
    placed = assemble(candidates, budget=budget, max_chunks=max_chunks, delivered=delivered)
    cost = sum(STUB_TOKENS if p.stub else p.candidate.chunk.tokens + HEADER_TOKENS for p in placed)
    assert cost <= budget
    assert sum(not p.stub for p in placed) <= max_chunks
    assert all(p.stub == (p.candidate.chunk.sha256 in delivered) for p in placed)
    scores = [p.candidate.score for p in placed]
    assert scores == sorted(scores, reverse=True)  # strongest evidence first


def test_near_duplicates_are_dropped_and_the_budget_goes_to_new_evidence():
    same = "def parse(x):\n    return int(x.strip()) + offset_value * factor_value\n"
    a, b = make_candidate(1, 50, 1.0, same), make_candidate(2, 50, 0.9, same)
    c = make_candidate(3, 50, 0.5)
    placed = assemble([a, b, c], budget=6000, max_chunks=10)
    ids = [p.candidate.chunk.id for p in placed]
    assert a.chunk.id in ids and c.chunk.id in ids and b.chunk.id not in ids


def test_delivered_chunks_become_stubs_that_free_budget_for_the_next_candidates():
    cands = [make_candidate(i, 400, 1.0 - i / 100) for i in range(10)]
    first = assemble(cands, budget=1500, max_chunks=20)
    delivered = {p.candidate.chunk.sha256 for p in first}
    second = assemble(cands, budget=1500, max_chunks=20, delivered=delivered)
    assert {p.candidate.chunk.id for p in second if p.stub} == {p.candidate.chunk.id for p in first}
    assert any(not p.stub for p in second)  # freed budget refilled with new evidence
    window = render_window(second)
    assert window.count("<mcp-retrieval:stub ") == len(first)
