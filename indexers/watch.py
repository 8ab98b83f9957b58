"""Watch the workspace and feed batched changes to a callback (watchfiles, in a thread).

watchfiles already debounces and batches; a burst (a `git checkout`, a formatter run) arrives
as one set and becomes one incremental pass. Paths the walk would skip (ignored, pruned,
`.git/` churn) are dropped here so they never trigger work.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import watchfiles

from mcp_retrieval.indexers.locks import IndexBusy
from mcp_retrieval.indexers.walk import IgnoreRules, in_pruned_dir, prefixes_inside

log = logging.getLogger(__name__)
BURST = 500  # more changed paths than this: rescan the whole root (stat-compare is cheap)
BUSY_RETRIES, BUSY_PAUSE_S = 5, 2.0  # another process writing the index: try the same paths again
RESTART_PAUSE_S = 1.0  # between a watch that failed on an undecodable name and the next


class Watcher:
    def __init__(self, root: Path, on_change: Callable[[list[str] | None], None], *, debounce_ms: int = 300,
                 own: Sequence[Path] = ()):
        self.root = root.resolve()
        # the server's own folders inside the root (an index put there): their writes are no change
        self._own = prefixes_inside(self.root, own)
        self.on_change = on_change
        self.debounce_ms = debounce_ms
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._timers: list[threading.Timer] = []  # catch-ups and retries pending (`_later`)
        self._timers_lock = threading.Lock()  # the watcher's thread and the timers' add to them

    def relevant(self, abs_path: str, rules: IgnoreRules | None = None) -> str | None:
        """The workspace path of a change the walk would index, else None. Pass one `rules` per batch
        so each .gitignore is read once per batch, not once per changed path."""
        # Not resolved: a file replaced by a link out of the root is still a change at its own path,
        # and the sync it triggers drops it from the index (the walk skips links that leave the root).
        try:
            rel = Path(os.path.normpath(abs_path)).relative_to(self.root).as_posix()
        except ValueError:
            return None
        if rel in ("", ".") or rel.startswith(self._own):
            return None
        if in_pruned_dir(rel, committed=True):  # below `build/` or `env/`: the walk decides (it knows git's files)
            return None
        rules = rules or IgnoreRules(self.root)
        rules.enter_parents(rel)
        return None if rules.ignored(rel, is_dir=False) else rel

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="mcp-retrieval-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        with self._timers_lock:
            for timer in self._timers:
                timer.cancel()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        restarts = 0
        while not self._stop.is_set():
            try:
                self._watch()
                return
            except Exception as exc:  # the root vanished, inotify limits, ...
                if "decode path" not in str(exc):
                    log.warning("file watcher stopped (%s); call reindex to refresh", exc)
                    return
                # watchfiles gives up on any event at a name that is not UTF-8 (a file the walk
                # skips, opened by an editor or `git add`): watch again, and once it watches, catch
                # up on the changes made meanwhile in one pass
                restarts += 1
                log.log(logging.WARNING if restarts == 1 else logging.DEBUG, "file watcher restarted (%s)", exc)
            if self._stop.wait(RESTART_PAUSE_S):
                return
            self._later(RESTART_PAUSE_S, None)

    def _watch(self) -> None:
        for changes in watchfiles.watch(self.root, stop_event=self._stop, debounce=self.debounce_ms,
                                        step=50, raise_interrupt=False, ignore_permission_denied=True):
            rules = IgnoreRules(self.root)  # fresh per batch: an edited .gitignore takes effect
            paths = sorted({rel for _, p in changes if (rel := self.relevant(p, rules))})
            if paths:
                self._changed(None if len(paths) > BURST else paths)

    def _later(self, delay_s: float, paths: list[str] | None, attempt: int = 0) -> None:
        """`_changed` again after `delay_s`, unless the watcher is stopped first (`stop` cancels it)."""
        if self._stop.is_set():
            return
        timer = threading.Timer(delay_s, self._changed, args=(paths, attempt))
        timer.daemon = True
        with self._timers_lock:
            self._timers = [t for t in self._timers if t.is_alive()] + [timer]
        timer.start()

    def _changed(self, paths: list[str] | None, attempt: int = 0) -> None:
        try:
            self.on_change(paths)
        except IndexBusy as exc:  # a second server on the same index (two agent windows) is writing
            if attempt < BUSY_RETRIES:
                self._later(BUSY_PAUSE_S, paths, attempt + 1)
            else:
                log.info("%s; this change waits for the next one", exc)
        except FileNotFoundError as exc:  # the root moved or was deleted: the index is kept as it was
            log.warning("%s", exc)
        except Exception:
            log.exception("incremental update failed; the next change retries")
