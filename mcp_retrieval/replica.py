"""A read-only replica: one server answering for every repository published in an object store.

    mcp-retrieval serve --transport streamable-http --store s3://BUCKET/PREFIX [--index-dir DIR]

No work tree: each repository's newest snapshot (`shared_index`) is downloaded once into the
local cache (`--index-dir`, by default the user cache, one folder per publish), opened read-only
(no indexing, no freshness gate: the snapshot is the truth) and named by its identity
(`github.com/sympy/sympy`; `roots` accepts any unambiguous suffix such as `sympy/sympy`). Every
`REFRESH_S` the store is listed again: a newer publish is downloaded beside the old one and swapped
in without a restart; a store that stops answering leaves the replica serving its cache, and
`index://status` says so in `store`.

Replicas share nothing: run several behind one address. Sessions are keyed by the `session_id`
argument; a replica that never saw a session delivers full text where another would stub.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from pathlib import Path

from mcp_retrieval.config import Config, cache_home
from mcp_retrieval.engine import Engine
from mcp_retrieval.shared_index import StoreURL, newest_snapshots, restore
from mcp_retrieval.workspace import Workspace

log = logging.getLogger(__name__)
REFRESH_S = 60.0


def _slug(identity: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "__", identity)


class Replica:
    def __init__(self, url: str, cache_dir: Path | None = None, embedder="auto", refresh_s: float = REFRESH_S):
        self.store = StoreURL.parse(url)
        self.cache_dir = (cache_dir or cache_home() / "replicas") / _slug(self.store.bucket + "/" + self.store.prefix)
        self.embedder = embedder
        self.refresh_s = refresh_s
        self.publish_ids: dict[str, str] = {}
        self.workspace: Workspace | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def open(self) -> Workspace:
        """Every published repository's newest snapshot, opened read-only (raises when the store
        holds none: a replica with nothing to serve is a configuration error)."""
        snapshots = newest_snapshots(self.store)
        if not snapshots:
            raise ValueError(f"no published snapshot at {self.store.uri()}")
        engines = [self._engine(identity, manifest, key) for identity, (manifest, key) in sorted(snapshots.items())]
        self.workspace = Workspace(engines)
        self.workspace.store_state = f"reachable ({len(engines)} repositories)"
        return self.workspace

    def _engine(self, identity: str, manifest: dict, key: str) -> Engine:
        folder = self.cache_dir / _slug(identity) / manifest["publish_id"]
        if not (folder / "index.db").exists():
            restore(manifest, key, folder)
        config = Config.resolve(folder, folder, persist_sessions=False, read_only=True, history=True)
        engine = Engine(config, embedder=self.embedder, name=identity)
        engine.indexer.open_vectors()  # here, where a snapshot that does not open is left unswapped
        if engine.history is not None:
            engine.history.status = f"from the snapshot of {manifest['commit'][:12]}"
        self.publish_ids[identity] = manifest["publish_id"]
        return engine

    def refresh(self) -> None:
        """Swap in newer publishes; note an unreachable store and keep serving the cache."""
        assert self.workspace is not None
        try:
            snapshots = newest_snapshots(self.store)
        except Exception as exc:
            self.workspace.store_state = f"unreachable since {time.strftime('%H:%M:%S')} ({type(exc).__name__}); " \
                                         "answering from the local cache"
            return
        for identity, (manifest, key) in snapshots.items():
            if self.publish_ids.get(identity) == manifest["publish_id"]:
                continue
            try:
                engine = self._engine(identity, manifest, key)
            except Exception as exc:
                log.warning("could not open the new snapshot of %s (%s); keeping the old one", identity, exc)
                continue
            old = self.workspace.engines.get(identity)
            self.workspace.engines[identity] = engine  # one dict assignment: calls see old or new
            if old is not None:
                threading.Timer(30.0, old.close).start()  # let calls in flight on the old one finish
        self.workspace.store_state = f"reachable ({len(self.workspace.engines)} repositories)"

    def start(self) -> None:
        def loop() -> None:
            while not self._stop.wait(self.refresh_s):
                self.refresh()

        self._thread = threading.Thread(target=loop, name="mcp-retrieval-replica", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self.workspace is not None:
            self.workspace.close()
