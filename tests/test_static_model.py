"""The static embedding model: the shipped token table loads (sha256 checked), splits identifiers,
places a question nearer its code than unrelated code, and serves as the dense tier of a real index."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mcp_retrieval import Config, Engine
from mcp_retrieval.indexers import static
from mcp_retrieval.indexers.embed import ModelUnavailable
from mcp_retrieval.workspace import Workspace


def test_identifiers_are_split_into_their_parts():
    assert static.split_identifiers("getHTTPResponse parse_url") == "get HTTP Response parse url"


def test_a_question_is_nearer_its_code_than_other_code():
    model = static.StaticEmbedder()
    q = model.embed(["retry with exponential backoff"])
    code = model.embed(["def backoff_delay(retries):\n    return 2 ** retries  # exponential retry backoff",
                        "def render_table(rows):\n    return '\\n'.join(map(str, rows))"])
    assert q.shape == (1, model.dim) and np.allclose(np.linalg.norm(code, axis=1), 1.0, atol=1e-3)
    assert (q @ code.T)[0, 0] > (q @ code.T)[0, 1]


def test_a_table_that_does_not_match_its_pin_is_refused(monkeypatch):
    monkeypatch.setattr(static, "TABLE_SHA256", "0" * 64)
    with pytest.raises(ModelUnavailable):
        static.StaticEmbedder()


def test_a_candidate_table_is_read_under_a_model_id_of_its_own(monkeypatch, tmp_path):
    shipped = static.StaticEmbedder()
    flipped = tmp_path / "candidate.npz"
    np.savez_compressed(flipped, table=(-shipped.table).astype(np.float16))
    monkeypatch.setenv(static.CANDIDATE_ENV, str(flipped))
    candidate = static.StaticEmbedder()
    assert candidate.model_id.startswith("static-candidate-") and candidate.model_id != shipped.model_id
    text = ["def backoff_delay(retries): return 2 ** retries"]
    assert np.allclose(candidate.embed(text), -shipped.embed(text), atol=1e-2)
    short = tmp_path / "short.npz"
    np.savez_compressed(short, table=shipped.table[:100])
    not_npz = tmp_path / "table.npz"
    not_npz.write_text("not a table")
    for bad in (tmp_path / "missing.npz", short, not_npz):  # refused with a reason, never a crash later
        monkeypatch.setenv(static.CANDIDATE_ENV, str(bad))
        with pytest.raises(ModelUnavailable):
            static.StaticEmbedder()


def test_the_static_model_is_a_dense_tier(workspace, tmp_path):
    config = Config.resolve(workspace, tmp_path / "index", persist_sessions=False, embedder="static")
    config.cache_dir = tmp_path / "cache"
    engine = Engine(config)
    try:
        engine.reindex()
        assert engine.status().vectors_pending == 0 and engine.embedder.model_id == static.MODEL_ID
        result = Workspace.single(engine).packet("how is the price of the cart computed", debug=True)
        dense = next(s for s in result.debug.stages if s.name == "dense")
        assert dense.status == "done" and result.items
        ws = Workspace.single(engine)  # its similarity is no evidence alone: off-topic stays a miss
        for question in ("payroll tax withholding calculation", "zqxv wplk frrbz qorp",  # cosines 0.53-0.56 here
                         "PDF font embedding and glyph subsetting"):
            assert ws.packet(question).miss is not None, question
        assert ws.packet("cart items and discount codes").know is not None
    finally:
        engine.close()


def test_a_table_with_its_own_tokenizer_reads_added_words_whole(monkeypatch, tmp_path):
    from training.distill_static import extended_tokenizer_json

    shipped = static.StaticEmbedder()
    assert len(static.tokenize_batch(["mutex"], shipped.tokenizer)[0]) > 1  # MiniLM cuts it: `mut ##ex`
    spec = extended_tokenizer_json(["mutex"])
    row = np.zeros((1, shipped.dim), dtype=np.float16)
    row[0, 0] = 1.0
    candidate = tmp_path / "words.npz"
    np.savez_compressed(candidate, table=np.concatenate([shipped.table.astype(np.float16), row]),
                        tokenizer=np.array(spec))
    monkeypatch.setenv(static.CANDIDATE_ENV, str(candidate))
    model = static.StaticEmbedder()
    assert static.tokenize_batch(["mutex"], model.tokenizer) == [[len(shipped.table)]]
    assert np.allclose(model.embed(["mutex"])[0], row[0].astype(np.float32))
    assert static.tokenize_batch(["mutexes"], model.tokenizer)[0][0] == len(shipped.table)  # `mutex ##es`
    broken = tmp_path / "broken.npz"
    np.savez_compressed(broken, table=shipped.table.astype(np.float16), tokenizer=np.array("{not json"))
    monkeypatch.setenv(static.CANDIDATE_ENV, str(broken))
    with pytest.raises(ModelUnavailable):
        static.StaticEmbedder()


def test_a_long_pasted_issue_is_fused_by_its_titles_vector_not_its_whole_texts(workspace, tmp_path):
    """A pasted issue's whole text (logs, steps, versions) embeds near everything: for a long
    question with a title, the title's vector is fused and the whole text's only read as know/miss
    evidence (docs/BENCHMARKS-history.md 52a); `Rules(dense_by_title=False)` fuses both again."""
    from mcp_retrieval.file_features import is_long_question
    from mcp_retrieval.rules import Rules
    from mcp_retrieval.stages import StageLog

    config = Config.resolve(workspace, tmp_path / "index", persist_sessions=False, embedder="static")
    config.cache_dir = tmp_path / "cache"
    engine = Engine(config)
    body = ("Steps to reproduce: open the storefront, put three items into the basket, apply the seasonal voucher "
            "twice and then proceed towards checkout. Expected behaviour would be one reduction only; instead "
            "customers receive both reductions which leaves merchants losing money on every such purchase. "
            "Environment: Linux laptop, Firefox browser, release candidate build from yesterday evening.")
    question = f"Discount applied twice at checkout\n\n{body}"
    assert is_long_question(question) and not is_long_question("Discount applied twice at checkout")
    k, weights = config.rrf_k, config.tier_weights

    def pool(rules: Rules):
        engine.config.rules = rules
        gathered = engine.gather(question, [], [], None, StageLog(), for_packet=True)
        return gathered.candidates, gathered.outcome

    try:
        engine.reindex()
        candidates, outcome = pool(Rules())
        assert candidates and outcome.__class__.__name__ == "Know"
        assert any("dense" in c.ranks for c in candidates)  # searched, read for know/miss
        for c in candidates:  # but fused without it, and nothing enters the pool by it alone
            assert set(c.ranks) - {"dense"}
            assert c.fused == pytest.approx(sum(weights[t] / (k + r) for t, r in c.ranks.items() if t != "dense"))
        whole, _ = pool(Rules(dense_by_title=False))
        assert any(c.fused == pytest.approx(sum(weights[t] / (k + r) for t, r in c.ranks.items())) and "dense" in c.ranks
                   for c in whole)
    finally:
        engine.close()


TRICKY = ["def getHTTPResponse(parse_url, x__y): return a.B+c_D", "café Ünïcode naïve ÉCOLE", "中文字符 mixed草w",
          "tab\tnew\nline\r\ncr", "ctrl\x0cfeed\x1cfs\x85nel\u2028ls\u3000ideo\u00a0nbsp", "emoji 🚀launch ✓done",
          "x" * 150 + "Y" * 30, "__init__ ___ _ a_ _b", "fooBar.bazQux(zapZip)", "HTTPServer2XML", "", "   ",
          "'\\n' + '-'*70 % (a, b)", "x[SEP]y [cls] [MASK]z", "a[PAD]"]  # added tokens: matched whole


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=80) |
                st.sampled_from(TRICKY), min_size=1, max_size=6).map(" ".join))
def test_pieces_are_tokenized_as_the_whole_text_would_be(text):
    """`PieceTokenizer` reads each distinct piece once: its ids must be the whole text's, always."""
    tokenizer = static._tokenizer()
    texts = [text, *TRICKY] * 5  # a bulk pass's batch (fewer are tokenized whole)
    assert static.PieceTokenizer(tokenizer)(texts) == static.tokenize_batch(texts, tokenizer)


def test_the_shipped_table_reads_by_pieces_and_forgets_them_after_a_bulk_pass():
    embedder = static.StaticEmbedder()
    assert embedder.tokenize.by_piece
    before = embedder.embed(TRICKY * 5)
    assert embedder.tokenize.pieces
    embedder.release()
    assert not embedder.tokenize.pieces and np.array_equal(embedder.embed(TRICKY * 5), before)


def test_a_tokenizer_that_is_not_berts_is_asked_for_whole_texts():
    from tokenizers import Tokenizer, models, pre_tokenizers

    other = Tokenizer(models.WordLevel({"[UNK]": 0, "a": 1}, unk_token="[UNK]"))
    other.pre_tokenizer = pre_tokenizers.Metaspace()  # spaces belong to the tokens: pieces would differ
    assert not static.PieceTokenizer(other).by_piece and static.PieceTokenizer(static._tokenizer()).by_piece
