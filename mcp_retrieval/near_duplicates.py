"""How alike the chunks of a pool are, measured for the whole pool at once.

`packet` shows a chunk once when a copy of it (a file vendored twice, a generated twin) ranks
above it, and `context`'s MMR weighs each candidate against what the window holds already
(`assemble._MMR`, docs/BENCHMARKS-history.md 56i): both read the Jaccard similarity of two chunks' sets
of word 3-grams. Copies differ in whole words, so words are runs of ASCII letters, digits and `_`
(a non-ASCII character stays inside its word), lowercased.

Measuring a pool chunk by chunk (split, hash each word, a set per chunk, set against set) was a
quarter of a new question's `packet` time on sympy (docs/BENCHMARKS-history.md 56a). Here every chunk of
the pool (its first TEXT_CHARS) is one byte array: words are found and hashed by array operations
(each word's keyed byte sum read off one prefix sum), grams mixed from three word hashes, and the
shared grams of every pair of chunks counted by sorting the pool's grams once. The similarities
are those of the sets (up to a hash collision), so the same chunks are dropped.
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# ASCII punctuation and spaces -> 0 (a separator), ASCII letters lowercased, digits, `_` and every
# byte of a non-ASCII character kept
_BYTE_MAP = bytes(c + 32 if 65 <= c <= 90 else c if c >= 128 or chr(c).isalnum() or c == 95 else 0
                  for c in range(256))
_NOT_WORD = str.maketrans({c: " " for c in map(chr, range(128)) if not (c.isalnum() or c == "_")})

# a word's hash is the sum of its bytes, each times the key of its place in the word (places past 64
# reuse the keys), finished by splitmix64: no table as long as the pool is kept between calls
_PLACE_KEYS = np.random.default_rng(52).integers(1, 2 ** 63, size=64, dtype=np.uint64) | np.uint64(1)
_MIX = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F), np.uint64(0x165667B19E3779F9))
_NO_WORD = (np.uint64(0x2545F4914F6CDD1D), np.uint64(0x5851F42D4C957F2D))  # a short chunk's missing words
TEXT_CHARS = 16_384  # what is read of each chunk: a pool's arrays stay small whatever a chunk holds


def _pool_codes(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """The texts (their first TEXT_CHARS) as one array of byte codes (`_BYTE_MAP`), each text
    followed by a separator, and where each text begins. A non-ASCII text is lowercased and split
    first (`str.lower` and `str.split` know Unicode)."""
    heads = (t[:TEXT_CHARS] for t in texts)
    parts = [t.encode("ascii") if t.isascii()
             else " ".join(t.lower().translate(_NOT_WORD).split()).encode("utf-8", "surrogatepass") for t in heads]
    starts = np.zeros(len(parts), dtype=np.int64)
    np.cumsum([len(p) + 1 for p in parts[:-1]], out=starts[1:])
    return np.frombuffer((b" ".join(parts) + b" ").translate(_BYTE_MAP), dtype=np.uint8), starts


def _finish(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: every bit of a word's sum reaches every bit of its hash."""
    x = x ^ (x >> np.uint64(30))
    x = x * np.uint64(0xBF58476D1CE4E5B9)
    x = x ^ (x >> np.uint64(27))
    x = x * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _mix3(a: np.ndarray, b, c) -> np.ndarray:
    """A 3-gram's hash from its words' hashes (each multiplied by its own odd constant)."""
    with np.errstate(over="ignore"):
        return (a * _MIX[0]) ^ ((b * _MIX[1]) >> np.uint64(1)) ^ (c * _MIX[2])


