"""What a cross-encoder costs per query on this machine, to size its pool and passage length.

    python -m mcp_retrieval.bench rerank_cost --index-db /path/to/index/index.db [--model DIR]

No cross-encoder weights are obtainable offline here, so by default the script builds a stand-in
with the architecture of ms-marco-MiniLM-L-6-v2 (6 layers, 384 wide, a one-logit head on [CLS])
from the installed MiniLM int8 encoder: its scores mean nothing, its cost is that of the real
model in int8 (an fp32 export is slower; pass `--model DIR` to time your own). Passages are real
chunks from the index; queries are short questions. Needs the `onnx` package (test extra).
Prints ms per query for each pool size x passage length, as a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

QUESTIONS = ["where is the cache invalidated", "how are arguments validated before the call",
             "what converts the result to a string", "which function parses the configuration file",
             "how are errors reported to the caller", "where is the default timeout set"]


def build_stand_in(folder: Path) -> Path:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from mcp_retrieval.indexers.embed import _weights_path, tokenizer_dir

    model = onnx.load(str(_weights_path()))
    graph = model.graph
    rng = np.random.default_rng(0)
    graph.initializer.extend([numpy_helper.from_array(np.array([0], dtype=np.int64), "cls_index"),
                              numpy_helper.from_array(rng.normal(0, 0.05, (384, 1)).astype(np.float32), "head_w")])
    graph.node.extend([helper.make_node("Gather", ["last_hidden_state", "cls_index"], ["cls"], axis=1),
                       helper.make_node("Squeeze", ["cls", "squeeze_axes"], ["cls_flat"]),
                       helper.make_node("MatMul", ["cls_flat", "head_w"], ["logits"])])
    graph.initializer.append(numpy_helper.from_array(np.array([1], dtype=np.int64), "squeeze_axes"))
    del graph.output[:]
    graph.output.append(helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1]))
    folder.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(folder / "model.onnx"))
    for name in ("tokenizer.json", "config.json", "special_tokens_map.json", "tokenizer_config.json"):
        shutil.copyfile(tokenizer_dir() / name, folder / name)
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config["model_max_length"] = 512
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    return folder


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m mcp_retrieval.bench rerank_cost")
    ap.add_argument("--index-db", required=True, help="index.db of a built index (passages)")
    ap.add_argument("--model", default=None, help="a cross-encoder folder (model.onnx + tokenizer files)")
    ap.add_argument("--pools", default="10,20,30")
    ap.add_argument("--chars", default="500,1000,2000")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    from fastembed.common.model_description import ModelSource
    from fastembed.rerank.cross_encoder import TextCrossEncoder

    work = Path(tempfile.mkdtemp(prefix="mcp-retrieval-ce-"))
    folder = Path(args.model) if args.model else build_stand_in(work / "stand-in")
    name = "local/cost-" + folder.name
    TextCrossEncoder.add_custom_model(model=name, sources=ModelSource(hf=name), model_file="model.onnx")
    model = TextCrossEncoder(name, specific_model_path=str(folder), cache_dir=str(work / "fe"), local_files_only=True)
    rows = sqlite3.connect(args.index_db).execute(
        "SELECT header, text FROM chunks WHERE priority=0 AND length(text) > 800").fetchall()
    random.Random(7).shuffle(rows)
    passages = [h + "\n" + t for h, t in rows[:200]]
    list(model.rerank(QUESTIONS[0], passages[:8], batch_size=8))  # warm up
    lines = ["| pairs per query | passage chars | ms per query p50 | p95 | pairs/s |", "|---|---|---|---|---|"]
    for pool in (int(p) for p in args.pools.split(",")):
        for chars in (int(c) for c in args.chars.split(",")):
            times = []
            for r in range(args.repeats):
                for i, q in enumerate(QUESTIONS):
                    start = (r * len(QUESTIONS) + i) * 7 % max(1, len(passages) - pool)
                    batch = [p[:chars] for p in passages[start:start + pool]]
                    t0 = time.perf_counter()
                    list(model.rerank(q, batch, batch_size=8))
                    times.append((time.perf_counter() - t0) * 1000)
            times.sort()
            p95 = times[min(len(times) - 1, int(0.95 * (len(times) - 1) + 0.5))]
            p50 = statistics.median(times)
            lines.append(f"| {pool} | {chars} | {p50:.0f} | {p95:.0f} | {pool / (p50 / 1000):.1f} |")
            print(lines[-1], flush=True)
    print("\n".join(lines))
    shutil.rmtree(work, ignore_errors=True)
    return 0
