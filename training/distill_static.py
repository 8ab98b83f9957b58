"""Distil all-MiniLM-L6-v2 into a static token table (Model2Vec's recipe, in numpy + onnxruntime).

    python -m training.distill_static --corpus /tmp/ranker-work-a/trees --out mcp_retrieval/weights/static_minilm.npz

1. Every WordPiece token of MiniLM's vocabulary is run through the shipped int8 ONNX model alone
   (`[CLS] token [SEP]`), and its output is mean-pooled: one 384-dim vector per token.
2. PCA to 128 dimensions (a quarter of MiniLM's 384 wide; 256 did no better on semble_dev and
   64 lost 0.009: docs/BENCHMARKS-history.md 42c).
3. Each token is weighted by a/(a + p(token)) (smooth inverse frequency, a = 1e-3), p counted over
   the source files under `--corpus` tokenized as the embedder tokenizes them (identifiers split
   into their parts first), so that frequent tokens (`self`, `the`, `=`) weigh little.
The table is saved as float16 with its vocabulary size and a version; `indexers.static` reads it,
checks its sha256, and embeds a text as the normalised mean of its tokens' rows: no transformer
at index or query time. Deterministic; ~3 minutes on two cores.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

DIMS = 128
SIF_A = 1e-3
BATCH = 512
CORPUS_SUFFIXES = (".py", ".go", ".rs", ".js", ".ts", ".java", ".c", ".h", ".cpp", ".rb", ".php", ".cs", ".kt",
                   ".swift", ".scala", ".ex", ".hs", ".lua", ".sh", ".md")


def token_vectors() -> np.ndarray:
    import onnxruntime as ort
    from tokenizers import Tokenizer

    from mcp_retrieval.indexers.embed import _weights_path, tokenizer_dir

    tokenizer = Tokenizer.from_file(str(tokenizer_dir() / "tokenizer.json"))
    vocab = tokenizer.get_vocab_size()
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    session = ort.InferenceSession(str(_weights_path()), options, providers=["CPUExecutionProvider"])
    out = np.zeros((vocab, 384), dtype=np.float32)
    for start in range(0, vocab, BATCH):
        ids = np.arange(start, min(vocab, start + BATCH), dtype=np.int64)
        input_ids = np.stack([np.full_like(ids, cls), ids, np.full_like(ids, sep)], axis=1)
        hidden = session.run(None, {"input_ids": input_ids, "attention_mask": np.ones_like(input_ids),
                                    "token_type_ids": np.zeros_like(input_ids)})[0]
        out[start:start + len(ids)] = hidden.mean(axis=1)
    return out


def token_counts(corpus: Path, limit_files: int) -> Counter:
    from mcp_retrieval.indexers.static import tokenize_batch

    texts, counts = [], Counter()
    files = [p for p in sorted(corpus.rglob("*")) if p.suffix in CORPUS_SUFFIXES and p.is_file()][:limit_files]
    for path in files:
        try:
            texts.append(path.read_text(encoding="utf-8", errors="replace")[:20_000])
        except OSError:
            continue
    for start in range(0, len(texts), 256):
        for ids in tokenize_batch(texts[start:start + 256]):
            counts.update(ids)
    print(f"token counts from {len(texts)} files under {corpus}", file=sys.stderr)
    return counts


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m training.distill_static")
    ap.add_argument("--corpus", action="append", required=True, help="folder of source files (repeatable)")
    ap.add_argument("--files", type=int, default=20_000, help="at most this many files per corpus folder")
    ap.add_argument("--out", default="mcp_retrieval/weights/static_minilm.npz")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    vectors = token_vectors()
    print(f"{len(vectors)} token vectors in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    centred = vectors - vectors.mean(axis=0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    reduced = centred @ vt[:DIMS].T
    counts = Counter()
    for folder in args.corpus:
        counts.update(token_counts(Path(folder), args.files))
    total = sum(counts.values()) or 1
    p = np.array([counts.get(i, 0) / total for i in range(len(vectors))])
    table = (reduced * (SIF_A / (SIF_A + p))[:, None]).astype(np.float16)
    np.savez_compressed(args.out, table=table, version=np.array("static-minilm-2"))
    digest = hashlib.sha256(Path(args.out).read_bytes()).hexdigest()
    print(f"wrote {args.out} ({Path(args.out).stat().st_size / 1e6:.1f} MB, sha256 {digest}) in "
          f"{time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
