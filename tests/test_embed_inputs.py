"""What the vectors are made from: model identity per input length, length-ordered batches, and
an index whose embedding model changed is re-embedded rather than mixed."""

import numpy as np

from indexers.embed import MODEL_ID, EmbeddingCache, HashEmbedder, model_id
from indexers.update import Indexer


def test_another_input_length_is_another_model():
    assert model_id(256) == MODEL_ID and model_id(128) != MODEL_ID


def test_length_ordered_bulk_embedding_returns_vectors_in_the_callers_order(minilm):
    texts = ["def add(a, b):\n    return a + b\n" * 8, "x", "class Cart:\n    pass\n" * 3, "import os", "y = 2 * x"]
    together = minilm.embed(texts)  # more than QUERY_TEXTS: the bulk session, in length order
    one_by_one = np.vstack([minilm.embed([t]) for t in texts])  # the resident query session
    assert np.allclose(together, one_by_one, atol=1e-4)
    minilm.release()  # the bulk session is dropped and made again on demand
    assert np.allclose(minilm.embed(texts), together, atol=1e-4)


class OtherHash(HashEmbedder):
    model_id = "another-hash-embedder"


def test_a_changed_embedding_model_recomputes_every_vector(workspace, tmp_path):
    cache = EmbeddingCache(tmp_path / "cache.sqlite")
    first = Indexer(workspace, tmp_path / "idx", cache, HashEmbedder())
    first.sync()
    embedded, _ = first.embed_pending()
    assert embedded > 0 and first.store.counts()["vectors_pending"] == 0
    first.store.close()
    second = Indexer(workspace, tmp_path / "idx", cache, OtherHash())
    assert second.vectors.count() == 0
    assert second.store.counts()["vectors_pending"] == second.store.counts()["chunks"]
    again, reused = second.embed_pending()
    assert again + reused == second.store.counts()["chunks"] and second.vectors.count() == again + reused
    second.store.close()
    third = Indexer(workspace, tmp_path / "idx", cache, OtherHash())  # same model: nothing to redo
    assert third.store.counts()["vectors_pending"] == 0
