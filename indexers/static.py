"""A static embedding model: a token table distilled from all-MiniLM-L6-v2 (training/distill_static.py).

A text's vector is the normalised mean of its WordPiece tokens' rows: no transformer runs at
index or query time, so a repository gets vectors in seconds instead of minutes (two cores),
in numpy only. Identifiers are split into their parts before tokenizing (`getHTTPResponse`,
`parse_url` -> `get HTTP Response`, `parse url`): WordPiece alone cuts code names at arbitrary
places. A table may carry its own tokenizer: MiniLM's WordPiece vocabulary with code's frequent
words added whole (`parse`, `middleware`, `mutex` are `par ##se`, `middle ##ware`, `mut ##ex` in
MiniLM's; each added word's row is MiniLM's reading of the whole word; measured, not shipped:
docs/BENCHMARKS-history.md 51a). The table ships in the package (`mcp_retrieval/weights/static_minilm.npz`,
float16) and its sha256 is checked at load. Selected with `MCP_RETRIEVAL_EMBEDDER=static`.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
from collections.abc import Sequence
from itertools import chain
from importlib import resources
from pathlib import Path

import numpy as np

from mcp_retrieval.indexers.analysis import CAMEL_BOUNDARY
from mcp_retrieval.indexers.embed import ModelUnavailable, tokenizer_dir

TABLE_FILE = "static_minilm.npz"
TABLE_SHA256 = "888a655a06cd858c33c210eb56e2d9b5ac7ddabdf993e44e923588026f5858a9"  # training/distill_static.py
MODEL_ID = "static-minilm-2"
MAX_TOKENS = 512  # what is read of a chunk: the table costs nothing per token, but a chunk's head says most
# A candidate table to measure before it ships (training/README.md): read from this path instead of
# the package, unpinned, under a model id of its own sha256 so its vectors never mix with the
# shipped table's (the index re-embeds when the id changes).
CANDIDATE_ENV = "MCP_RETRIEVAL_STATIC_TABLE"


def split_identifiers(text: str) -> str:
    return CAMEL_BOUNDARY.sub(" ", text).replace("_", " ")


def _plain(tokenizer):
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer


@functools.lru_cache(maxsize=1)
def _tokenizer():
    """MiniLM's own WordPiece tokenizer (a table without a tokenizer of its own reads with it)."""
    from tokenizers import Tokenizer

    return _plain(Tokenizer.from_file(str(tokenizer_dir() / "tokenizer.json")))


def tokenizer_from_json(text: str):
    from tokenizers import Tokenizer

    return _plain(Tokenizer.from_str(text))


def tokenize_batch(texts: Sequence[str], tokenizer=None) -> list[list[int]]:
    """Token ids of each text (identifiers split, no special tokens), at most MAX_TOKENS each;
    `tokenizer` defaults to MiniLM's."""
    encodings = (tokenizer or _tokenizer()).encode_batch_fast([split_identifiers(t) for t in texts],
                                                              add_special_tokens=False)
    return [e.ids[:MAX_TOKENS] for e in encodings]


# Where a BERT tokenizer always splits: ASCII whitespace between pieces, and each ASCII punctuation
# character a piece of its own. Nothing of its normalisation (lower case, accents, control
# characters, CJK spacing) or of `split_identifiers` reaches across such a point.
_PIECE = re.compile(r"[!-/:-@\[-`{-~]|[^ \t\n\r!-/:-@\[-`{-~]+")


