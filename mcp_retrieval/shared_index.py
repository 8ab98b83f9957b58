"""A team's index on S3-compatible object storage: publish a snapshot once, pull the nearest one.

Embedding is the floor on a laptop (~50 chunks/s): the way past it is not to embed what a
teammate or CI already embedded. `publish` (meant for CI on the main branch) uploads a consistent
snapshot of a root's index keyed by repository identity and commit; `pull` (`serve`/`index`
`--from`) restores the snapshot of HEAD, else of its nearest published ancestor, into an empty
local index, after which the ordinary incremental sync re-reads only files whose content differs
and embeds only chunks the shared cache has never seen.

Layout under `s3://BUCKET/PREFIX/`:

    repos/<identity>/<commit>/<publish id>/index.db      chunks, symbols, edges, manifest (SQLite backup, zstd)
    repos/<identity>/<commit>/<publish id>/history.db    the history tier's table (zstd)
    repos/<identity>/<commit>/<publish id>/tantivy.tar   the lexical index (zstd)
    repos/<identity>/<commit>/<publish id>/lance/        the vectors, a LanceDB table written natively
    repos/<identity>/<commit>/<publish id>/MANIFEST.json written last: sizes and sha256 of the above
    embeddings/                                          LanceDB table (key = model:sha, vector), merge-inserted

Consistency: every object of a publish lives under its own publish id and is never rewritten, and
the manifest is written last — a publish killed half-way leaves no manifest, so no pull takes it,
and two publishers of one commit write two complete snapshots (a pull takes the newest). The
embedding table only ever gains rows (insert-if-absent by content key). Identity is the normalised
`origin` remote (`github.com/psf/requests`), else the root's folder name.

Configuration is the usual AWS environment: `AWS_ENDPOINT_URL` (MinIO, Ceph, R2, moto...),
`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`. A missing or unreachable store is a
warning and a normal cold index, never a failure.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import shutil
import sqlite3
import tarfile
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

import pyarrow as pa

from mcp_retrieval.indexers.embed import EmbeddingCache, embed_text, text_sha
from mcp_retrieval.indexers.listing import git_output, rev_parse
from mcp_retrieval.indexers.vectors import TABLE, lancedb_module

log = logging.getLogger(__name__)
OBJECTS = ("index.db", "history.db", "tantivy.tar")
CODEC = "zstd"
EMBEDDINGS = "embeddings"
UPLOAD_BATCH = 5000
# A store that accepts connections but never answers (a stopped server) must not hold start-up:
# each request gives up after REQUEST_TIMEOUT_S, and a whole pull after PULL_DEADLINE_S, after
# which the index starts cold as without --from (the MCP handshake waits for no more than that).
CONNECT_TIMEOUT_S = 5
REQUEST_TIMEOUT_S = 15
PULL_DEADLINE_S = 25


class StoreError(RuntimeError):
    """The store is unreachable, misconfigured, or holds nothing usable."""


@dataclass(frozen=True)
class StoreURL:
    bucket: str
    prefix: str

    @classmethod
    def parse(cls, url: str) -> "StoreURL":
        parsed = urlparse(url)
        if parsed.scheme != "s3" or not parsed.netloc:
            raise ValueError(f"{url!r} is not a store address; use s3://BUCKET/PREFIX")
        return cls(parsed.netloc, parsed.path.strip("/"))

    def key(self, *parts: str) -> str:
        return "/".join(p for p in (self.bucket, self.prefix, *parts) if p)

    def uri(self, *parts: str) -> str:
        return "s3://" + self.key(*parts)


# --- connecting --------------------------------------------------------------------------------
def _endpoint() -> tuple[str | None, bool]:
    url = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    return url, bool(url and url.startswith("http://"))


def _region() -> str:
    return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"


def filesystem():
    from pyarrow import fs

    endpoint, http = _endpoint()
    kwargs = {"region": _region(), "connect_timeout": CONNECT_TIMEOUT_S, "request_timeout": REQUEST_TIMEOUT_S,
              "retry_strategy": fs.AwsStandardS3RetryStrategy(max_attempts=2), "allow_bucket_creation": True,
              "access_key": os.environ.get("AWS_ACCESS_KEY_ID"), "secret_key": os.environ.get("AWS_SECRET_ACCESS_KEY")}
    if endpoint:
        kwargs.update(endpoint_override=re.sub(r"^https?://", "", endpoint), scheme="http" if http else "https")
    return fs.S3FileSystem(**{k: v for k, v in kwargs.items() if v is not None})


def lance_options() -> dict[str, str]:
    endpoint, http = _endpoint()
    opts = {"region": _region(), "connect_timeout": f"{CONNECT_TIMEOUT_S}s", "timeout": f"{REQUEST_TIMEOUT_S}s"}
    for env, key in (("AWS_ACCESS_KEY_ID", "aws_access_key_id"), ("AWS_SECRET_ACCESS_KEY", "aws_secret_access_key")):
        if os.environ.get(env):
            opts[key] = os.environ[env]
    if endpoint:
        opts["endpoint"] = endpoint
    if http:
        opts["allow_http"] = "true"
    return opts


def _lance(uri: str):
    return lancedb_module().connect(uri, storage_options=lance_options())


# --- identity ----------------------------------------------------------------------------------
def repo_identity(root: Path) -> str:
    """`github.com/owner/name` from the `origin` remote (any of its URL forms), else the folder name."""
    remote = git_output(root, "remote", "get-url", "origin")
    if remote:
        text = remote.strip()
        text = re.sub(r"^[a-z+]+://", "", text)
        text = re.sub(r"^[^@/]+@", "", text)  # user@ of scp-like and https URLs
        text = re.sub(r"^([^/:]+):(?!\d)", r"\1/", text)  # git@host:owner/name
        text = re.sub(r"\.git/?$", "", text).strip("/")
        host, _, rest = text.partition("/")
        if rest:
            return f"{host.lower()}/{rest}"
    return root.name or "root"


# --- publish -----------------------------------------------------------------------------------
def publish(engine, url: str) -> dict:
    """Upload a consistent snapshot of `engine`'s index for its root's HEAD, then its embeddings."""
    from mcp_retrieval.indexers.update import WriteLock

    store = StoreURL.parse(url)
    root = engine.config.root
    commit = rev_parse(root, "HEAD")
    if commit is None:
        raise StoreError(f"{root} has no git HEAD: publish needs a commit to key the snapshot by")
    identity = repo_identity(root)
    run = f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{uuid.uuid4().hex[:8]}"
    base = ("repos", identity, commit, run)
    fs = filesystem()
    fs.create_dir(store.bucket)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="mcp-retrieval-publish-") as tmp:
        tmp_dir = Path(tmp)
        vector_table = engine.indexer.open_vectors()  # before the lock: its check takes the lock too
        with WriteLock(engine.config.index_dir / "write.lock"):  # nobody writes while we copy
            _backup_sqlite(engine.config.index_dir / "index.db", tmp_dir / "index.db")
            _backup_sqlite(engine.config.index_dir / "history.db", tmp_dir / "history.db")
            with tarfile.open(tmp_dir / "tantivy.tar", "w") as tar:
                tar.add(engine.config.index_dir / "tantivy", arcname="tantivy")
            vectors = vector_table._table.to_arrow() if vector_table is not None else None
        objects = {}
        for name in OBJECTS:  # zstd: SQLite and Tantivy files shrink ~6x (sympy's index.db: 153 -> 25 MB)
            raw = (tmp_dir / name).read_bytes()
            data = pa.compress(raw, codec=CODEC, asbytes=True)
            with fs.open_output_stream(store.key(*base, name)) as out:
                out.write(data)
            objects[name] = {"bytes": len(data), "raw_bytes": len(raw), "codec": CODEC,
                             "sha256": hashlib.sha256(data).hexdigest()}
    if vectors is not None and vectors.num_rows:
        _lance(store.uri(*base, "lance")).create_table(TABLE, data=vectors, mode="overwrite")
    shared = _publish_embeddings(engine, store)
    counts = engine.store.counts()
    manifest = {"identity": identity, "commit": commit, "publish_id": run, "created": time.time(),
                "vector_model": engine.store.get_meta("vector_model"), "files": counts["files"],
                "chunks": counts["chunks"], "vectors": vectors.num_rows if vectors is not None else 0,
                "objects": objects}
    with fs.open_output_stream(store.key(*base, "MANIFEST.json")) as out:  # last: the snapshot now exists
        out.write(json.dumps(manifest, indent=1).encode())
    return {**manifest, "embeddings_uploaded": shared, "seconds": round(time.perf_counter() - started, 1),
            "at": store.uri(*base)}


def _backup_sqlite(source: Path, target: Path) -> None:
    src = sqlite3.connect(source)
    dst = sqlite3.connect(target)
    try:
        src.backup(dst)
    finally:
        dst.close()
        src.close()


def _publish_embeddings(engine, store: StoreURL) -> int:
    """The cache entries of this index's chunks the store does not hold yet; returns how many."""
    import pyarrow as pa

    model = engine.store.get_meta("vector_model")
    if not model or engine.cache is None:
        return 0
    shas = sorted({text_sha(embed_text(h, t)) for h, t in engine.store.embed_inputs()})
    found = engine.cache.get_many(model, shas)
    if not found:
        return 0
    dim = len(next(iter(found.values())))
    schema = pa.schema([("key", pa.string()), ("vector", pa.list_(pa.float32(), dim))])
    db = _lance(store.uri(EMBEDDINGS))
    try:
        table = db.open_table("vectors")
    except Exception:
        table = db.create_table("vectors", schema=schema)
    before = table.count_rows()
    items = sorted(found.items())
    for i in range(0, len(items), UPLOAD_BATCH):
        part = items[i:i + UPLOAD_BATCH]
        data = pa.table({"key": [f"{model}:{sha}" for sha, _ in part],
                         "vector": pa.FixedSizeListArray.from_arrays(
                             pa.array([float(x) for _, v in part for x in v], pa.float32()), dim)}, schema=schema)
        table.merge_insert("key").when_not_matched_insert_all().execute(data)
    return table.count_rows() - before


