"""Graph edges between the roots of one workspace: an absolute import one root does not define,
resolved against another root's Python modules (`import requests` -> `src/requests/__init__.py`)
or npm package (`from "shop-client/retry"` -> the root whose package.json is named
`shop-client`). A crossing is one `import` hop from the node asked about (or into it); traversal
beyond it stays inside each root. Edges are recomputed only when a root's graph is rebuilt.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass

from mcp_retrieval.indexers.safe_read import FileBytes, read_inside

PACKAGE_JSON_BYTES = 1 << 20


@dataclass(frozen=True)
class CrossEdge:
    source_root: str
    source: int  # node index in the source root's graph (the importing file)
    target_root: str
    target: int  # node index in the target root's graph (the imported file)


def npm_package(root) -> tuple[str | None, str | None]:
    """(name, entry stem) from the root's package.json, or (None, None)."""
    data = read_inside(root, "package.json", PACKAGE_JSON_BYTES)
    if not isinstance(data, FileBytes):
        return None, None
    try:
        meta = json.loads(data.data)
    except ValueError:
        return None, None
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
        return None, None
    entry = next((meta[k] for k in ("module", "main", "types") if isinstance(meta.get(k), str)), None)
    if entry:  # `./dist/index.js` -> `dist/index` (the graph tries each source extension)
        entry = entry.removeprefix("./")
        stem, dot, ext = entry.rpartition(".")
        entry = stem if dot and "/" not in ext else entry
    return meta["name"], entry


class CrossRoots:
    def __init__(self):
        self._key: tuple | None = None
        self._edges: list[CrossEdge] = []
        self._lock = threading.Lock()

    def edges(self, engines) -> list[CrossEdge]:
        graphs = {e.name: e.graph() for e in engines}
        key = tuple((name, id(g)) for name, g in graphs.items())
        with self._lock:
            if key != self._key:
                self._edges, self._key = self._resolve(engines, graphs), key
            return self._edges

    @staticmethod
    def _resolve(engines, graphs) -> list[CrossEdge]:
        packages = {e.name: npm_package(e.config.root) for e in engines}
        out = []
        for a in engines:
            if graphs[a.name] is None:
                continue
            for source, spec in graphs[a.name].external:
                for b in engines:
                    if b is a or graphs[b.name] is None:
                        continue
                    target = graphs[b.name].provides(spec, *packages[b.name])
                    if target is not None:
                        out.append(CrossEdge(a.name, source, b.name, target))
                        break
        return list(dict.fromkeys(out))
