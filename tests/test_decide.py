"""know or miss without vectors: an everyday question whose words the workspace uses is answered,
a question about what the workspace does not contain is a miss (real index, real decision)."""

from __future__ import annotations

import pytest

from mcp_retrieval import Config, Engine
from mcp_retrieval.decide import Evidence, decide
from mcp_retrieval.models import Know, Miss
from mcp_retrieval.workspace import Workspace


def evidence(coverage: float, known: float, head: float) -> Evidence:
    return Evidence(coverage, 0.0, False, False, None, 1.0, 0.1, known_words=known, head_coverage=head)


def test_spread_words_the_workspace_knows_are_an_answer_and_unknown_words_a_miss():
    assert isinstance(decide(evidence(0.25, 1.0, 0.5), has_vectors=False), Know)
    assert isinstance(decide(evidence(0.25, 0.5, 0.5), has_vectors=False), Miss)  # words it never uses
    assert isinstance(decide(evidence(0.25, 1.0, 0.1), has_vectors=False), Miss)  # known, yet not in the head
    assert isinstance(decide(evidence(0.3, 0.0, 0.0), has_vectors=False), Know)  # one chunk covers it


def test_a_models_similarity_decides_alone_only_where_the_model_says_it_may():
    close = Evidence(0.1, 0.7, False, False, None, 1.0, 0.1, known_words=0.5, head_coverage=0.1)
    assert isinstance(decide(close, has_vectors=True), Know)  # a sentence model's 0.7 is a match
    assert isinstance(decide(close, has_vectors=True, similarity_decides=False), Miss)  # a token table's is not
    assert isinstance(decide(evidence(0.3, 0.0, 0.0), has_vectors=True, similarity_decides=False), Know)
    far = Evidence(0.3, 0.2, False, False, None, 1.0, 0.1, known_words=0.0, head_coverage=0.0)
    assert isinstance(decide(far, has_vectors=True), Know)  # the words hold it, though no chunk is near in meaning
    weak = Evidence(0.1, 0.2, False, False, None, 1.0, 0.1, known_words=0.5, head_coverage=0.1)
    assert isinstance(decide(weak, has_vectors=True), Miss)  # weak on both sides


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
