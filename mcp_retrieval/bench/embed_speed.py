"""Raw embedding throughput on real chunks, one configuration per process (so peak RSS is its own).

    python -m mcp_retrieval.bench embed_speed --index-db /path/to/index.db \\
        [--n 800] [--batch 16] [--max-tokens 256] [--order sorted|shuffled] [--no-arena] [--threads N]

Reads `--n` source chunks (what the indexer embeds: header + text) from a built index, embeds
them with the MiniLM int8 model through fastembed and prints chunks/s and peak RSS as JSON.
Run it once per setting to compare batch sizes, input lengths, ordering and onnxruntime's arena.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import sqlite3
import tempfile
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m mcp_retrieval.bench embed_speed")
    ap.add_argument("--index-db", required=True)
    ap.add_argument("--n", type=int, default=800)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--order", choices=["sorted", "shuffled"], default="sorted")
    ap.add_argument("--no-arena", action="store_true")
    ap.add_argument("--threads", type=int, default=None, help="onnxruntime intra-op threads (default: all cores)")
    args = ap.parse_args(argv)
    from fastembed import TextEmbedding
    from fastembed.common.model_description import ModelSource, PoolingType

    from mcp_retrieval.indexers.embed import DIM, _model_folder, embed_text, model_id

    rows = sqlite3.connect(args.index_db).execute("SELECT header, text FROM chunks WHERE priority=0").fetchall()
    random.Random(7).shuffle(rows)
    texts = [embed_text(h, t) for h, t in rows[: args.n]]
    cache = Path(tempfile.mkdtemp(prefix="mcp-retrieval-embed-speed-"))
    folder = _model_folder(cache, args.max_tokens)
    name = "local/speed-" + model_id(args.max_tokens)
    TextEmbedding.add_custom_model(model=name, pooling=PoolingType.MEAN, normalization=True, dim=DIM,
                                   model_file="model.onnx", sources=ModelSource(hf=name))
    model = TextEmbedding(name, specific_model_path=str(folder), cache_dir=str(cache / "fe"), local_files_only=True,
                          enable_cpu_mem_arena=not args.no_arena, threads=args.threads)
    if args.order == "sorted":
        texts.sort(key=len)
    list(model.embed(texts[:32], batch_size=args.batch))  # warm up
    t0 = time.perf_counter()
    list(model.embed(texts, batch_size=args.batch))
    seconds = time.perf_counter() - t0
    print(json.dumps({"chunks": len(texts), "batch": args.batch, "max_tokens": args.max_tokens, "order": args.order,
                      "arena": not args.no_arena, "threads": args.threads, "chunks_per_s": round(len(texts) / seconds, 1),
                      "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}))
    return 0
