"""Distil all-MiniLM-L6-v2 into a static token table (Model2Vec's recipe, in numpy + onnxruntime).

    python -m training.distill_static --corpus /tmp/ranker-work-a/trees --out mcp_retrieval/weights/static_minilm.npz

1. Every WordPiece token of MiniLM's vocabulary is run through the shipped int8 ONNX model alone
   (`[CLS] token [SEP]`), and its output is mean-pooled: one 384-dim vector per token.
2. PCA to 128 dimensions (a quarter of MiniLM's 384 wide; 256 did no better on semble_dev and
   64 lost 0.009: docs/BENCHMARKS-history.md 42c).
3. Each token is weighted by a/(a + p(token)) (smooth inverse frequency, a = 1e-3), p counted over
   the source files under `--corpus` tokenized as the embedder tokenizes them (identifiers split
   into their parts first), so that frequent tokens (`self`, `the`, `=`) weigh little.
With `--code-words`, code's own words join the vocabulary first (Model2Vec's vocabulary
extension): every alphabetic word of the corpus's source files (identifiers split) that MiniLM's
WordPiece cuts into pieces (`parse` -> `par ##se`, `mutex` -> `mut ##ex`) and that at least
`--min-repos` of its repositories use becomes a whole token, its row MiniLM's reading of the
word (`[CLS] par ##se [SEP]`, mean-pooled) through the same PCA. The tokenizer, with the words
added to its WordPiece vocabulary, is saved in the table file (`indexers.static` reads it there).
The table is saved as float16 with a version; `indexers.static` reads it, checks its sha256,
and embeds a text as the normalised mean of its tokens' rows: no transformer at index or query
time. Deterministic; ~3 minutes on two cores.
"""

from __future__ import annotations

import argparse
import hashlib
import json
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
    from mcp_retrieval.indexers.static import _tokenizer

    tokenizer = _tokenizer()
    vocab = tokenizer.get_vocab_size()
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    session = _session()
    out = np.zeros((vocab, 384), dtype=np.float32)
    for start in range(0, vocab, BATCH):
        ids = np.arange(start, min(vocab, start + BATCH), dtype=np.int64)
        input_ids = np.stack([np.full_like(ids, cls), ids, np.full_like(ids, sep)], axis=1)
        hidden = session.run(None, {"input_ids": input_ids, "attention_mask": np.ones_like(input_ids),
                                    "token_type_ids": np.zeros_like(input_ids)})[0]
        out[start:start + len(ids)] = hidden.mean(axis=1)
    return out


def _session():
    import onnxruntime as ort

    from mcp_retrieval.indexers.embed import _weights_path

    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    return ort.InferenceSession(str(_weights_path()), options, providers=["CPUExecutionProvider"])


def _corpus_texts(corpus: Path, limit_files: int) -> list[str]:
    texts = []
    files = [p for p in sorted(corpus.rglob("*")) if p.suffix in CORPUS_SUFFIXES and p.is_file()][:limit_files]
    for path in files:
        try:
            texts.append(path.read_text(encoding="utf-8", errors="replace")[:20_000])
        except OSError:
            continue
    return texts


def code_words(corpora: list[Path], limit_files: int, min_repos: int, min_count: int) -> list[str]:
    """The corpus's alphabetic words (identifiers split, lower-cased) that MiniLM's vocabulary does
    not hold whole, used by at least `min_repos` repositories (a corpus folder's subfolders, each
    read to `limit_files` files) and `min_count` times in all, most frequent first."""
    from mcp_retrieval.indexers.static import _tokenizer, split_identifiers

    tokenizer = _tokenizer()
    vocab = tokenizer.get_vocab()
    counts, repos = Counter(), Counter()
    for corpus in corpora:
        for repo in sorted(p for p in corpus.iterdir() if p.is_dir()):
            seen = Counter()
            for text in _corpus_texts(repo, limit_files):
                normal = tokenizer.normalizer.normalize_str(split_identifiers(text))
                seen.update(w for w, _ in tokenizer.pre_tokenizer.pre_tokenize_str(normal)
                            if w.isascii() and w.isalpha() and 3 <= len(w) <= 30 and w not in vocab)
            counts.update(seen)
            repos.update(seen.keys())
    return [w for w, n in sorted(counts.items(), key=lambda x: (-x[1], x[0]))
            if n >= min_count and repos[w] >= min_repos]


