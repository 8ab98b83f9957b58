"""Session delivery register: what each session has already been given in full.

Keyed by the hash of the session id (so a huge id costs nothing) and by chunk content sha256
(so a chunk whose content changed is delivered again in full). Bounded: an LRU of at most
`max_sessions` sessions, each expiring `ttl_s` after its last use and remembering at most
`MAX_PER_SESSION` chunks. Optionally persisted to the index directory across restarts: on a
clean shutdown, and at most every `save_every_s` after a delivery, so a server its host kills
(hosts stop stdio servers abruptly) loses at most that much of its register.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import threading
import time
from collections import OrderedDict
from pathlib import Path

log = logging.getLogger(__name__)
MAX_PER_SESSION = 5000
# The text last delivered of each definition, so a definition changed since can come back as a
# diff against what the session saw: in memory only (a restart delivers changed chunks whole),
# at most this many characters a session and in all.
MAX_TEXT_CHARS_PER_SESSION = 256_000
MAX_TEXT_CHARS = 32_000_000

SeenKey = tuple[str, str, str, int]  # (root, path, symbol, first line)
SeenText = tuple[str, int, str]  # (sha256, start line, text)


def _chars(texts: dict[SeenKey, SeenText]) -> int:
    return sum(len(text) for _, _, text in texts.values())


def _key(session_id: str) -> str:
    return hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]


class SessionRegister:
    def __init__(self, *, max_sessions: int = 1000, ttl_s: float = 6 * 3600, persist_path: Path | None = None,
                 save_every_s: float = 10.0):
        self.max_sessions = max_sessions
        self.ttl_s = ttl_s
        self.persist_path = persist_path
        self.save_every_s = save_every_s
        self._saved_at = time.monotonic()
        self._sessions: OrderedDict[str, tuple[float, OrderedDict[str, None]]] = OrderedDict()
        self._texts: OrderedDict[str, OrderedDict[SeenKey, SeenText]] = OrderedDict()  # session key -> texts
        self._lock = threading.Lock()
        self._load()

    def delivered(self, session_id: str) -> set[str]:
        """Content hashes already delivered in full to this session."""
        with self._lock:
            entry = self._touch(_key(session_id), create=False)
            return set(entry[1]) if entry else set()

    def record(self, session_id: str, shas: list[str]) -> None:
        if not shas:
            return
        with self._lock:
            _, seen = self._touch(_key(session_id), create=True)
            for sha in shas:
                seen[sha] = None
                seen.move_to_end(sha)
            while len(seen) > MAX_PER_SESSION:
                seen.popitem(last=False)
        if self.persist_path is not None and time.monotonic() - self._saved_at >= self.save_every_s:
            self.save()

    def earlier_texts(self, session_id: str) -> dict[SeenKey, SeenText]:
        """What this session was last shown of each definition (see `remember`)."""
        with self._lock:
            return dict(self._texts.get(_key(session_id), {}))

    def remember(self, session_id: str, items: list[tuple[SeenKey, SeenText]]) -> None:
        if not items:
            return
        key = _key(session_id)
        with self._lock:
            texts = self._texts.setdefault(key, OrderedDict())
            self._texts.move_to_end(key)
            for k, v in items:
                texts[k] = v
                texts.move_to_end(k)
            size = _chars(texts)
            while texts and size > MAX_TEXT_CHARS_PER_SESSION:  # counted once, then kept by subtraction
                size -= len(texts.popitem(last=False)[1][2])
            total = sum(_chars(ts) for ts in self._texts.values())
            while len(self._texts) > 1 and total > MAX_TEXT_CHARS:
                total -= _chars(self._texts.popitem(last=False)[1])  # the least recently used session's go first

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

    def _touch(self, key: str, *, create: bool):
        now = time.time()
        for old_key in [k for k, (t, _) in self._sessions.items() if now - t > self.ttl_s]:
            del self._sessions[old_key]
        entry = self._sessions.get(key)
        if entry is None:
            if not create:
                return None
            entry = (now, OrderedDict())
        self._sessions[key] = (now, entry[1])
        self._sessions.move_to_end(key)
        while len(self._sessions) > self.max_sessions:
            gone, _ = self._sessions.popitem(last=False)
            self._texts.pop(gone, None)
        for gone in [k for k in self._texts if k not in self._sessions and k != key]:
            del self._texts[gone]  # expired sessions take their texts along
        return self._sessions[key]

    # --- persistence ------------------------------------------------------------------------
    def save(self) -> None:
        """Write the register, merged with what another server on the same index directory saved
        (an flock serialises savers; per session the union of deliveries, the later timestamp),
        so two servers never overwrite each other's sessions."""
        if self.persist_path is None:
            return
        lock_path = self.persist_path.with_suffix(".lock")
        try:
            fd = os.open(lock_path, os.O_CREAT | os.O_RDWR, 0o644)
        except OSError as exc:
            log.warning("could not persist sessions: %s", exc)
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            on_disk = self._read()
            with self._lock:
                for key, (stamp, shas) in on_disk.items():
                    mine = self._sessions.get(key)
                    merged = OrderedDict.fromkeys(shas)
                    if mine is not None:
                        merged.update(mine[1])
                        stamp = max(stamp, mine[0])
                    while len(merged) > MAX_PER_SESSION:
                        merged.popitem(last=False)
                    self._sessions[key] = (stamp, merged)
                now = time.time()
                ordered = sorted((kv for kv in self._sessions.items() if now - kv[1][0] <= self.ttl_s),
                                 key=lambda kv: kv[1][0])[-self.max_sessions:]
                self._sessions = OrderedDict(ordered)
                data = {k: [t, list(seen)] for k, (t, seen) in self._sessions.items()}
                self._saved_at = time.monotonic()
            tmp = self.persist_path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
            try:
                tmp.write_text(json.dumps(data))
                os.replace(tmp, self.persist_path)  # atomic: a crash leaves the old file
            except OSError:
                tmp.unlink(missing_ok=True)  # a half-written copy (disk full) is no one's
                raise
        except OSError as exc:
            log.warning("could not persist sessions: %s", exc)
        finally:
            os.close(fd)  # releases the flock

    def _read(self) -> dict[str, tuple[float, list[str]]]:
        if self.persist_path is None or not self.persist_path.is_file():
            return {}
        try:
            data = json.loads(self.persist_path.read_text())
            return {str(k): (float(v[0]), [str(s) for s in v[1]][-MAX_PER_SESSION:]) for k, v in data.items()}
        except (OSError, ValueError, TypeError, IndexError) as exc:
            log.warning("ignoring unreadable session file %s: %s", self.persist_path, exc)
            return {}

    def _load(self) -> None:
        now = time.time()
        for key, (stamp, shas) in sorted(self._read().items(), key=lambda kv: kv[1][0]):
            if now - stamp <= self.ttl_s:
                self._sessions[key] = (stamp, OrderedDict.fromkeys(shas))
