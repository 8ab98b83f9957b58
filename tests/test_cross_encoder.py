"""The cross-encoder adapter, exercised with tiny ONNX models generated here (no real weights exist offline)."""

import shutil

import onnx
import pytest
from onnx import TensorProto, helper

from mcp_retrieval.indexers.embed import tokenizer_dir
from mcp_retrieval import Engine
from mcp_retrieval.rerank import CrossEncoderReranker, StructuralReranker, signals_for
from mcp_retrieval.workspace import Workspace


def write_model(folder, *, broken_output: bool = False):
    """A 'cross-encoder' whose score is the mean token id (or infinity when broken)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("tokenizer.json", "config.json", "special_tokens_map.json", "tokenizer_config.json"):
        shutil.copy(tokenizer_dir() / name, folder / name)
    ids = helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"])
    logits = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1])
    nodes = [helper.make_node("Cast", ["input_ids"], ["f"], to=TensorProto.FLOAT),
             helper.make_node("ReduceMean", ["f"], ["m"], axes=[1], keepdims=1)]
    if broken_output:
        nodes.append(helper.make_node("Constant", [], ["zero"], value=helper.make_tensor("z", TensorProto.FLOAT, [], [0.0])))
        nodes.append(helper.make_node("Div", ["m", "zero"], ["logits"]))
    else:
        nodes.append(helper.make_node("Identity", ["m"], ["logits"]))
    graph = helper.make_graph(nodes, "tiny-cross-encoder", [ids], [logits])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, folder / "model.onnx")
    return folder


def test_a_configured_cross_encoder_reorders_the_pool(engine, tmp_path):
    folder = write_model(tmp_path / "ce")
    reranker = CrossEncoderReranker(folder, tmp_path / "fe", StructuralReranker())
    ranked = engine._rank("cart total discount tax", [], None, None)
    out = reranker.rerank(ranked.candidates, signals_for("cart total discount tax", [], "default"))
    assert len(out) == len(ranked.candidates)
    head = out[: CrossEncoderReranker.HEAD]
    assert all("rerank" in c.raw for c in head)
    assert [c.score for c in head] == sorted((c.score for c in head), reverse=True)


def test_a_spent_time_budget_stops_reading_after_one_batch_and_keeps_the_rest_below(engine, tmp_path):
    reranker = CrossEncoderReranker(write_model(tmp_path / "ce"), tmp_path / "fe", StructuralReranker(), time_budget_s=0)
    ranked = engine._rank("cart total discount tax", [], None, None)
    assert len(ranked.candidates) > CrossEncoderReranker.BATCH
    out = reranker.rerank(ranked.candidates, signals_for("cart total discount tax", [], "default"))
    read = [c for c in out if "rerank" in c.raw]
    assert len(read) == CrossEncoderReranker.BATCH and out[: len(read)] == read
    assert max(c.score for c in out[len(read):]) < min(c.score for c in read)


def test_a_cross_encoder_that_fails_at_run_time_falls_back_to_the_structural_order(config, tmp_path):
    from mcp_retrieval.indexers.embed import HashEmbedder

    config.cache_dir = tmp_path / "cache"
    config.cross_encoder_dir = write_model(tmp_path / "broken", broken_output=True)
    engine = Engine(config, embedder=HashEmbedder())
    engine.reindex()
    assert engine.reranker.name == "cross-encoder"
    r = Workspace.single(engine).context("apply_discount", debug=True)
    rerank = next(s for s in r.debug.stages if s.name == "rerank")
    assert rerank.status == "error" and r.debug.reranker == "structural"
    assert r.chunks[0].symbol == "apply_discount"
    engine.close()


def test_a_missing_or_unloadable_cross_encoder_degrades_or_errors_as_asked(config, tmp_path):
    from mcp_retrieval.indexers.embed import HashEmbedder

    config.cache_dir = tmp_path / "cache"
    config.cross_encoder_dir = tmp_path / "nothing-here"
    assert Engine(config, embedder=HashEmbedder()).reranker.name == "structural"  # auto: warn and fall back
    config.rerank = "cross-encoder"
    with pytest.raises(ValueError, match="cross-encoder"):
        Engine(config, embedder=HashEmbedder())
