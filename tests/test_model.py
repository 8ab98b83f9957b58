"""The real embedding model, where meaning matters."""

import numpy as np

from mcp_retrieval.indexers.embed import DIM, MODEL_SHA256, _sha256, _weights_path
from mcp_retrieval import Engine
from mcp_retrieval.workspace import Workspace


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
    r = Workspace.single(engine).context("what does it cost to deliver a heavy package quickly", debug=True)
    assert r.know is not None
    assert r.chunks[0].path in ("engine/src/lib.rs", "docs/guide.md")
    assert "dense" in r.chunks[0].tiers
    again = engine.reindex(full=True)
    assert again.chunks_embedded == 0 and again.embeddings_reused == 0 or again.chunks_embedded == 0
    engine.close()


def test_questions_about_what_the_workspace_does_not_hold_stay_misses_with_vectors(config, minilm, tmp_path):
    config.cache_dir = tmp_path / "cache"
    engine = Engine(config, embedder=minilm)
    engine.reindex()
    try:
        ws = Workspace.single(engine)
        for question in ("recipe for banana bread with walnuts", "who won the football world cup in 1998",
                         "what is the capital of Mongolia", "genome sequence alignment scoring"):
            assert ws.packet(question).miss is not None, question
        assert ws.packet("cart items and discount codes").know is not None
    finally:
        engine.close()


def test_a_pasted_reports_title_is_embedded_on_its_own(config, minilm, tmp_path):
    """A pasted report's logs, embedded with its title, outscore its subject in the `dense` tier;
    the title embedded alone, as its own tier (`dense_title`), keeps the code the subject means
    first there (docs/BENCHMARKS-history.md 23)."""
    (config.root / "ops").mkdir()
    (config.root / "ops" / "heartbeat.py").write_text(
        "import logging\n\nlog = logging.getLogger('worker')\n\n\n"
        "def report_heartbeat(worker, queue):\n"
        "    # a worker is alive: its queue depth and uptime\n"
        "    log.info('worker[%s] heartbeat ok, queue depth %d, uptime %dh', worker.id, len(queue), worker.uptime)\n")
    config.cache_dir = tmp_path / "cache"
    engine = Engine(config, embedder=minilm)
    engine.reindex()
    logs = "\n".join(f"INFO worker[{i}] heartbeat ok, queue depth {i * 7}, uptime {i}h" for i in range(12))
    report = f"What does it cost to deliver a heavy package quickly?\n\n### Logs\n\n```\n{logs}\n```\n"

    def first(weight, tier):
        engine.config.tier_weights["dense_title"] = weight
        ranked = engine._rank(report, [], None, None, graph=False).candidates
        return next((c.chunk.path for c in ranked if c.ranks.get(tier) == 1), None)
    assert first(0.0, "dense_title") is None  # off: not embedded
    assert first(0.6, "dense") == "ops/heartbeat.py"  # the whole report: its logs
    assert first(0.6, "dense_title") in ("engine/src/lib.rs", "docs/guide.md")  # the title: its subject
    engine.close()
