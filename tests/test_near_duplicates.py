"""The pool's near-duplicate measure, against sets of word 3-grams built one text at a time."""

from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_retrieval.near_duplicates import _NOT_WORD, kept, similarities


def reference_grams(text: str) -> set[tuple[str, ...]]:
    words = text.lower().translate(_NOT_WORD).split()
    return {tuple(words[i:i + 3]) for i in range(len(words) - 2)} if len(words) >= 3 else \
        ({tuple(words)} if words else set())


def reference_jaccard(a: str, b: str) -> float:
    ga, gb = reference_grams(a), reference_grams(b)
    return len(ga & gb) / len(ga | gb) if ga and gb else 0.0


# few words, so texts share grams; upper case, punctuation, non-ASCII letters and Unicode spaces,
# so both the byte path (ASCII) and the `str` path (the rest) are taken
WORDS = st.sampled_from(["def", "parse", "Parse", "x", "return", "self_value", "ünd", "Ünd", "wörd", "42", "a_b",
                         "lone\ud800"])
SEPARATORS = st.sampled_from([" ", "\n", "(", ").", ", ", "\u00a0", "\t", "::", "\u2003"])
TEXTS = st.lists(st.tuples(WORDS, SEPARATORS), max_size=14).map(lambda ws: "".join(w + s for w, s in ws))


@settings(max_examples=300, deadline=None)
@given(st.lists(TEXTS, min_size=2, max_size=8))
def test_similarities_are_the_jaccard_of_the_word_gram_sets(texts):
    measured = similarities(texts)
    for i, a in enumerate(texts):
        for j, b in enumerate(texts):
            if i != j:
                assert abs(measured[i, j] - reference_jaccard(a, b)) < 1e-12, (a, b)


@settings(max_examples=200, deadline=None)
@given(st.lists(TEXTS, max_size=8), st.sampled_from([0.5, 0.9, 1.0]))
def test_a_text_is_left_out_only_for_a_kept_text_before_it(texts, threshold):
    expected: list[int] = []
    for i, text in enumerate(texts):
        if not any(reference_jaccard(text, texts[j]) >= threshold for j in expected):
            expected.append(i)
    assert kept(texts, threshold) == expected


def test_copies_differing_in_case_spacing_or_a_word_are_shown_once():
    lines = [f"value_{i} = compute(value_{i - 1}, factor)" for i in range(1, 40)]
    body = " ".join(lines)
    texts = [body, body.upper().replace(" ", "  "), body.replace("value_20 =", "other_20 ="),
             " ".join(lines[:20] + [line.replace("compute", "reduce") for line in lines[20:]]), "unrelated words"]
    assert kept(texts, 0.9) == [0, 3, 4]


def test_a_chunk_is_measured_by_its_first_text_chars_whatever_its_length():
    from mcp_retrieval.near_duplicates import TEXT_CHARS

    head = " ".join(f"word{i}" for i in range(TEXT_CHARS // 4))[:TEXT_CHARS]
    long_a, long_b = head + " alpha" * 200_000, head + " beta" * 200_000  # a megabyte each
    assert similarities([long_a, long_b])[0, 1] == 1.0
    assert kept([long_a, long_b, "other words entirely here"], 0.9) == [0, 2]


def test_of_a_source_chunk_and_its_generated_copy_the_source_is_kept():
    """simdjson's amalgamated `singleheader/simdjson.h` holds `src/` word for word; when its copy
    scored higher, the source chunk was the one dropped and the file the fix changes never showed."""
    from mcp_retrieval.file_rank import drop_near_duplicates
    from mcp_retrieval.indexers.store import PRIORITY_LAST, StoredChunk
    from mcp_retrieval.retrieve import Candidate
    from mcp_retrieval.rules import Rules, applied

    body = "really_inline bool parse_number(const uint8_t *src, bool found_minus, writer &out) { return true; }"

    def candidate(path: str, score: float, priority: int = 0, text: str = body) -> Candidate:
        chunk = StoredChunk(id=path, path=path, start_line=1, end_line=3, symbol="parse_number", kind="function",
                            language="cpp", header="", text=text, sha256="", tokens=30, embedded=False,
                            priority=priority)
        return Candidate(chunk=chunk, score=score)

    pool = [candidate("singleheader/simdjson.h", 1.0, PRIORITY_LAST), candidate("src/other.cpp", 0.9, text="other code here"),
            candidate("src/generic/numberparsing.h", 0.8), candidate("vendored/numberparsing.h", 0.7)]
    assert [c.chunk.path for c in drop_near_duplicates(pool, 0.9)] == ["src/other.cpp", "src/generic/numberparsing.h"]
    with applied(Rules(handwritten_twin_kept=False)):
        assert [c.chunk.path for c in drop_near_duplicates(pool, 0.9)] == ["singleheader/simdjson.h", "src/other.cpp"]
