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

from mcp_retrieval.assemble import attr
from mcp_retrieval.indexers.graph import CodeGraph
from mcp_retrieval.indexers.languages import CODE_LANGUAGES, is_test_path, language_for, suffix_of
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
    code = [p for p in paths if language_for(p) in CODE_LANGUAGES and not is_test_path(p)
            and not any(part.startswith(".") for part in p.split("/"))]
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
    uses = Counter()
    for node, incoming in graph.inc.items():
        n = graph.nodes[node]
        if n.kind in ("file", "module") or is_test_path(n.path):
            continue
        count = sum(1 for src, typ in incoming if typ in USES and graph.nodes[src].path != n.path)
        if count:
            uses[node] = count
    return uses.most_common(MAX_DEFINITIONS)
