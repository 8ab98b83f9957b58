"""The repository's own history as evidence: past commit messages and the files they touched.

Most bugs touch code that earlier fixes touched, and past commit messages describe problems in
the project's own words. Commits in HEAD's ancestry only (never other branches or refs: those
can hold the future) are kept in SQLite with an FTS5 index over their messages; a question is
matched against the messages (BM25) and the files those commits touched are ranked — a commit's
credit shrinks with the number of files it touched, and sweeping commits (reformatting, mass
renames) count not at all. The BM25 order FTS5 defines is computed from FTS5's own postings held
in memory (`message_bm25`: the same order, 4.3 -> 0.4 ms a question on sympy); FTS5 itself answers
until they are read, and for a word outside ASCII.

Bounded and incremental: at most MAX_COMMITS, first-parent-agnostic `git log` of HEAD; when HEAD
moves forward only the new commits are read, when it moves elsewhere the table is rebuilt. No
git, no repository, or a shallow clone is a skipped stage with a reason, never an error.
"""

from __future__ import annotations

import logging
import math
import sqlite3
import subprocess
import threading
from collections.abc import Set
from dataclasses import dataclass
from pathlib import Path

from mcp_retrieval.indexers.analysis import STOPWORDS, split_identifier, terms
from mcp_retrieval.indexers.listing import run_git
from mcp_retrieval.indexers.message_bm25 import MessageBM25