# --- pull ----------------------------------------------------------------------------------------
class _Cancel:
    """Set when the caller stopped waiting: the pull then writes nothing into the index or cache.
    The final moves hold `lock`, so a pull never half-lands after the caller gave up."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.cancelled = False


def pull(url: str, root: Path, index_dir: Path, cache: EmbeddingCache | None,
         deadline_s: float = PULL_DEADLINE_S) -> str:
    """Restore the nearest published snapshot into an empty `index_dir`. Returns what happened
    (one line); never raises for a missing, unreachable, stalled or empty store: after
    `deadline_s` the pull is abandoned (it writes nothing afterwards) and the index starts cold."""
    cancel = _Cancel()
    outcome: list[str] = []
    worker = threading.Thread(target=lambda: outcome.append(_pull_guarded(url, root, index_dir, cache, cancel)),
                              name="mcp-retrieval-pull", daemon=True)
    worker.start()
    worker.join(deadline_s)
    with cancel.lock:
        if outcome:
            return outcome[0]
        cancel.cancelled = True
    log.warning("shared index not used (the store did not answer within %.0f s); indexing from scratch", deadline_s)
    return f"skipped: the store did not answer within {deadline_s:.0f} s"


def restore_in_background(workspace, engine, url: str, start: Callable) -> threading.Thread:
    """`serve --from`: the MCP handshake never waits for the store. The engine, opened on its empty
    index, answers `indexing` while the nearest snapshot is restored beside that index; a restored
    snapshot then takes the engine's place in `workspace` (calls in flight finish on the old one),
    and `start` (background indexing and the watcher) runs on whichever engine serves: the new one
    indexes only the difference, the old one everything, as without --from."""
    engine.indexing = True

    def run() -> None:
        restored = None
        try:
            # the cold engine's vector table opens on its own folder now, before that folder is
            # renamed away (the table is reached by its path: opened later, it would be the snapshot's)
            engine.indexer.open_vectors()
            restored = _restored_engine(engine, url)
        except Exception as exc:  # a failed swap leaves the cold engine serving, as without --from
            log.warning("%s: shared index not used (%s: %s); indexing from scratch", engine.name, type(exc).__name__, exc)
        finally:
            engine.indexing = False
        if restored is None:
            start(engine)
            return
        restored, cold = restored
        workspace.engines[engine.name] = restored  # one dict assignment: calls see the old or the new
        start(restored)

        def retire() -> None:  # after the calls in flight on the old engine have finished
            engine.close()
            shutil.rmtree(cold, ignore_errors=True)
        threading.Timer(30.0, retire).start()

    worker = threading.Thread(target=run, name="mcp-retrieval-restore", daemon=True)
    worker.start()
    return worker


def _restored_engine(engine, url: str):
    """A new Engine on the snapshot pulled for `engine`'s root and the folder the old engine's
    index moved to, or None (no snapshot, a stalled or missing store, or an index not empty)."""
    from mcp_retrieval.engine import Engine

    config = engine.config
    if engine.store.counts()["files"]:
        return None
    staging = config.index_dir.with_name(config.index_dir.name + ".restoring")
    for leftover in [staging, *config.index_dir.parent.glob(config.index_dir.name + ".cold-*")]:
        shutil.rmtree(leftover, ignore_errors=True)  # of a server stopped mid-restore or before its cleanup
    outcome = pull(url, config.root, staging, EmbeddingCache(config.cache_dir / "embeddings.sqlite"),
                   deadline_s=PULL_DEADLINE_S)
    log.warning("%s: %s", engine.name, outcome)
    if not outcome.startswith("pulled"):
        shutil.rmtree(staging, ignore_errors=True)
        return None
    # the cold engine keeps its open files under the old name; the snapshot takes the index's place
    cold = config.index_dir.with_name(f"{config.index_dir.name}.cold-{uuid.uuid4().hex[:8]}")
    config.index_dir.rename(cold)
    staging.rename(config.index_dir)
    return Engine(config, embedder=engine.embedder, name=engine.name), cold


def _pull_guarded(url: str, root: Path, index_dir: Path, cache: EmbeddingCache | None, cancel: _Cancel) -> str:
    try:
        return _pull(StoreURL.parse(url), root, index_dir, cache, cancel)
    except (StoreError, OSError, ValueError) as exc:
        log.warning("shared index not used (%s); indexing from scratch", exc)
        return f"skipped: {exc}"
    except Exception as exc:  # a store client error of any kind: cold index, as without --from
        log.warning("shared index not used (%s: %s); indexing from scratch", type(exc).__name__, exc)
        return f"skipped: {type(exc).__name__}: {exc}"


def _pull(store: StoreURL, root: Path, index_dir: Path, cache, cancel: _Cancel | None = None) -> str:
    if _local_files(index_dir / "index.db"):
        return "skipped: the local index is not empty"
    head = rev_parse(root, "HEAD")
    if head is None:
        return "skipped: no git HEAD to match a snapshot to"
    identity = repo_identity(root)
    manifests = _manifests(store, identity)
    if not manifests:
        raise StoreError(f"no snapshot of {identity} at {store.uri()}")
    chosen = _nearest(root, head, manifests)
    if chosen is None:
        raise StoreError(f"no published snapshot of {identity} is an ancestor of {head[:12]}")
    manifest, key, behind = chosen
    restore(manifest, key, index_dir, cancel)
    pulled = _pull_embeddings(store, cache, manifest.get("vector_model"), cancel)
    distance = f" ({behind} commits behind HEAD)" if behind else ""
    return (f"pulled {manifest['identity']}@{manifest['commit'][:12]}{distance}: {manifest['files']} files, "
            f"{manifest['chunks']} chunks, {manifest.get('vectors', 0)} vectors; {pulled} cached embeddings")


def restore(manifest: dict, key: str, index_dir: Path, cancel: _Cancel | None = None) -> None:
    """Download one snapshot into `index_dir` (checked against its manifest); the index parts
    appear whole or not at all."""
    fs = filesystem()
    index_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".pull-", dir=index_dir))
    try:
        for name, meta in manifest["objects"].items():
            with fs.open_input_file(f"{key}/{name}") as src:  # random access: large parallel reads
                data = src.read()
            if hashlib.sha256(data).hexdigest() != meta["sha256"]:
                raise StoreError(f"{name} of the snapshot does not match its manifest")
            if meta.get("codec"):
                data = pa.decompress(data, decompressed_size=meta["raw_bytes"], codec=meta["codec"], asbytes=True)
            (staging / name).write_bytes(data)
        with tarfile.open(staging / "tantivy.tar") as tar:
            tar.extractall(staging, filter="data")
        if manifest.get("vectors"):
            table = _lance("s3://" + key + "/lance").open_table(TABLE).to_arrow()
            lancedb_module().connect(str(staging / "lance")).create_table(TABLE, data=table, mode="overwrite")
        with cancel.lock if cancel else contextlib.nullcontext():
            if cancel and cancel.cancelled:
                raise StoreError("abandoned: the caller stopped waiting")
            for name in ("index.db", "history.db", "tantivy", "lance"):
                if (staging / name).exists():
                    target = index_dir / name
                    if target.is_dir():
                        shutil.rmtree(target)
                    else:
                        target.unlink(missing_ok=True)
                    os.replace(staging / name, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def newest_snapshots(store: StoreURL) -> dict[str, tuple[dict, str]]:
    """Every published repository's newest snapshot: identity -> (manifest, key)."""
    out: dict[str, tuple[dict, str]] = {}
    for manifest, key in _manifests(store, ""):
        identity = manifest.get("identity", "")
        if identity and (identity not in out or manifest.get("created", 0) > out[identity][0].get("created", 0)):
            out[identity] = (manifest, key)
    return out


