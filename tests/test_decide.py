"""know or miss: an everyday question whose words the workspace uses is answered, a question about
what the workspace does not contain is a miss (the shipped learned models; a real index, a real
decision)."""

from __future__ import annotations

import pytest

from mcp_retrieval import Config, Engine
from mcp_retrieval.decide import Evidence, KnowModel, decide, shipped_models
from mcp_retrieval.models import Know, Miss
from mcp_retrieval.workspace import Workspace


def evidence(coverage: float, known: float, head: float, common: tuple[float, float, float] = (0.5, 0.3, 0.8),
             dense: float = 0.0) -> Evidence:
    """`common`: how common the known words are in the workspace (mean, least, share above 0.3)."""
    mean, least, share = common
    return Evidence(coverage, dense, False, False, None, 1.0, 0.1, known_words=known, head_coverage=head,
                    common_mean=mean, common_least=least, common_share=share)


RARE = (0.15, 0.05, 0.1)  # the few words an off-topic question shares with code: rare in it


def test_common_words_the_workspace_knows_are_an_answer_and_unknown_or_rare_words_a_miss():
    assert isinstance(decide(evidence(0.25, 1.0, 0.5), has_vectors=False), Know)
    assert isinstance(decide(evidence(0.6, 1.0, 0.6), has_vectors=False), Know)  # one chunk covers most of it
    assert isinstance(decide(evidence(0.25, 0.5, 0.5, (0.2, 0.1, 0.3)), has_vectors=False), Miss)  # words it never uses
    assert isinstance(decide(evidence(0.2, 1.0, 0.4, (0.12, 0.05, 0.0)), has_vectors=False), Miss)  # known, but rare
    assert isinstance(decide(evidence(0.1, 0.3, 0.1, RARE), has_vectors=False), Miss)


def test_a_models_similarity_decides_alone_only_where_the_model_says_it_may():
    close = evidence(0.1, 0.5, 0.1, RARE, dense=0.7)
    assert isinstance(decide(close, has_vectors=True), Know)  # a sentence model's 0.7 is a match
    assert isinstance(decide(close, has_vectors=True, similarity_decides=False), Miss)  # a token table's is not
    assert isinstance(decide(evidence(0.25, 1.0, 0.5, dense=0.6), has_vectors=True, similarity_decides=False), Know)
    assert isinstance(decide(evidence(0.3, 1.0, 0.5, dense=0.2), has_vectors=True), Know)  # the words hold it
    assert isinstance(decide(evidence(0.1, 0.5, 0.1, RARE, dense=0.2), has_vectors=True), Miss)  # weak on both sides


def test_anchored_evidence_is_an_answer_whatever_the_model_says():
    anchored = Evidence(0.0, 0.0, False, True, None, 1.0, 0.0, known_words=0.0, head_coverage=0.0,
                        common_mean=0.0, common_least=0.0, common_share=0.0)
    assert isinstance(decide(anchored, has_vectors=False), Know)
    assert isinstance(decide(anchored, has_vectors=True, similarity_decides=False), Know)


def test_the_shipped_models_load_and_a_malformed_one_is_refused():
    assert set(shipped_models()) == {"lexical", "static"}
    model = shipped_models()["lexical"]
    assert "dense_top" not in model.features and 0 < model.threshold < 1
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
    known = lambda words: sum(v > 0 for v in lexical.commonness(words))  # noqa: E731
    assert known(["discounting", "taxes", "halving"]) == 3  # the code says discount, tax, halves
    assert known(["mongolia", "walnuts", "discounts"]) == 1


def test_commonness_reads_each_words_most_common_form(lexical_engine):
    lexical = lexical_engine.retriever.lexical
    common = lexical.commonness(["discount", "discounting", "mongolia"])
    assert common[0] > 0 and common[1] == common[0]  # `discounting` counts the code's `discount`
    assert common[2] == 0.0
    assert all(0.0 <= v <= 1.0 for v in common)
