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
