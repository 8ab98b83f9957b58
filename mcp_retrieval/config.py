"""Configuration, resolved argument > environment > default (and written down once, here).

Environment: MCP_RETRIEVAL_INDEX_DIR (index location; with several roots, the folder holding
each root's own index: `workspace.open_workspace`), MCP_RETRIEVAL_CACHE_DIR (embedding
cache), MCP_RETRIEVAL_EMBEDDER (`static` default: the distilled token table of `indexers.static`,
vectors in seconds; `minilm` for the transformer, a little more precise and minutes to embed a
large repository, docs/BENCHMARKS-history.md 43d; `none` for lexical only),
MCP_RETRIEVAL_CROSS_ENCODER (a folder holding a cross-encoder's model.onnx + tokenizer files),
MCP_RETRIEVAL_EMBED_TOKENS (what the embedding model reads of a chunk, default 256; read in
`indexers.embed`), MCP_RETRIEVAL_FILE_RANKER (`learned` default; `hand` orders `packet`'s files
by the hand-set file score and each file's chunks by score instead of the learned models, for
comparison).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

import platformdirs

from mcp_retrieval.rules import Rules


# the dense tier's models (`Engine._load_embedder`): the static table, the MiniLM transformer,
# none (lexical, anchors and graph only), and meaning-free vectors for tests
EMBEDDERS = ("static", "minilm", "none", "hash")


def cache_home() -> Path:
    return Path(platformdirs.user_cache_dir("mcp-retrieval", appauthor=False))


def default_index_dir(root: Path, parent: Path | None = None) -> Path:
    """A root's own index folder, named by the folder and a hash of its path, in `parent` (default:
    the user cache), so no two roots share one."""
    digest = hashlib.sha1(str(root).encode()).hexdigest()[:12]
    return (parent or cache_home() / "indexes") / f"{root.name or 'root'}-{digest}"


def detect_root(directory: Path) -> Path:
    """With no `--root`: the top of the git work tree holding `directory` (started in `src/pkg`
    of a repository, the whole repository is the workspace), else `directory` itself."""
    from mcp_retrieval.indexers.listing import work_tree_top

    return (work_tree_top(directory) or directory).resolve()


@dataclass
class Config:
    root: Path
    index_dir: Path
    cache_dir: Path
    embedder: str = "static"  # one of EMBEDDERS
    cross_encoder_dir: Path | None = None
    # retrieval
    pool_size: int = 60
    rrf_k: int = 20
    tier_weights: dict[str, float] = field(default_factory=lambda: {
        "lexical": 1.0, "title": 0.6, "dense": 0.8, "path": 1.2, "symbol": 1.2, "message": 1.2, "history": 0.6,
        "graph": 0.5, "code": 0.6, "dense_title": 0.6})
    # the repository's history (indexers.history): HEAD of the root's git, unless the benchmark
    # points it at another git directory and revision
    history: bool = True
    read_only: bool = False  # a replica serving a published snapshot: no work tree, no indexing
    history_git_dir: Path | None = None
    history_rev: str = "HEAD"
    graph: bool = True  # graph fusion in `context`: links related definitions into the window
    signatures: bool = False  # `context`: the room left holds what the bodies call (closure; neutral, 10a)
    corpus_map: bool = True  # `context`: a map of the roots for broad questions and ask_user misses (seed 003)
    seat_floor: int = 0  # `context`: keep room for this many files (assemble.Layout); see docs/BENCHMARKS-history.md 9e
    file_ranker: bool = True  # the learned model (file_scorer) orders packet's files and weighs context's; else hand-set
    graph_in_packet: bool = False  # off: it did not move file ranking on the dev split and costs latency
    rerank: str = "auto"  # auto | structural | cross-encoder | none
    # the ranking and assembly rules that can be switched off (rules.py; the server never does)
    rules: Rules = field(default_factory=Rules)
    # assembly
    mmr_lambda: float = 0.7
    near_duplicate: float = 0.9
    decompose: bool = True  # deterministic conjunction split + identifier expansion (agent sub-queries always count)
    # query understanding by the host's model (serve --understand sampling --understand-budget N)
    understand: str = "off"  # off | sampling
    understand_budget: int = 20  # host model calls per day
    understand_timeout_s: float = 10.0  # older protocols: the longest a call waits on the host
    # sessions
    session_ttl_s: float = 6 * 3600
    max_sessions: int = 1000
    persist_sessions: bool = True

    @classmethod
    def resolve(cls, root: str | Path | None = None, index_dir: str | Path | None = None, **overrides) -> "Config":
        root_path = Path(root).expanduser().resolve() if root else detect_root(Path.cwd())
        if not root_path.is_dir():
            raise ValueError(f"root {root_path} is not a directory; pass --root DIR of an existing folder")
        env_index = os.environ.get("MCP_RETRIEVAL_INDEX_DIR")
        index = Path(index_dir or env_index or default_index_dir(root_path)).expanduser().resolve()
        cache = Path(os.environ.get("MCP_RETRIEVAL_CACHE_DIR") or cache_home() / "cache").expanduser().resolve()
        ce = os.environ.get("MCP_RETRIEVAL_CROSS_ENCODER")
        cfg = cls(root=root_path, index_dir=index, cache_dir=cache,
                  embedder=os.environ.get("MCP_RETRIEVAL_EMBEDDER", "static"),
                  cross_encoder_dir=Path(ce).expanduser() if ce else None,
                  file_ranker=os.environ.get("MCP_RETRIEVAL_FILE_RANKER", "learned") != "hand")
        for key, value in overrides.items():
            if value is not None:
                setattr(cfg, key, value)
        if cfg.embedder not in EMBEDDERS:  # a typo would have meant the slow model, silently
            raise ValueError(f"embedder must be one of {', '.join(EMBEDDERS[:3])}; got {cfg.embedder!r} "
                             "(MCP_RETRIEVAL_EMBEDDER or the settings' `embedder`)")
        if cfg.understand not in ("off", "sampling"):
            raise ValueError(f"understand must be off or sampling; got {cfg.understand!r}")
        return cfg
