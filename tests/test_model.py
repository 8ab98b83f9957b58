"""The real embedding model, where meaning matters."""

import numpy as np

from mcp_retrieval.indexers.embed import DIM, MODEL_SHA256, _sha256, _weights_path
from mcp_retrieval import Engine


def test_the_shipped_model_matches_its_pinned_checksum():
    assert _sha256(_weights_path()) == MODEL_SHA256


def test_embeddings_are_normalised_and_carry_meaning(minilm):
    v = minilm.embed(["how much does delivery cost", "shipping price computation", "a recipe for banana bread"])
    assert v.shape == (3, DIM)
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-3)
    assert v[0] @ v[1] > v[0] @ v[2] + 0.1


def test_a_paraphrased_question_finds_the_right_code_by_meaning(config, minilm, tmp_path):
    config.cache_dir = tmp_path / "cache"
    engine = Engine(config, embedder=minilm)
    engine.reindex()
    # No word of the question appears in the answer's code: only meaning connects them.
    r = engine.context("what does it cost to deliver a heavy package quickly", debug=True)
    assert r.know is not None
    assert r.chunks[0].path in ("engine/src/lib.rs", "docs/guide.md")
    assert "dense" in r.chunks[0].tiers
    again = engine.reindex(full=True)
    assert again.chunks_embedded == 0 and again.embeddings_reused == 0 or again.chunks_embedded == 0
    engine.close()
