"""Token counts with a real tokenizer (the embedding model's WordPiece), not a chars/4 guess.

Budgets are in these tokens. They track the consuming LLM's count closely enough for packing
(within ~15% on code); if the tokenizer cannot load, a chars/4 estimate is used and said so.
"""

from __future__ import annotations

import functools
import logging
import re
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


# Plain ASCII text (most code) is counted without running the tokenizer over it, to the same
# number: BERT's normaliser and pre-tokeniser split at whitespace and make every ASCII punctuation
# mark a token of its own, so such a text's count is its punctuation marks plus the WordPiece
# counts of its runs of letters and digits. The runs repeat (sympy: 55k distinct in 4.3M) and
# their counts are cached; the tokenizer costs ~5 us a word, the sum a fraction of that
# (docs/BENCHMARKS-history.md 42b: the same counts on 274k lines of sympy and on fuzzed text).
_PLAIN = re.compile(r"[\t\n\r\x20-\x7e]*")
_RUN = re.compile(r"[A-Za-z0-9]+")
RUN_CACHE_MAX = 200_000
_RUN_TOKENS: dict[str, int] = {}


def count_tokens(texts: Sequence[str]) -> list[int]:
    tok = _tokenizer()
    if tok is None:
        return [max(1, len(t) // 4) for t in texts]
    texts = list(texts)
    out = [0] * len(texts)
    runs_of: dict[int, list[str]] = {}
    whole: list[int] = []  # the texts the tokenizer reads as they are
    for i, text in enumerate(texts):
        if _PLAIN.fullmatch(text):
            runs_of[i] = _RUN.findall(text)
        else:
            whole.append(i)
    if runs_of:
        known = {run: _RUN_TOKENS.get(run) for runs in runs_of.values() for run in runs}
        missing = [run for run, n in known.items() if n is None]
        if missing:
            fresh = dict(zip(missing, _wordpiece(tok, missing)))
            known.update(fresh)
            if len(_RUN_TOKENS) + len(fresh) > RUN_CACHE_MAX:
                _RUN_TOKENS.clear()
            _RUN_TOKENS.update(fresh)
        for i, runs in runs_of.items():
            text = texts[i]
            marks = len(text) - sum(map(len, runs)) - sum(text.count(space) for space in " \t\n\r")
            out[i] = marks + sum([known[run] for run in runs])
    if whole:
        for i, n in zip(whole, _wordpiece(tok, [texts[i] for i in whole])):
            out[i] = n
    return out


def _wordpiece(tok, texts: list[str]) -> list[int]:
    return [len(e.ids) - 2 for e in tok.encode_batch_fast(texts)]  # minus [CLS] and [SEP]


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
