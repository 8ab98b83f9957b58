"""Session delivery register: what each session has already been given in full.

Keyed by the hash of the session id (so a huge id costs nothing) and by chunk content sha256
(so a chunk whose content changed is delivered again in full). Bounded: an LRU of at most
`max_sessions` sessions, each expiring `ttl_s` after its last use and remembering at most
`MAX_PER_SESSION` chunks. Optionally persisted to the index directory across restarts: on a
clean shutdown, and at most every `save_every_s` after a delivery, so a server its host kills
(hosts stop stdio servers abruptly) loses at most that much of its register.
"""

from __future__ import annotations

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
            self._sessions.popitem(last=False)
        return self._sessions[key]

    # --- persistence ------------------------------------------------------------------------
    def save(self) -> None:
        if self.persist_path is None:
            return
        with self._lock:
            data = {k: [t, list(seen)] for k, (t, seen) in self._sessions.items()}
            self._saved_at = time.monotonic()
        tmp = self.persist_path.with_suffix(f".{threading.get_ident()}.tmp")  # two savers never share one
        try:
            tmp.write_text(json.dumps(data))
            os.replace(tmp, self.persist_path)  # atomic: a crash leaves the old file
        except OSError as exc:
            log.warning("could not persist sessions: %s", exc)

    def _load(self) -> None:
        if self.persist_path is None or not self.persist_path.is_file():
            return
        try:
            data = json.loads(self.persist_path.read_text())
            now = time.time()
            for key, (stamp, shas) in sorted(data.items(), key=lambda kv: kv[1][0]):
                if now - stamp <= self.ttl_s:
                    self._sessions[key] = (stamp, OrderedDict.fromkeys(shas[-MAX_PER_SESSION:]))
        except (OSError, ValueError, TypeError) as exc:
            log.warning("ignoring unreadable session file %s: %s", self.persist_path, exc)
