"""Teacher targets for training the static token table on code (Tokenlearn's recipe, step 1).

    python -m training.teacher_targets --trees /tmp/ranker-work-a/trees --trees /tmp/ranker-work-b/trees \
        --out /work/static-train --chunks 60000

Chunks of the mined repositories' source files (training/repos.txt, checked out by
`training.collect commits`), cut by the server's own chunker, sampled deterministically (seed 0,
at most `--per-repo` a repository, identical chunks once), and embedded by all-MiniLM-L6-v2 (the
shipped int8 model) from the same input the index embeds (`embed_text(header, text)`). Written in
shards of 2,000 (`shard-00000.npz`: the inputs and their 384-dim vectors); a rerun skips the
shards that exist, so the job resumes after a stop (with the same arguments: the sample is
deterministic). ~24 chunks/s on two cores. With the defaults the 82 checked-out repositories
give ~12,500 chunks (3 a file); raise `--per-file` for more.

The shards hold the repositories' code and stay outside this repository. Step 2 is
`training.fit_static`.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import numpy as np

SHARD = 2_000
SEED = 0


def sample_inputs(trees: list[Path], per_repo: int, total: int, per_file: int = 3) -> list[str]:
    from mcp_retrieval.indexers.chunk import chunk_file
    from mcp_retrieval.indexers.embed import embed_text
    from mcp_retrieval.indexers.languages import language_of
    from training.trees import source_files

    rng = random.Random(SEED)
    inputs: dict[str, None] = {}
    for folder in trees:
        for repo in sorted(p for p in folder.iterdir() if p.is_dir()):
            taken = []
            for rel, text in source_files(repo, rng):
                if len(taken) >= per_repo:
                    break
                chunks = chunk_file(rel, text, language_of(rel, text))
                rng.shuffle(chunks)
                taken += [embed_text(c.header, c.text) for c in chunks[:per_file]]
            inputs.update(dict.fromkeys(taken[:per_repo]))
    chosen = list(inputs)
    rng.shuffle(chosen)
    return chosen[:total]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m training.teacher_targets")
    ap.add_argument("--trees", action="append", required=True, help="folder of checked-out repositories (repeatable)")
    ap.add_argument("--out", required=True, help="folder for the shards (outside this repository)")
    ap.add_argument("--chunks", type=int, default=60_000)
    ap.add_argument("--per-repo", type=int, default=600)
    ap.add_argument("--per-file", type=int, default=3, help="chunks a file gives at most")
    args = ap.parse_args(argv)
    from mcp_retrieval.indexers.embed import MiniLMEmbedder

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    inputs = sample_inputs([Path(t) for t in args.trees], args.per_repo, args.chunks, args.per_file)
    print(f"{len(inputs)} chunks sampled", file=sys.stderr)
    model = MiniLMEmbedder(out / "model-cache")
    for start in range(0, len(inputs), SHARD):
        shard = out / f"shard-{start // SHARD:05d}.npz"
        if shard.exists():
            continue
        t0 = time.perf_counter()
        texts = inputs[start:start + SHARD]
        vectors = model.embed(texts).astype(np.float16)
        tmp = shard.with_suffix(".tmp.npz")
        np.savez_compressed(tmp, texts=np.array(texts, dtype=str), vectors=vectors)
        tmp.replace(shard)  # a stop mid-shard leaves no half shard behind
        print(f"{shard.name}: {len(texts)} chunks in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
