"""Token counts with a real tokenizer (the embedding model's WordPiece), not a chars/4 guess.

Budgets are in these tokens. They track the consuming LLM's count closely enough for packing
(within ~15% on code); if the tokenizer cannot load, a chars/4 estimate is used and said so.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence

log = logging.getLogger(__name__)


@functools.cache
def _tokenizer():
    try:
        from tokenizers import Tokenizer

        from mcp_retrieval.indexers.embed import tokenizer_dir

        tok = Tokenizer.from_file(str(tokenizer_dir() / "tokenizer.json"))
        tok.no_truncation()
        tok.no_padding()
        return tok
    except Exception as exc:
        log.warning("tokenizer unavailable (%s); estimating tokens as chars/4", exc)
        return None


def tokenizer_name() -> str:
    return "all-MiniLM-L6-v2 wordpiece" if _tokenizer() is not None else "chars/4 estimate"


def count_tokens(texts: Sequence[str]) -> list[int]:
    tok = _tokenizer()
    if tok is None:
        return [max(1, len(t) // 4) for t in texts]
    return [len(e.ids) - 2 for e in tok.encode_batch_fast(list(texts))]  # minus [CLS] and [SEP]


def count(text: str) -> int:
    return count_tokens([text])[0]


BYTES_PER_TOKEN = 4  # WordPiece reads ~3-3.5 bytes a token on code and prose (docs/BENCHMARKS.md)


def byte_floor(text: str) -> int:
    """The fewest tokens a text may cost: its UTF-8 bytes / BYTES_PER_TOKEN, rounded up."""
    return -(-len(text.encode("utf-8", "surrogatepass")) // BYTES_PER_TOKEN)


def budget_counts(texts: Sequence[str]) -> list[int]:
    """What each text costs against a token budget: its WordPiece tokens, but never fewer than its
    UTF-8 bytes / 4. WordPiece counts any word over 100 characters as one `[UNK]`, so without the
    byte floor a file of million-character words would cost "40 tokens"; with it, a budget bounds
    bytes too (at most 4 a token). Budgets, chunk `tokens` and `assembled_tokens` all use this."""
    counts = count_tokens(texts) if texts else []
    return [max(n, byte_floor(t)) if t else 0 for n, t in zip(counts, texts)]


# WordPiece splits at whitespace first, so a text's count is the sum of its lines' counts: a
# window assembled again and again from the same chunks (each `context` renders and counts it a
# few times) costs a tokenizer call only for lines not seen before.
LINE_CACHE_MAX = 200_000
_LINE_TOKENS: dict[str, int] = {}


def budget_tokens(text: str) -> int:
    """`budget_counts` of one text, counted line by line through a cache of lines (the same number)."""
    if not text:
        return 0
    lines = text.split("\n")
    known = {line: _LINE_TOKENS.get(line) for line in set(lines)}
    missing = [line for line, n in known.items() if n is None]
    if missing:
        fresh = dict(zip(missing, count_tokens(missing)))
        known.update(fresh)
        if len(_LINE_TOKENS) + len(fresh) > LINE_CACHE_MAX:
            _LINE_TOKENS.clear()
        _LINE_TOKENS.update(fresh)
    return max(sum(known[line] for line in lines), byte_floor(text))
