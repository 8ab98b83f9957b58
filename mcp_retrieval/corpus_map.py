"""The corpus-map backstop (seed 003): a compact map of a root — its main folders and its most
used definitions — for questions about the whole (overview, architecture) and for a miss that
sends the agent to ask the user, so the agent still learns where things live.

The map is text inside the window's budget: a `<mcp-retrieval:map …/>` header, then one line a
folder (`src/requests/  18 files  py`), then one line a definition
(`src/requests/sessions.py:356  Session.request  (function, used 41x)`), cut by whole lines to
the tokens allowed. Folders come from the index's source files (tests, prose and dot-folders
left out); definitions are ranked by how many calls, references and subclasses point at them in
the code graph. Pure: built from the file list and a loaded graph.
"""

from __future__ import annotations

import weakref
from collections import Counter

import numpy as np

from mcp_retrieval.assemble import attr
from mcp_retrieval.indexers.graph import CodeGraph
from mcp_retrieval.indexers.languages import is_code_path, is_test_path, suffix_of
from mcp_retrieval.indexers.tokens import budget_counts
from mcp_retrieval.neutralize import neutralize

MAX_FOLDERS = 12
MAX_DEFINITIONS = 20
USES = ("call", "reference", "inherit")


def folder_of(path: str) -> str:
    """The folder a file is listed under: two levels deep (`src/requests/`), or the root (`./`)."""
    parts = [p for p in path.split("/") if p][:-1]
    return "/".join(parts[:2]) + "/" if parts else "./"


_MAPS: "weakref.WeakKeyDictionary[CodeGraph, dict]" = weakref.WeakKeyDictionary()


def build(root: str, paths: list[str], graph: CodeGraph | None, max_tokens: int) -> str:
    """The map of one root in at most `max_tokens` (empty when not even its header fits); kept
    per loaded graph for the same files and budget (a broad question asks for it each time:
    ~20 ms for sympy's 2,072 files)."""
    if graph is None:
        return _build(root, paths, graph, max_tokens)
    key = (root, max_tokens, hash(tuple(paths)))
    maps = _MAPS.setdefault(graph, {})
    if key not in maps:
        maps.clear()  # one map per graph: the files or the budget changed
        maps[key] = _build(root, paths, graph, max_tokens)
    return maps[key]


def _build(root: str, paths: list[str], graph: CodeGraph | None, max_tokens: int) -> str:
    code = [p for p in paths if is_code_path(p) and not any(part.startswith(".") for part in p.split("/"))]
    folders = Counter(folder_of(p) for p in code)
    langs: dict[str, Counter] = {}
    for p in code:
        langs.setdefault(folder_of(p), Counter())[suffix_of(p).lstrip(".") or "-"] += 1
    lines = [f'<mcp-retrieval:map root="{attr(root)}" files="{len(paths)}"/>']
    for folder, n in folders.most_common(MAX_FOLDERS):
        kinds = " ".join(k for k, _ in langs[folder].most_common(3))
        lines.append(neutralize(f"{folder}  {n} files  {kinds}"))  # names from the tree: never our markup
    for node, uses in central_definitions(graph):
        n = graph.nodes[node]
        lines.append(neutralize(f"{n.path}:{n.start_line}  {n.qualname}  ({n.kind}, used {uses}x)"))
    costs = budget_counts(lines)
    kept, used = [], 0
    for line, cost in zip(lines, costs):
        if used + cost + 1 > max_tokens:
            break
        kept.append(line)
        used += cost + 1
    return "\n".join(kept) if len(kept) > 1 else ""


_CENTRAL: "weakref.WeakKeyDictionary[CodeGraph, list[tuple[int, int]]]" = weakref.WeakKeyDictionary()


def central_definitions(graph: CodeGraph | None) -> list[tuple[int, int]]:
    """(node, uses) of the most used non-test definitions, most used first (once per graph)."""
    if graph is None:
        return []
    if graph not in _CENTRAL:
        _CENTRAL[graph] = _count_uses(graph)
    return _CENTRAL[graph]


def _count_uses(graph: CodeGraph) -> list[tuple[int, int]]:
    """Edges of a USES type into each definition from another file, over the graph's arrays at
    once (a loop over every node's edges took 0.6 s for 184k symbols, at each graph rebuild)."""
    nodes, inc = graph.nodes, graph.inc
    if not nodes or not len(inc):
        return []
    path_ids: dict[str, int] = {}
    path_of = np.fromiter((path_ids.setdefault(n.path, len(path_ids)) for n in nodes), dtype=np.int64,
                          count=len(nodes))
    test_path = np.fromiter((is_test_path(p) for p in path_ids), dtype=bool, count=len(path_ids))
    listed = ~test_path[path_of] & np.fromiter((n.kind not in ("file", "module") for n in nodes), dtype=bool,
                                               count=len(nodes))
    target = np.repeat(np.arange(len(nodes)), np.diff(inc.ptr))
    use = np.isin(inc.code, [i for i, name in enumerate(inc.types) if name in USES])
    use &= path_of[inc.neighbour] != path_of[target]
    counts = np.bincount(target[use], minlength=len(nodes)) * listed
    order = np.lexsort((np.arange(len(nodes)), -counts))[:MAX_DEFINITIONS]  # most used; then node order
    return [(int(i), int(counts[i])) for i in order if counts[i]]
