"""The learned file ranker: the shipped model loads and matches this version's features, packet
orders files with it and, with debug, says which features placed each file."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from mcp_retrieval.file_features import FEATURES, file_features
from mcp_retrieval.file_scorer import FileRanker, file_scores, shipped
from mcp_retrieval.workspace import Workspace


def test_the_shipped_model_matches_this_versions_features():
    model = shipped()
    assert model is not None and model.weights.shape == (len(FEATURES),) and model.temperature > 0
    data = json.loads(resources.files("mcp_retrieval.weights").joinpath("file_ranker.json").read_text())
    assert data["trained_on"]["repositories"] >= 50 and "figures" in data


def test_a_model_of_other_features_is_refused():
    data = json.loads(resources.files("mcp_retrieval.weights").joinpath("file_ranker.json").read_text())
    with pytest.raises(ValueError):
        FileRanker.from_dict({**data, "features": data["features"][:-1]})


def test_packet_explains_each_files_place_with_debug(engine):
    ws = Workspace.single(engine)
    plain = ws.packet("apply a discount code to the cart total")
    assert all(i.contributions is None for i in plain.items)
    explained = ws.packet("apply a discount code to the cart total", debug=True)
    assert [i.path for i in explained.items] == [i.path for i in plain.items]
    assert explained.items[0].contributions and set(explained.items[0].contributions) <= set(FEATURES)
    files_stage = next(s for s in explained.debug.stages if s.name == "files")
    assert "learned" in files_stage.detail


def test_learned_scores_put_the_best_file_at_one(engine):
    ranked = engine._rank("apply a discount code to the cart total", [], None, None)
    keys, rows = file_features("apply a discount code to the cart total", ranked.candidates)
    scores = file_scores(shipped(), "apply a discount code to the cart total", ranked.candidates)
    assert set(scores) == set(keys) and max(scores.values()) == 1.0 and all(0 < v <= 1 for v in scores.values())


def test_a_file_named_in_another_word_form_of_the_question_covers_it():
    """"argument validation helpers" is about `Validate.java` and `validateArguments`: beside the
    exact word matches, the file ranker reads the same matches between English stems."""
    from mcp_retrieval.indexers.store import StoredChunk
    from mcp_retrieval.retrieve import Candidate

    def candidate(path: str, symbol: str) -> Candidate:
        chunk = StoredChunk(id=path, path=path, start_line=1, end_line=9, symbol=symbol, kind="method",
                            language="java", header="", text="", sha256="", tokens=9, embedded=False)
        return Candidate(chunk=chunk, score=1.0)

    keys, rows = file_features("argument validation helpers",
                               [candidate("src/lang3/Validate.java", "Validate.validateArguments"),
                                candidate("src/lang3/Range.java", "Range.between")])
    column = {name: i for i, name in enumerate(FEATURES)}
    validate, other = rows[keys.index(("", "src/lang3/Validate.java"))], rows[keys.index(("", "src/lang3/Range.java"))]
    assert validate[column["stem_cover"]] == 0.0 and validate[column["stem_cover_stemmed"]] == 1.0
    assert validate[column["symbol_cover_stemmed"]] == 1.0 and validate[column["path_cover_stemmed"]] > 0
    assert other[column["stem_cover_stemmed"]] == other[column["path_cover_stemmed"]] == 0


def test_a_file_whose_code_holds_the_questions_words_covers_them_by_its_text():
    """"null-safe string operations" is answered by `StringUtils.java`, whose name holds one of the
    words and whose code holds the rest: the text cover reads each pooled chunk's header and first
    TEXT_CHARS characters, lowercased, for the question's stems (`pars` meets `parseConfig`)."""
    from mcp_retrieval.file_features import TEXT_CHARS
    from mcp_retrieval.indexers.store import StoredChunk
    from mcp_retrieval.retrieve import Candidate

    def candidate(path: str, text: str, start: int = 1) -> Candidate:
        chunk = StoredChunk(id=f"{path}:{start}", path=path, start_line=start, end_line=start + 9, symbol=None,
                            kind="method", language="java", header="", text=text, sha256="", tokens=9, embedded=False)
        return Candidate(chunk=chunk, score=1.0)

    keys, rows = file_features("null-safe string parsing", [
        candidate("src/StringUtils.java", "public static boolean isEmpty(CharSequence cs) { // null-safe"),
        candidate("src/StringUtils.java", "String parseConfig(String s)", start=20),
        candidate("src/Range.java", " " * TEXT_CHARS + "null string parse"),  # past what is read
    ])
    column = FEATURES.index("text_cover")
    utils, other = rows[keys.index(("", "src/StringUtils.java"))], rows[keys.index(("", "src/Range.java"))]
    assert utils[column] == 1.0  # null, safe, string, pars: each in one of its two chunks
    assert other[column] == 0.0


def test_a_source_file_whose_inline_tests_matched_best_is_still_source():
    """ripgrep's `printer/src/json.rs` answered a pasted issue best with a chunk of its own
    `#[cfg(test)] mod tests`: the file is the source the fix changes, so the file ranker's `test`
    reads its path; a test file stays a test, and the chunk itself is still demoted as a test."""
    from mcp_retrieval.indexers.store import StoredChunk
    from mcp_retrieval.retrieve import Candidate
    from mcp_retrieval.rules import Rules, applied

    def candidate(path: str, symbol: str, score: float) -> Candidate:
        chunk = StoredChunk(id=f"{path}:{symbol}", path=path, start_line=1, end_line=9, symbol=symbol, kind="function",
                            language="rust", header="", text="", sha256="", tokens=9, embedded=False)
        return Candidate(chunk=chunk, score=score)

    pool = [candidate("crates/printer/src/json.rs", "tests.max_matches_after_context", 1.0),
            candidate("crates/printer/src/json.rs", "JSONSink.sink_context", 0.4),
            candidate("tests/json.rs", "max_count", 0.9)]
    column = FEATURES.index("test")
    keys, rows = file_features("--max-count with --context prints too much", pool)
    assert rows[keys.index(("", "crates/printer/src/json.rs"))][column] == 0.0
    assert rows[keys.index(("", "tests/json.rs"))][column] == 1.0
    with applied(Rules(file_test_by_path=False)):
        keys, rows = file_features("--max-count with --context prints too much", pool)
    assert rows[keys.index(("", "crates/printer/src/json.rs"))][column] == 1.0
