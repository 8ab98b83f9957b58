"""Fit the static token table to MiniLM's embeddings of code (Tokenlearn's recipe, step 2).

    python -m training.fit_static --shards /work/static-train --out /tmp/static_code.npz

Starts from the distilled table (`mcp_retrieval/weights/static_minilm.npz`) and moves its rows so
that the mean of a chunk's token rows points where MiniLM's embedding of the chunk points, through
a learned linear map from MiniLM's 384 dimensions to the table's 256 (the map is thrown away: the
server only averages rows). Loss: 1 - cosine, plus an L2 pull toward the distilled rows so tokens
seen in few chunks stay where distillation put them. A tenth of the chunks is held out and its
cosine reported before and after. torch at build time only (`pip install torch==2.13.0`); the
result is a float16 table like the shipped one. Deterministic (seed 0).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

SEED = 0


def load_shards(folder: Path) -> tuple[list[str], np.ndarray]:
    texts, vectors = [], []
    for shard in sorted(folder.glob("shard-*.npz")):
        with np.load(shard) as data:
            texts += [str(t) for t in data["texts"]]
            vectors.append(data["vectors"].astype(np.float32))
    return texts, np.vstack(vectors)


def main(argv: list[str]) -> int:
    import torch

    from mcp_retrieval.indexers.static import tokenize_batch
    from training.token_bags import bags, distilled_table

    ap = argparse.ArgumentParser(prog="python -m training.fit_static")
    ap.add_argument("--shards", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--pull", type=float, default=1e-3, help="L2 weight toward the distilled rows")
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--pca", action="store_true",
                    help="targets centred and PCA-reduced (fixed), student means centred per batch, instead of a learned map")
    args = ap.parse_args(argv)
    torch.manual_seed(SEED)
    texts, targets = load_shards(Path(args.shards))
    ids = tokenize_batch(texts)
    keep = [i for i, t in enumerate(ids) if t]
    rng = np.random.default_rng(SEED)
    order = rng.permutation(keep)
    held = order[: len(order) // 10]
    train = order[len(order) // 10:]
    initial = distilled_table()
    table = torch.nn.Parameter(initial.clone())
    project = torch.nn.Linear(targets.shape[1], initial.shape[1], bias=False)
    if args.pca:  # Tokenlearn's reading: the targets' own principal axes, nothing learned in between
        centred = targets[train] - targets[train].mean(axis=0)
        _, _, vt = np.linalg.svd(centred, full_matrices=False)
        with torch.no_grad():
            project.weight.copy_(torch.tensor(vt[: initial.shape[1]]))
        project.weight.requires_grad_(False)
        targets = targets - targets[train].mean(axis=0)
    target = torch.tensor(targets)

    def centred(x: torch.Tensor) -> torch.Tensor:
        return x - x.mean(dim=0, keepdim=True) if args.pca else x

    def means(rows) -> torch.Tensor:
        flat, offsets = bags(ids, rows)
        return torch.nn.functional.embedding_bag(flat, table, offsets, mode="mean")

    def held_cosine() -> float:
        with torch.no_grad():
            return torch.nn.functional.cosine_similarity(centred(means(held)), project(target[held])).mean().item()

    # the map first, with the table fixed: the starting point's own fit, reported as the baseline
    fit_map = torch.optim.Adam(project.parameters(), lr=1e-2)
    for _ in range(0 if args.pca else 200):
        rows = rng.choice(train, 512)
        loss = 1 - torch.nn.functional.cosine_similarity(means(rows).detach(), project(target[rows])).mean()
        fit_map.zero_grad()
        loss.backward()
        fit_map.step()
    print(f"{len(train)} chunks to fit, {len(held)} held out; held-out cosine at the start {held_cosine():.4f}",
          file=sys.stderr)
    optimizer = torch.optim.Adam([table, *(p for p in project.parameters() if p.requires_grad)], lr=args.lr)
    t0 = time.perf_counter()
    for epoch in range(args.epochs):
        for start in range(0, len(train), 256):
            rows = train[start:start + 256]
            loss = 1 - torch.nn.functional.cosine_similarity(centred(means(rows)), project(target[rows])).mean()
            loss = loss + args.pull * ((table - initial) ** 2).sum(dim=1).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        rng.shuffle(train)
        print(f"epoch {epoch + 1}: held-out cosine {held_cosine():.4f} ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    np.savez_compressed(args.out, table=table.detach().numpy().astype(np.float16), version=np.array("static-code-1"))
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
