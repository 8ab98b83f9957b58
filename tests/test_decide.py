"""know or miss: an everyday question whose words the workspace uses is answered, a question about
what the workspace does not contain is a miss (the shipped learned models; a real index, a real
decision)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_retrieval import Config, Engine
from mcp_retrieval.decide import Evidence, KnowModel, decide, shipped_models
from mcp_retrieval.indexers.analysis import MAX_TERM_LEN, term_set, terms
from mcp_retrieval.models import Know, Miss
from mcp_retrieval.workspace import Workspace


def evidence(coverage: float, known: float, head: float, dense: float = 0.0, anchored: bool = False) -> Evidence:
    return Evidence(coverage, dense, False, anchored, None, 1.0, 0.1, known_words=known, head_coverage=head)


def test_without_vectors_spread_words_the_workspace_knows_are_an_answer_and_unknown_words_a_miss():
    assert isinstance(decide(evidence(0.25, 1.0, 0.5), has_vectors=False), Know)
    assert isinstance(decide(evidence(0.25, 0.5, 0.5), has_vectors=False), Miss)  # words it never uses
    assert isinstance(decide(evidence(0.25, 1.0, 0.1), has_vectors=False), Miss)  # known, yet not in the head
    assert isinstance(decide(evidence(0.3, 0.0, 0.0), has_vectors=False), Know)  # one chunk covers it


def test_a_models_similarity_decides_alone_only_where_the_model_says_it_may():
    close = evidence(0.1, 0.5, 0.1, dense=0.7)
    assert isinstance(decide(close, has_vectors=True), Know)  # a sentence model's 0.7 is a match
    assert isinstance(decide(close, has_vectors=True, similarity_decides=False), Miss)  # a token table's is not
    assert isinstance(decide(evidence(0.3, 0.0, 0.0, dense=0.2), has_vectors=True), Know)  # the words hold it
    assert isinstance(decide(evidence(0.1, 0.5, 0.1, dense=0.2), has_vectors=True), Miss)  # weak on both sides


def test_with_the_static_table_the_learned_model_decides():
    static = {"has_vectors": True, "similarity_decides": False}
    assert isinstance(decide(evidence(0.5, 1.0, 0.6, dense=0.6), **static), Know)
    assert isinstance(decide(evidence(0.25, 1.0, 0.5, dense=0.7), **static), Know)  # spread over the head
    # the rules would answer: one chunk holds a third of the words, the rest unknown, none near in meaning
    assert isinstance(decide(evidence(0.34, 0.34, 0.34, dense=0.3), **static), Miss)
    assert isinstance(decide(evidence(0.0, 0.0, 0.0, dense=0.3, anchored=True), **static), Know)  # anchored


def test_the_shipped_model_loads_and_a_malformed_one_is_refused():
    model = shipped_models()["static"]
    assert "dense_top" in model.features and 0 < model.threshold < 1
    with pytest.raises(ValueError):
        KnowModel.from_dict({"features": ["coverage", "no_such_feature"], "mean": [0, 0], "scale": [1, 1],
                             "weights": [1, 1], "bias": 0, "threshold": 0.5})
    with pytest.raises(ValueError):
        KnowModel.from_dict({"features": ["coverage"], "mean": [0], "scale": [0], "weights": [1], "bias": 0,
                             "threshold": 0.5})


@pytest.fixture
def lexical_engine(workspace, tmp_path):
    """The fixture workspace indexed without vectors."""
    config = Config.resolve(workspace, tmp_path / "index", persist_sessions=False, embedder="none")
    config.cache_dir = tmp_path / "cache"
    engine = Engine(config)
    engine.reindex()
    yield engine
    engine.close()


def test_off_topic_questions_stay_misses_on_a_real_index(lexical_engine):
    ws = Workspace.single(lexical_engine)
    for question in ("recipe for banana bread with walnuts", "who won the football world cup in 1998",
                     "what is the capital of Mongolia"):
        assert ws.packet(question).miss is not None, question
    assert ws.packet("cart items and discount codes").know is not None


def test_a_word_the_workspace_holds_in_another_form_is_known(lexical_engine):
    lexical = lexical_engine.retriever.lexical
    assert lexical.known(["discounting", "taxes", "halving"]) == 3  # the code says discount, tax, halves
    assert lexical.known(["mongolia", "walnuts", "discounts"]) == 1
    assert lexical.known(["applied"]) == 1  # the code says apply_discount: Snowball's stem is `appli`


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("abcXYZ_09 .\n(\u00e9"), max_size=300) | st.text(max_size=200))
def test_a_texts_term_set_is_the_set_of_its_terms(text):
    """`term_set` (the evidence reads chunks with it) splits each distinct identifier once; it must
    find exactly the terms `terms` finds, an overlong identifier left out alike."""
    long = "a" * (MAX_TERM_LEN + 1)
    for sample in (text, f"{text} {long}"):
        assert term_set(sample) == set(terms(sample))
