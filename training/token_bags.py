"""What the static-table training scripts share: the distilled table they start from, and a
batch of token lists as the flat ids and offsets torch's `embedding_bag` reads."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def distilled_table():
    """The shipped table (`indexers.static`, its sha256 checked at load) as a float32 tensor."""
    import torch

    from mcp_retrieval.indexers.static import StaticEmbedder

    return torch.tensor(StaticEmbedder().table)


def bags(ids: Sequence[Sequence[int]], rows) -> tuple:
    """(flat token ids, each row's start offset) of the token lists `ids[r]` for r in `rows`."""
    import torch

    flat = torch.tensor([t for r in rows for t in ids[r]], dtype=torch.long)
    offsets = torch.tensor(np.concatenate([[0], np.cumsum([len(ids[r]) for r in rows])[:-1]]), dtype=torch.long)
    return flat, offsets
