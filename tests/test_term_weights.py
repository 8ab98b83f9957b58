"""A titled question's words weigh by where they stand (title, quoted code, digits, whole names),
in the server's own BM25 query over a real Tantivy index; an untitled question is searched as
before; the shipped weights load and say what they were learned on."""

from collections import Counter

from mcp_retrieval import term_weights
from mcp_retrieval.indexers.analysis import query_terms
from mcp_retrieval.indexers.update import Indexer
from mcp_retrieval.term_weights import FEATURES, TermWeigher, term_features

ISSUE = """Cache expiry ignores the refresh window
After upgrading to 2.4.1 the worker logs `refresh_token` twice and the session handler retries
the session handler and the session handler again, see session handler line 88."""


def test_features_read_the_title_the_quoted_code_digits_and_whole_names():
    features = term_features(ISSUE, query_terms(ISSUE))
    title, code, digit, compound = (FEATURES.index(f) for f in ("title", "code", "digit", "compound"))
    assert features["expiry"][title] == 1 and features["handler"][title] == 0
    assert features["refresh_token"][code] == 1 and features["refresh_token"][compound] == 1
    assert features["token"][code] == 1 and features["token"][compound] == 0  # a part, not the whole name
    assert features["2.4.1"][digit] == 1 and features["88"][digit] == 1 and features["cache"][digit] == 0


def test_a_question_without_a_title_is_weighed_alike():
    weigher = TermWeigher("test", (1.0, 1.0, -1.0, 1.0))
    assert weigher("cache expiry refresh window", Counter(["cache", "expiry"])) is None
    assert term_features("cache expiry", Counter(["cache"])) is None


def test_the_title_outweighs_the_story_in_the_lexical_search(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    (root / "expiry.py").write_text("def refresh_window(cache):\n    # cache expiry ignores nothing\n"
                                    "    return cache.expiry\n")
    (root / "handler.py").write_text("def session_handler(worker):\n    # session handler retries the session\n"
                                     "    return worker.session.handler.retries\n")
    indexer = Indexer(root, tmp_path / "idx", None, None)
    indexer.sync()
    paths = {c.id: c.path for p in ("expiry.py", "handler.py") for c in indexer.store.chunks_for_path(p)}

    def first(weigher):
        return paths[indexer.lexical.search(ISSUE, 5, weigh=weigher)[0][0]]

    assert first(None) == "handler.py"  # the story's repeated words win when every term weighs alike
    assert first(TermWeigher("test", (1.5, 0.0, 0.0, 0.0))) == "expiry.py"


def test_the_shipped_weights_load_with_one_weight_per_feature():
    weigher = term_weights.shipped()
    assert weigher is not None and weigher.version and len(weigher.weights) == len(FEATURES)
