"""Train the static token table for code search: contrastive, on documentation -> code pairs.

    python -m training.train_static --pairs /work/static-pairs/pairs.jsonl --out /tmp/static_trained.npz

Starts from the distilled table (`mcp_retrieval/weights/static_minilm.npz`). A question and a
chunk are embedded as the server embeds them (`indexers.static.tokenize_batch`: identifiers split,
WordPiece, the mean of the tokens' rows, normalised); the loss is InfoNCE with the batch's other
chunks as negatives (both directions, temperature `--temperature`), plus an L2 pull of the rows a
batch touches toward their distilled values, so words the pairs rarely hold stay where
distillation put them. Pairs come from `training.doc_code_pairs`. The repositories are split
(seed 0) into a held-out tenth, whose pairs are never trained on: their mean reciprocal rank
(each question against every held-out chunk) is reported before and after each epoch. torch at
build time only (`pip install torch==2.13.0`); the result is a float16 table like the shipped one.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

SEED = 0


def main(argv: list[str]) -> int:
    import torch

    from mcp_retrieval.indexers.static import tokenize_batch
    from training.token_bags import bags, distilled_table

    ap = argparse.ArgumentParser(prog="python -m training.train_static")
    ap.add_argument("--pairs", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--temperature", type=float, default=0.05)
    ap.add_argument("--pull", type=float, default=1.0, help="L2 weight toward the distilled rows")
    args = ap.parse_args(argv)
    torch.manual_seed(SEED)
    rng = np.random.default_rng(SEED)
    pairs = [json.loads(line) for line in Path(args.pairs).read_text(encoding="utf-8").splitlines() if line]
    for p in pairs:  # the documentation miner names a repository `owner+name`, the commit miner `owner/name`
        p["repo"] = p["repo"].replace("+", "/")
    repos = sorted({p["repo"] for p in pairs})
    held_repos = set(rng.choice(repos, max(1, len(repos) // 10), replace=False).tolist())
    q_ids = tokenize_batch([p["query"] for p in pairs])
    c_ids = tokenize_batch([p["code"] for p in pairs])
    usable = [i for i in range(len(pairs)) if q_ids[i] and c_ids[i]]
    held = np.array([i for i in usable if pairs[i]["repo"] in held_repos])
    train = np.array([i for i in usable if pairs[i]["repo"] not in held_repos])
    initial = distilled_table()
    table = torch.nn.EmbeddingBag.from_pretrained(initial.clone(), freeze=False, mode="mean", sparse=True)

    def embed(ids: list[list[int]], rows) -> torch.Tensor:
        return torch.nn.functional.normalize(table(*bags(ids, rows)), dim=1)

    def held_mrr() -> float:
        with torch.no_grad():
            sims = embed(q_ids, held) @ embed(c_ids, held).T
            ranks = (sims > sims.diag()[:, None]).sum(dim=1) + 1
            return (1.0 / ranks.float()).mean().item()

    print(f"{len(train)} pairs to train on, {len(held)} held out ({len(held_repos)} repositories: "
          f"{', '.join(sorted(held_repos))}); held-out MRR at the start {held_mrr():.4f}", file=sys.stderr)
    optimizer = torch.optim.SparseAdam(list(table.parameters()), lr=args.lr)
    t0 = time.perf_counter()
    for epoch in range(args.epochs):
        order = rng.permutation(train)
        for start in range(0, len(order) - args.batch + 1, args.batch):
            rows = order[start:start + args.batch]
            q, c = embed(q_ids, rows), embed(c_ids, rows)
            logits = q @ c.T / args.temperature
            labels = torch.arange(len(rows))
            loss = (torch.nn.functional.cross_entropy(logits, labels)
                    + torch.nn.functional.cross_entropy(logits.T, labels)) / 2
            touched = torch.unique(torch.tensor([t for r in rows for t in (*q_ids[r], *c_ids[r])], dtype=torch.long))
            rows_now = torch.nn.functional.embedding(touched, table.weight, sparse=True)  # the rows, one by one
            loss = loss + args.pull * ((rows_now - initial[touched]) ** 2).sum(dim=1).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch + 1}: loss {loss.item():.3f}, held-out MRR {held_mrr():.4f} "
              f"({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    np.savez_compressed(args.out, table=table.weight.detach().numpy().astype(np.float16),
                        version=np.array("static-code-contrastive-1"))
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