def extended_tokenizer_json(words: list[str]) -> str:
    """MiniLM's tokenizer with `words` added whole to its WordPiece vocabulary (ids after its own)."""
    from mcp_retrieval.indexers.embed import tokenizer_dir

    spec = json.loads((tokenizer_dir() / "tokenizer.json").read_text(encoding="utf-8"))
    vocab = spec["model"]["vocab"]
    for word in words:
        vocab[word] = len(vocab)
    return json.dumps(spec, ensure_ascii=False)


def word_vectors(words: list[str]) -> np.ndarray:
    """MiniLM's reading of each word alone: `[CLS] pieces [SEP]` mean-pooled, as for each token."""
    from mcp_retrieval.indexers.static import _tokenizer

    session, tokenizer = _session(), _tokenizer()
    out = np.zeros((len(words), 384), dtype=np.float32)
    for start in range(0, len(words), BATCH):
        ids = [e.ids for e in tokenizer.encode_batch(words[start:start + BATCH], add_special_tokens=True)]
        width = max(map(len, ids))
        input_ids = np.zeros((len(ids), width), dtype=np.int64)
        mask = np.zeros_like(input_ids)
        for row, seq in enumerate(ids):
            input_ids[row, :len(seq)], mask[row, :len(seq)] = seq, 1
        hidden = session.run(None, {"input_ids": input_ids, "attention_mask": mask,
                                    "token_type_ids": np.zeros_like(input_ids)})[0]
        out[start:start + len(ids)] = (hidden * mask[..., None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
    return out


def token_counts(corpus: Path, limit_files: int, tokenizer=None) -> Counter:
    from mcp_retrieval.indexers.static import tokenize_batch

    counts = Counter()
    texts = _corpus_texts(corpus, limit_files)
    for start in range(0, len(texts), 256):
        for ids in tokenize_batch(texts[start:start + 256], tokenizer):
            counts.update(ids)
    print(f"token counts from {len(texts)} files under {corpus}", file=sys.stderr)
    return counts


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m training.distill_static")
    ap.add_argument("--corpus", action="append", required=True, help="folder of source files (repeatable)")
    ap.add_argument("--files", type=int, default=20_000, help="at most this many files per corpus folder")
    ap.add_argument("--code-words", action="store_true", help="add code's frequent words to the vocabulary whole")
    ap.add_argument("--min-repos", type=int, default=3, help="an added word is used by this many repositories")
    ap.add_argument("--min-count", type=int, default=20, help="and this many times in all")
    ap.add_argument("--out", default="mcp_retrieval/weights/static_minilm.npz")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    vectors = token_vectors()
    print(f"{len(vectors)} token vectors in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    mean = vectors.mean(axis=0)  # the axes are MiniLM's own vocabulary's, added words or not
    _, _, vt = np.linalg.svd(vectors - mean, full_matrices=False)
    extra: dict[str, np.ndarray] = {}
    tokenizer = None
    if args.code_words:
        from mcp_retrieval.indexers.static import tokenizer_from_json

        words = code_words([Path(c) for c in args.corpus], args.files, args.min_repos, args.min_count)
        print(f"{len(words)} code words added, most used first: {' '.join(words[:40])}", file=sys.stderr)
        vectors = np.concatenate([vectors, word_vectors(words)])
        extra["tokenizer"] = np.array(extended_tokenizer_json(words))
        tokenizer = tokenizer_from_json(str(extra["tokenizer"]))
    reduced = (vectors - mean) @ vt[:DIMS].T
    counts = Counter()
    for folder in args.corpus:
        counts.update(token_counts(Path(folder), args.files, tokenizer))
    total = sum(counts.values()) or 1
    p = np.array([counts.get(i, 0) / total for i in range(len(vectors))])
    table = (reduced * (SIF_A / (SIF_A + p))[:, None]).astype(np.float16)
    version = "static-minilm-3" if args.code_words else "static-minilm-2"
    np.savez_compressed(args.out, table=table, version=np.array(version), **extra)
    digest = hashlib.sha256(Path(args.out).read_bytes()).hexdigest()
    print(f"wrote {args.out} ({Path(args.out).stat().st_size / 1e6:.1f} MB, sha256 {digest}) in "
          f"{time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
