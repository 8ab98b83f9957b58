"""Co-activation (seed 002's persist stage): which files answer together, learned from the windows
`context` delivers, per root, bounded and decaying; read back as a weak signal in file ranking.

Each delivered window with chunks from two or more files adds 1 to every pair among its first
three files; before that every pair decays by DECAY, so what answered together recently counts
most and one odd window fades. At most MAX_PAIRS pairs are kept (the weakest dropped). A file's
strength as the partner of another is its pair weight over the strongest pair of that other
file (0..1). Stored in the root's index directory (SQLite); a read-only or unwritable index
learns nothing and answers as before. Learned and read only where the root's `coactivation`
setting is on (off by default: it measured neutral), so an off root writes nothing per window.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from itertools import combinations
from pathlib import Path

log = logging.getLogger("mcp_retrieval")

DECAY = 0.98
MAX_PAIRS = 5000
FILES_PER_WINDOW = 3


class CoActivation:
    def __init__(self, path: Path | None):
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        if path is None:
            return
        try:
            self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None, timeout=5)
            self._db.execute("CREATE TABLE IF NOT EXISTS pairs (a TEXT, b TEXT, w REAL, PRIMARY KEY (a, b))")
        except sqlite3.Error as exc:
            log.warning("co-activation store unavailable (%s); not learning", exc)
            self._db = None

    def record(self, files: list[str]) -> None:
        """A delivered window's files, strongest first."""
        head = list(dict.fromkeys(files))[:FILES_PER_WINDOW]
        if self._db is None or len(head) < 2:
            return
        pairs = [tuple(sorted(p)) for p in combinations(head, 2)]
        try:
            with self._lock:
                self._db.execute("BEGIN")
                self._db.execute("UPDATE pairs SET w = w * ?", (DECAY,))
                self._db.executemany("INSERT INTO pairs VALUES (?, ?, 1.0) ON CONFLICT (a, b) DO UPDATE SET w = w + 1.0",
                                     pairs)
                self._db.execute("DELETE FROM pairs WHERE rowid IN (SELECT rowid FROM pairs ORDER BY w DESC "
                                 "LIMIT -1 OFFSET ?)", (MAX_PAIRS,))
                self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            log.warning("co-activation not recorded (%s)", exc)
            if self._db.in_transaction:  # never leave a half-done write open for the next window
                self._db.execute("ROLLBACK")

    def partners(self, files: list[str]) -> dict[str, tuple[str, float]]:
        """For the given (head) files: every partner file -> (the head file, strength 0..1)."""
        if self._db is None or not files:
            return {}
        out: dict[str, tuple[str, float]] = {}
        with self._lock:
            for f in files:
                rows = self._db.execute("SELECT b, w FROM pairs WHERE a = ? UNION ALL SELECT a, w FROM pairs WHERE b = ?",
                                        (f, f)).fetchall()
                if not rows:
                    continue
                top = max(w for _, w in rows)
                for other, w in rows:
                    strength = w / top
                    if other not in out or out[other][1] < strength:
                        out[other] = (f, strength)
        return out

    def weight(self, a: str, b: str) -> float:
        if self._db is None:
            return 0.0
        with self._lock:
            row = self._db.execute("SELECT w FROM pairs WHERE a = ? AND b = ?", tuple(sorted((a, b)))).fetchone()
        return row[0] if row else 0.0

    def clear(self) -> None:
        if self._db is not None:
            with self._lock:
                self._db.execute("DELETE FROM pairs")

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
