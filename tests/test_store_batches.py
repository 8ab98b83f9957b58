"""The store's reads by a list of paths or ids answer past one `IN (...)` batch, on a real SQLite file."""

from mcp_retrieval.indexers.chunk import Chunk
from mcp_retrieval.indexers.store import IN_BATCH, FileRecord, Store


def test_reads_by_list_span_several_batches(tmp_path):
    store = Store(tmp_path / "index.db")
    n = 2 * IN_BATCH + 7
    chunks = [Chunk(path=f"pkg/m{i}.py", start_line=1, end_line=2, symbol=f"f{i}", kind="function",
                    language="python", header=f"pkg/m{i}.py · def f{i}():", text=f"def f{i}():\n    return {i}\n")
              for i in range(n)]
    records = [(FileRecord(c.path, 30, 1, f"{i:064x}"), "python") for i, c in enumerate(chunks)]
    store.replace_files([], records, [(c, 10) for c in chunks], [], [])
    paths = [c.path for c in chunks] + ["pkg/absent.py"]
    assert set(store.files(paths)) == set(paths[:-1])
    by_id = store.chunks_by_id([c.id for c in chunks][::-1])
    assert len(by_id) == n and by_id[chunks[-1].id].path == chunks[-1].path
    spans = store.chunk_spans(paths)
    assert len(spans) == n and spans[chunks[IN_BATCH].path] == [(1, 2, chunks[IN_BATCH].id)]
    store.close()


def test_whole_table_reads_do_not_wait_for_the_questions_connection(tmp_path):
    """The graph's reload reads every symbol and edge on a connection of its own: a question
    holding the store meanwhile neither waits for it nor keeps it waiting."""
    import threading

    store = Store(tmp_path / "index.db")
    chunks = [Chunk(path=f"pkg/m{i}.py", start_line=1, end_line=2, symbol=f"f{i}", kind="function",
                    language="python", header="", text=f"def f{i}():\n    return {i}\n") for i in range(50)]
    store.replace_files([], [(FileRecord(c.path, 30, 1, f"{i:064x}"), "python") for i, c in enumerate(chunks)],
                        [(c, 10) for c in chunks], [], [])
    done = threading.Event()
    with store._lock:  # a question's read in progress on the main connection
        reader = threading.Thread(target=lambda: (list(store.iter_chunks(batch=7)), store.symbols(), done.set()))
        reader.start()
        reader.join(timeout=30)
        assert done.is_set()
    assert len(list(store.iter_chunks(batch=7))) == 50
    store.close()
    assert store._bulk is None