log = logging.getLogger(__name__)
MAX_COMMITS = 20_000
MAX_FILES_PER_COMMIT = 40  # a commit touching more is a sweep, not evidence about one problem
COMMITS_PER_QUERY = 40
QUERY_TERMS = 32
_DDL = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS commits (id INTEGER PRIMARY KEY, sha TEXT UNIQUE, time INTEGER, subject TEXT, nfiles INTEGER);
CREATE TABLE IF NOT EXISTS commit_files (commit_id INTEGER, path TEXT);
CREATE INDEX IF NOT EXISTS commit_files_commit ON commit_files(commit_id);
CREATE INDEX IF NOT EXISTS commit_files_path ON commit_files(path);
CREATE VIRTUAL TABLE IF NOT EXISTS messages USING fts5(message, tokenize = 'unicode61');
"""


@dataclass
class FileEvidence:
    path: str
    score: float
    subject: str  # the best-matching commit's subject line


class History:
    def __init__(self, db_path: Path, work_tree: Path, *, git_dir: Path | None = None, rev: str = "HEAD"):
        self.work_tree = work_tree
        self.git_dir = git_dir
        self.rev = rev
        self._db = sqlite3.connect(db_path, check_same_thread=False)
        self._db.executescript(_DDL)
        self._lock = threading.Lock()
        self._db_path = db_path
        self._ranker: MessageBM25 | None = None  # FTS5's ranking in memory, built by `update`
        self._generation = 0  # counts the updates that made the ranking stale
        self.status = f"{self._count()} commits, not yet checked against HEAD" if self._meta("head") else \
            "not indexed yet"

    # --- reading git ------------------------------------------------------------------------
    def _git(self, *args: str) -> subprocess.CompletedProcess | None:
        return run_git(self.work_tree, *args, git_dir=self.git_dir)

    def _head(self) -> str | None:
        out = self._git("rev-parse", "--verify", "--quiet", f"{self.rev}^{{commit}}")
        return out.stdout.decode().strip() if out is not None and out.returncode == 0 else None

    def update(self) -> str:
        """Bring the table up to HEAD; returns what it did (also kept in `status`). The in-memory
        ranking is read again afterwards, outside the lock: questions meanwhile go to FTS5."""
        with self._lock:
            before = self._meta("head")
            self.status = self._update()
            stale = self._ranker is None or self._meta("head") != before
            if stale:
                self._ranker = None  # its rowids may name other commits now
                self._generation += 1
            status, generation = self.status, self._generation
        if stale:
            ranker = self._build_ranker()
            with self._lock:
                if self._generation == generation:  # no later update began meanwhile
                    self._ranker = ranker
        return status

    def _build_ranker(self) -> MessageBM25 | None:
        """The messages' postings in memory (0.35 s and 5.4 MB for sympy's 20,000), read on a
        connection of its own; None leaves FTS5 answering."""
        try:
            db = sqlite3.connect(self._db_path)
            try:
                return MessageBM25(db) if self._count(db) else None
            finally:
                db.close()
        except (sqlite3.Error, MemoryError) as exc:
            log.warning("history ranked by FTS5 (%s)", exc)
            return None

    def _update(self) -> str:
        head = self._head()
        if head is None:
            return "skipped: no git history (not a repository, or git is missing)"
        shallow = self._git("rev-parse", "--is-shallow-repository")
        if shallow is not None and shallow.stdout.decode().strip() == "true":
            return "skipped: shallow clone (its history is cut; fetch with --unshallow to use it)"
        last = self._meta("head")
        if last == head:
            return f"{self._count()} commits, up to date"
        since = None
        if last is not None:
            ancestor = self._git("merge-base", "--is-ancestor", last, head)
            since = last if ancestor is not None and ancestor.returncode == 0 else None
        if since is None:
            with self._db:
                self._db.executescript("DELETE FROM commits; DELETE FROM commit_files; DELETE FROM messages;")
        added = self._read_log(head, since)
        with self._db:
            self._db.execute("INSERT OR REPLACE INTO meta VALUES ('head', ?)", (head,))
        return f"{self._count()} commits ({added} new)"

    def _read_log(self, head: str, since: str | None) -> int:
        span = f"{since}..{head}" if since else head
        relative = [] if self.git_dir else ["--relative"]  # a root below the top: its paths, its commits
        out = self._git("log", "--no-merges", "--no-renames", "--no-ext-diff", "--no-textconv", "--name-only",
                        *relative, f"-n{MAX_COMMITS}", "--format=%x1e%H%x1f%ct%x1f%B%x1f", span)
        if out is None or out.returncode != 0:
            return 0
        rows = []
        for record in out.stdout.decode("utf-8", "replace").split("\x1e")[1:]:
            fields = record.split("\x1f")
            if len(fields) < 4:
                continue
            sha, stamp, message = fields[0].strip(), fields[1].strip(), fields[2].strip()
            files = [f for f in fields[3].split("\n") if f.strip()]
            rows.append((sha, int(stamp or 0), message, files))
        with self._db:
            for sha, stamp, message, files in reversed(rows):
                cur = self._db.execute("INSERT OR IGNORE INTO commits(sha, time, subject, nfiles) VALUES (?,?,?,?)",
                                       (sha, stamp, message.split("\n", 1)[0][:200], len(files)))
                if not cur.rowcount:
                    continue
                cid = cur.lastrowid
                self._db.execute("INSERT INTO messages(rowid, message) VALUES (?, ?)", (cid, _searchable(message)))
                self._db.executemany("INSERT INTO commit_files VALUES (?, ?)", [(cid, f) for f in files])
            extra = self._count() - MAX_COMMITS
            if extra > 0:  # keep the newest MAX_COMMITS
                old = [r[0] for r in self._db.execute("SELECT id FROM commits ORDER BY time LIMIT ?", (extra,))]
                self._db.executemany("DELETE FROM commits WHERE id=?", [(i,) for i in old])
                self._db.executemany("DELETE FROM commit_files WHERE commit_id=?", [(i,) for i in old])
                self._db.executemany("DELETE FROM messages WHERE rowid=?", [(i,) for i in old])
        return len(rows)

    def _meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def _count(self, db: sqlite3.Connection | None = None) -> int:
        return (db or self._db).execute("SELECT COUNT(*) FROM commits").fetchone()[0]

    # --- asking -----------------------------------------------------------------------------
    def files_for(self, query: str, known: Set[str], limit: int = 20) -> list[FileEvidence]:
        """Files touched by the commits whose messages best match `query`, best first (only files
        still indexed). Each commit gives 1/(rank+5), shared out by sqrt of the files it touched."""
        words = _query_words(query)
        if not words:
            return []
        with self._lock:
            if self._ranker is not None and all(map(MessageBM25.handles, words)):
                ids = self._ranker.top(words, COMMITS_PER_QUERY)
            else:
                match = " OR ".join(f'"{w}"' for w in words)
                try:
                    ids = [cid for (cid,) in self._db.execute(
                        "SELECT rowid FROM messages WHERE messages MATCH ? ORDER BY bm25(messages), rowid LIMIT ?",
                        (match, COMMITS_PER_QUERY))]
                except sqlite3.Error:
                    return []
            if not ids:
                return []
            touched: dict[int, tuple[str, int, list[str]]] = {}  # commit -> (subject, nfiles, paths): one read, not two a commit
            for cid, subject, nfiles, path in self._db.execute(
                    f"SELECT c.id, c.subject, c.nfiles, f.path FROM commits c JOIN commit_files f ON f.commit_id = c.id "
                    f"WHERE c.id IN ({','.join('?' * len(ids))}) ORDER BY f.rowid", ids):
                touched.setdefault(cid, (subject, nfiles, []))[2].append(path)
        scores: dict[str, float] = {}
        subjects: dict[str, str] = {}
        for rank, cid in enumerate(ids):
            subject, nfiles, paths = touched.get(cid, ("", 0, []))
            if not nfiles or nfiles > MAX_FILES_PER_COMMIT:
                continue
            credit = 1.0 / (rank + 5) / math.sqrt(nfiles)
            for path in paths:
                if path in known:
                    scores[path] = scores.get(path, 0.0) + credit
                    subjects.setdefault(path, subject)
        ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
        return [FileEvidence(p, s, subjects[p]) for p, s in ranked]

    def commits_touching(self, paths: list[str], limit: int) -> list[tuple[str, int, str, int]]:
        """(sha, unix time, subject, files touched) of the commits that touched any of `paths`,
        newest first (`query_graph` relation `history`)."""
        marks = ",".join("?" * len(paths))
        with self._lock:
            return self._db.execute(
                f"SELECT sha, time, subject, nfiles FROM commits WHERE id IN "
                f"(SELECT commit_id FROM commit_files WHERE path IN ({marks})) ORDER BY time DESC, id DESC LIMIT ?",
                (*paths, limit)).fetchall()

    def changed_with(self, paths: list[str], limit: int) -> list[tuple[str, int]]:
        """Other files the commits touching `paths` also touched, with how many such commits, most
        first; sweeps (over MAX_FILES_PER_COMMIT files) do not count (relation `changed_with`)."""
        marks = ",".join("?" * len(paths))
        with self._lock:
            return self._db.execute(
                f"SELECT g.path, COUNT(DISTINCT g.commit_id) AS n FROM commit_files f "
                f"JOIN commits c ON c.id = f.commit_id AND c.nfiles <= ? "
                f"JOIN commit_files g ON g.commit_id = f.commit_id AND g.path NOT IN ({marks}) "
                f"WHERE f.path IN ({marks}) GROUP BY g.path ORDER BY n DESC, g.path LIMIT ?",
                (MAX_FILES_PER_COMMIT, *paths, *paths, limit)).fetchall()

    def close(self) -> None:
        self._db.close()


def _searchable(message: str) -> str:
    """A message plus the parts of its identifiers (FTS5 splits on punctuation, not camelCase)."""
    extra = [p for t in terms(message) for p in split_identifier(t) if p != t]
    return message + ("\n" + " ".join(extra) if extra else "")


def _query_words(query: str) -> list[str]:
    """The question's rarest-looking words: identifiers' parts and words of 3+ letters, no stop words."""
    seen: dict[str, int] = {}
    for t in terms(query):
        for w in [t, *split_identifier(t)]:
            if len(w) >= 3 and w not in STOPWORDS and w.isalnum() and not w.isdigit():
                seen[w] = seen.get(w, 0) + 1
    return sorted(seen, key=lambda w: (-len(w), w))[:QUERY_TERMS]
