import threading

from mcp_retrieval.session import SessionRegister


def test_sessions_do_not_leak_into_each_other():
    reg = SessionRegister()
    reg.record("alice", ["a1", "a2"])
    reg.record("bob", ["b1"])
    assert reg.delivered("alice") == {"a1", "a2"}
    assert reg.delivered("bob") == {"b1"}
    assert reg.delivered("carol") == set()


def test_thousands_of_sessions_stay_bounded_by_the_lru():
    reg = SessionRegister(max_sessions=100)
    for i in range(5000):
        reg.record(f"s{i}", [f"c{i}"])
    assert len(reg) == 100
    assert reg.delivered("s4999") == {"c4999"}
    assert reg.delivered("s0") == set()


def test_very_long_session_ids_are_hashed_not_stored():
    reg = SessionRegister()
    long_id = "x" * 1_000_000
    reg.record(long_id, ["c"])
    assert reg.delivered(long_id) == {"c"}
    assert all(len(k) == 32 for k in reg._sessions)


def test_sessions_expire_after_their_ttl():
    reg = SessionRegister(ttl_s=0)
    reg.record("s", ["c"])
    assert reg.delivered("s") == set()


def test_sessions_persist_across_restarts(tmp_path):
    path = tmp_path / "sessions.json"
    reg = SessionRegister(persist_path=path)
    reg.record("s", ["c1"])
    reg.save()
    assert SessionRegister(persist_path=path).delivered("s") == {"c1"}
    path.write_text("{not json")
    assert SessionRegister(persist_path=path).delivered("s") == set()


def test_concurrent_calls_in_one_session_are_safe():
    reg = SessionRegister()

    def worker(n):
        for i in range(200):
            reg.record("shared", [f"{n}-{i}"])
            reg.delivered("shared")

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(reg.delivered("shared")) == 1600


def test_a_killed_server_keeps_what_it_saved_during_the_run(tmp_path):
    path = tmp_path / "sessions.json"
    reg = SessionRegister(persist_path=path, save_every_s=0)  # no clean shutdown follows
    reg.record("s", ["c1", "c2"])
    assert SessionRegister(persist_path=path).delivered("s") == {"c1", "c2"}
    lazy = SessionRegister(persist_path=tmp_path / "lazy.json", save_every_s=3600)
    lazy.record("s", ["c3"])
    assert not (tmp_path / "lazy.json").exists()  # within the interval nothing is written


def test_two_servers_on_one_index_directory_keep_each_others_sessions(tmp_path):
    path = tmp_path / "sessions.json"
    first = SessionRegister(persist_path=path)
    second = SessionRegister(persist_path=path)
    first.record("alice", ["a1"])
    second.record("bob", ["b1"])
    second.record("alice", ["a2"])
    first.save()
    second.save()
    third = SessionRegister(persist_path=path)
    assert third.delivered("alice") == {"a1", "a2"}
    assert third.delivered("bob") == {"b1"}


def test_remembered_texts_are_bounded_per_session_and_go_with_the_session():
    from mcp_retrieval.session import MAX_TEXT_CHARS_PER_SESSION

    reg = SessionRegister(max_sessions=2)
    reg.record("a", ["x"])
    reg.remember("a", [(("r", f"f{i}.py", "f", 1), ("sha", 1, "y" * 10_000)) for i in range(100)])
    texts = reg.earlier_texts("a")
    assert sum(len(t) for _, _, t in texts.values()) <= MAX_TEXT_CHARS_PER_SESSION
    assert ("r", "f99.py", "f", 1) in texts and ("r", "f0.py", "f", 1) not in texts  # oldest dropped first
    reg.record("b", ["x"])
    reg.record("c", ["x"])  # "a" leaves the LRU, and its texts with it
    assert reg.earlier_texts("a") == {}


def test_a_full_disk_leaves_the_saved_register_and_no_temporary_file(tmp_path, monkeypatch):
    import errno
    from pathlib import Path

    path = tmp_path / "sessions.json"
    reg = SessionRegister(persist_path=path)
    reg.record("s", ["c1"])
    reg.save()
    real_write = Path.write_text

    def full(self, text, *args, **kwargs):
        real_write(self, text[: len(text) // 2], *args, **kwargs)  # half of it reached the disk
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_text", full)
    reg.record("s", ["c2"])
    reg.save()  # warns, never raises
    monkeypatch.undo()
    assert not list(tmp_path.glob("sessions*.tmp"))
    assert SessionRegister(persist_path=path).delivered("s") == {"c1"}
