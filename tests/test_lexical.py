"""The lexical index rebuilt past a share of deleted documents scores as a fresh one."""

import pytest

from mcp_retrieval.indexers import update
from mcp_retrieval.indexers.update import Indexer

WORDS = ["invoice", "refund", "ledger", "shipping", "parcel", "coupon", "tariff", "voucher", "audit", "basket"]


def write_module(root, n: int, edit: int) -> None:
    body = []
    for f in range(3):
        a, b = WORDS[(n + f + edit) % 10], WORDS[(n * 3 + f) % 10]
        body.append(f"def {a}_{b}_{n}_{f}(order):\n    # {a} {b} {'total ' * (edit + f)}\n"
                    f"    return order.{a} + order.{b}\n")
    (root / f"mod_{n}.py").write_text("\n\n".join(body))


def scores(indexer: Indexer, question: str) -> dict[str, float]:
    return dict(indexer.lexical.search(question, 200))


def indexed_tree(tmp_path, files: int) -> tuple:
    """A tree of `files` modules and its index, synced once: (root, indexer)."""
    root = tmp_path / "repo"
    root.mkdir()
    for n in range(files):
        write_module(root, n, 0)
    indexer = Indexer(root, tmp_path / "idx", None, None)
    indexer.sync()
    return root, indexer


def test_an_edited_tree_rebuilt_past_a_fifth_deleted_scores_as_a_fresh_index(tmp_path):
    root, edited = indexed_tree(tmp_path, 30)
    for edit in range(1, 4):  # a third of the files rewritten, three times over
        for n in range(0, 30, 3):
            write_module(root, n + edit - 1, edit)
        edited.sync()
        assert edited.lexical.deleted_share() <= update.LEXICAL_REBUILD_ABOVE
        fresh = Indexer(root, tmp_path / f"fresh{edit}", None, None)
        fresh.sync()
        assert edited.lexical.num_docs() == fresh.lexical.num_docs() == fresh.store.counts()["chunks"]
        for question in ("refund the invoice total", "shipping parcel tariff", "audit basket voucher"):
            assert scores(edited, question) == pytest.approx(scores(fresh, question), rel=1e-6)


def test_a_rebuild_keeps_every_document_and_leaves_none_deleted(tmp_path, monkeypatch):
    monkeypatch.setattr(update, "LEXICAL_REBUILD_ABOVE", None)
    root, indexer = indexed_tree(tmp_path, 10)
    for n in range(5):
        write_module(root, n, 1)
    indexer.sync()
    live = indexer.store.counts()["chunks"]
    assert indexer.lexical.deleted_share() > 0.2 and indexer.lexical.num_docs() == live
    before = scores(indexer, "refund invoice")
    indexer.lexical.rebuild(indexer.store.iter_chunks())
    assert indexer.lexical.deleted_share() == 0.0 and indexer.lexical.num_docs() == live
    after = scores(indexer, "refund invoice")
    assert set(after) == set(before) and after != before  # the same documents, scored without the dead


def test_a_failed_rebuild_leaves_the_index_answering_and_the_sync_done(tmp_path, monkeypatch):
    root, indexer = indexed_tree(tmp_path, 10)
    before = scores(indexer, "refund invoice")

    def broken(chunks):
        next(iter(chunks))
        raise OSError("No space left on device")

    monkeypatch.setattr(indexer.lexical, "rebuild", broken)
    for n in range(5):
        write_module(root, n, 1)
    result = indexer.sync()
    assert result.files_changed == 5 and "lexical_rebuild" not in result.timings_ms
    assert indexer.lexical.deleted_share() > 0.2  # as it was: searchable, the new text included
    assert indexer.lexical.num_docs() == indexer.store.counts()["chunks"]
    assert scores(indexer, "refund invoice") and scores(indexer, "refund invoice") != before