def _word_hashes(codes: np.ndarray, chunk_starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each word's hash and the index of the chunk it is in, in text order."""
    edges = np.flatnonzero(np.diff(codes != 0, prepend=False))  # where word and separator alternate
    first, end = edges[::2], edges[1::2]  # a word begins, then ends (the text ends in a separator)
    word_start = np.zeros(len(codes), dtype=np.int32)  # each byte's word's first byte (separators: any)
    word_start[first] = first
    np.maximum.accumulate(word_start, out=word_start)
    place = (np.arange(len(codes), dtype=np.int32) - word_start).astype(np.uint8) & np.uint8(63)
    prefix = np.zeros(len(codes) + 1, dtype=np.uint64)
    np.cumsum(_PLACE_KEYS.take(place) * codes, out=prefix[1:])  # a separator's code is 0: it adds nothing
    hashes = _finish((prefix[end] - prefix[first]) ^ ((end - first).astype(np.uint64) << np.uint64(56)))
    words_before = np.searchsorted(first, chunk_starts)
    owner = np.repeat(np.arange(len(chunk_starts)), np.diff(words_before, append=len(first)))
    return hashes, owner


def gram_owners(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (hashed word 3-gram, chunk) pairs of the texts, sorted by gram then chunk. A
    text of one or two words is one gram; a text without words has none."""
    hashes, owner = _word_hashes(*_pool_codes(texts))
    grams = _mix3(hashes[:-2], hashes[1:-1], hashes[2:])
    inside = owner[:-2] == owner[2:]
    grams, gram_owner = grams[inside], owner[:-2][inside]
    counts = np.bincount(owner, minlength=len(texts))
    short = np.flatnonzero((counts > 0) & (counts < 3))
    if len(short):  # one gram of the words there are
        at = np.searchsorted(owner, short)
        second = np.where(counts[short] == 2, hashes[np.minimum(at + 1, len(hashes) - 1)], _NO_WORD[0])
        extra = _mix3(hashes[at], second, _NO_WORD[1])
        grams, gram_owner = np.concatenate([grams, extra]), np.concatenate([gram_owner, short])
    # one sort of one key: the gram's high bits above the chunk's index (a collision still 2**-48
    # or rarer), then every (gram, chunk) pair once
    bits = np.uint64(max(16, len(texts).bit_length()))
    keys = np.sort(((grams >> bits) << bits) | gram_owner.astype(np.uint64))
    new = np.ones(len(keys), dtype=bool)
    np.not_equal(keys[1:], keys[:-1], out=new[1:])  # sort and compare: np.unique costs 20x here
    keys = keys[new]
    return keys >> bits, (keys & ((np.uint64(1) << bits) - np.uint64(1))).astype(np.int64)


def similarities(texts: Sequence[str]) -> np.ndarray:
    """The Jaccard similarity of every two texts' gram sets (0 where either has none)."""
    n = len(texts)
    grams, owner = gram_owners(texts)
    sizes = np.bincount(owner, minlength=n)
    held = np.zeros(len(grams) + 1, dtype=bool)  # entries of a gram that two chunks or more hold
    np.equal(grams[1:], grams[:-1], out=held[1:-1])
    held = held[1:] | held[:-1]
    grams, owner = grams[held], owner[held]
    # a gram held by k chunks is a run of k in the sorted pairs, its chunks ascending: the pairs at
    # distance d inside runs are counted at step d, until no run is longer
    pairs = []
    for d in range(1, n):
        same = np.flatnonzero(grams[d:] == grams[:-d])
        if not len(same):
            break
        pairs.append(owner[same] * n + owner[same + d])
    shared = np.bincount(np.concatenate(pairs) if pairs else np.zeros(0, np.int64), minlength=n * n).reshape(n, n)
    shared = shared + shared.T
    union = sizes[:, None] + sizes[None, :] - shared
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(union > 0, shared / np.maximum(union, 1), 0.0)


def kept(texts: Sequence[str], threshold: float) -> list[int]:
    """Indices of the texts kept in order: a text is left out when its similarity to one kept
    before it reaches `threshold`."""
    if len(texts) < 2:
        return list(range(len(texts)))
    similar = similarities(texts) >= threshold
    suspects = np.flatnonzero(np.tril(similar, -1).any(axis=1))
    dropped: set[int] = set()
    for i in suspects.tolist():  # in order: only a kept text can drop a later one
        if any(j not in dropped for j in np.flatnonzero(similar[i, :i]).tolist()):
            dropped.add(i)
    return [i for i in range(len(texts)) if i not in dropped]