class PieceTokenizer:
    """`tokenize_batch`'s ids, each distinct piece tokenized once: a text's tokens under a BERT
    tokenizer are its pieces' tokens in order, and code repeats its pieces (sympy's 40,748 chunks
    hold 88,702 distinct ones), so a bulk pass asks the tokenizer for a fraction of the text
    (sympy: 8.4 s against 22 s, the same ids for every chunk; docs/BENCHMARKS.md 71b). A tokenizer
    that does not split that way (a candidate table's own) is asked for whole texts."""

    MAX_PIECES = 200_000  # remembered pieces (~25 MB); the memory is emptied when full and by `forget`
    BULK = 64  # fewer texts (a question and its parts) are tokenized whole: nothing to reuse

    def __init__(self, tokenizer):
        from tokenizers import normalizers, pre_tokenizers

        self.tokenizer = tokenizer
        self.by_piece = (isinstance(tokenizer.pre_tokenizer, pre_tokenizers.BertPreTokenizer)
                         and isinstance(tokenizer.normalizer, normalizers.BertNormalizer))
        self.pieces: dict[str, list[int]] = {}
        # A text that spells an added token (`[SEP]`, `[MASK]`) is matched whole by the tokenizer
        # before any split, across piece boundaries: such texts are tokenized whole.
        added = [t.content for t in tokenizer.get_added_tokens_decoder().values() if t.content]
        self.spells_added = re.compile("|".join(map(re.escape, added)), re.IGNORECASE) if added else None

    def __call__(self, texts: Sequence[str]) -> list[list[int]]:
        if not self.by_piece or len(texts) < self.BULK:
            return tokenize_batch(texts, self.tokenizer)
        whole = [n for n, t in enumerate(texts) if self.spells_added and self.spells_added.search(t)]
        if whole:
            apart = set(whole)
            ids = self._by_piece([t for n, t in enumerate(texts) if n not in apart])
            for n, one in zip(whole, tokenize_batch([texts[n] for n in whole], self.tokenizer)):
                ids.insert(n, one)
            return ids
        return self._by_piece(texts)

    def _by_piece(self, texts: Sequence[str]) -> list[list[int]]:
        split = [_PIECE.findall(t) for t in texts]
        if len(self.pieces) > self.MAX_PIECES:
            self.pieces.clear()
        new = list(set().union(*split).difference(self.pieces))
        if new:
            encodings = self.tokenizer.encode_batch_fast([split_identifiers(p) for p in new], add_special_tokens=False)
            self.pieces.update(zip(new, (e.ids for e in encodings)))
        ids_of = self.pieces.__getitem__
        return [list(chain.from_iterable(map(ids_of, pieces)))[:MAX_TOKENS] for pieces in split]

    def forget(self) -> None:
        self.pieces = {}


class StaticEmbedder:
    model_id = MODEL_ID
    # chunks a bulk pass embeds and writes at once: the table is fast, so per-batch costs (a
    # LanceDB merge, cache and store writes) would dominate at MiniLM's batch of 64
    bulk_batch = 1024
    # a big sync's worker processes embed the chunks they make (`indexers.prepare.WorkerEmbedding`)
    embeds_in_workers = True
    semantic = True
    # A mean of token rows is close to any text sharing common sub-words: off-topic questions
    # reach cosines of 0.5-0.8 (16 asked of the 20 semble_dev repositories: 116 of 320 answered at
    # MiniLM's 0.40), so lexical evidence decides know/miss (12 of 320; docs/BENCHMARKS-history.md 40a).
    similarity_decides = False

    def __init__(self):
        candidate = os.environ.get(CANDIDATE_ENV)
        try:
            data = (Path(candidate).read_bytes() if candidate
                    else resources.files("mcp_retrieval.weights").joinpath(TABLE_FILE).read_bytes())
        except (OSError, ModuleNotFoundError) as exc:
            raise ModelUnavailable(f"static embedding table missing ({exc})") from exc
        sha = hashlib.sha256(data).hexdigest()
        if candidate:
            self.model_id = f"static-candidate-{sha[:12]}"
        elif TABLE_SHA256 != sha:
            raise ModelUnavailable("static embedding table does not match its pinned sha256")
        import io

        try:
            with np.load(io.BytesIO(data)) as npz:
                self.table = npz["table"].astype(np.float32)
                self.tokenizer = (tokenizer_from_json(str(npz["tokenizer"])) if "tokenizer" in npz.files
                                  else _tokenizer())
        except Exception as exc:  # not an .npz, no `table` in it, a tokenizer that does not parse
            raise ModelUnavailable(f"static embedding table unreadable ({exc})") from exc
        vocabulary = self.tokenizer.get_vocab_size()
        if self.table.ndim != 2 or self.table.shape[0] < vocabulary:
            raise ModelUnavailable(f"static embedding table has shape {self.table.shape}; the tokenizer "
                                   f"needs a row for each of its {vocabulary} tokens")
        self.dim = self.table.shape[1]
        self.tokenize = PieceTokenizer(self.tokenizer)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        # row by row: a batch's gather at once held ~230 MB and ran 5x slower
        for row, ids in enumerate(self.tokenize(texts)):
            if ids:
                out[row] = self.table[ids].mean(axis=0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms > 0, norms, 1.0)

    def forget_questions(self) -> None:
        """Nothing is cached per question (the MiniLM embedder's interface)."""

    def release(self) -> None:
        """The bulk pass is done: the pieces it remembered go (the table is the model)."""
        self.tokenize.forget()