def _local_files(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db) as conn:
            return conn.execute("SELECT COUNT(*) FROM files").fetchone()[0]
    except sqlite3.Error:
        return 0


def _manifests(store: StoreURL, identity: str) -> list[tuple[dict, str]]:
    from pyarrow import fs as pafs

    selector = pafs.FileSelector(store.key("repos", *([identity] if identity else [])), recursive=True,
                                 allow_not_found=True)
    out = []
    filesystem_ = filesystem()
    for info in filesystem_.get_file_info(selector):
        if info.type == pafs.FileType.File and info.path.endswith("/MANIFEST.json"):
            with filesystem_.open_input_file(info.path) as src:
                out.append((json.loads(src.read()), info.path.rsplit("/", 1)[0]))
    return out


def _nearest(root: Path, head: str, manifests: list[tuple[dict, str]]) -> tuple[dict, str, int] | None:
    """HEAD's own snapshot (the newest publish), else the ancestor fewest commits behind:
    (manifest, key, commits behind HEAD)."""
    best: tuple[int, float, tuple[dict, str, int]] | None = None
    for manifest, key in manifests:
        commit = manifest.get("commit", "")
        distance = 0 if commit == head else _distance(root, commit, head)
        if distance is None:
            continue
        rank = (distance, -float(manifest.get("created", 0)))
        if best is None or rank < best[:2]:
            best = (*rank, (manifest, key, distance))
    return best[2] if best else None


def _distance(root: Path, ancestor: str, head: str) -> int | None:
    """Commits from `ancestor` to `head`, or None when it is not an ancestor (or unknown here)."""
    if git_output(root, "merge-base", "--is-ancestor", ancestor, head) is None:
        return None
    count = git_output(root, "rev-list", "--count", f"{ancestor}..{head}")
    return int(count) if count and count.strip().isdigit() else None


def _pull_embeddings(store: StoreURL, cache: EmbeddingCache | None, model: str | None,
                     cancel: _Cancel | None = None) -> int:
    if cache is None or not model:
        return 0
    try:
        table = _lance(store.uri(EMBEDDINGS)).open_table("vectors").to_arrow()
    except Exception:
        return 0
    prefix = model + ":"
    keys = table.column("key").to_pylist()
    vectors = table.column("vector").to_numpy(zero_copy_only=False)
    items = {k[len(prefix):]: v for k, v in zip(keys, vectors) if k.startswith(prefix)}
    with cancel.lock if cancel else contextlib.nullcontext():
        if cancel and cancel.cancelled:
            return 0
        cache.put_many(model, items)
    return len(items)

