"""Definitions, calls, references, imports and inheritance from tree-sitter.

Definitions are found by the same node types the chunker uses (with qualified names such as
`Session.request`); everything else comes from the per-language queries in `queries/*.scm`,
kept as data files. Targets are stored unresolved (`self.send`, `Session`, `..models:Request`);
`indexers.graph` resolves them across files when the graph is loaded, so a changed file only
replaces its own rows.
"""

from __future__ import annotations

import bisect
import functools
import logging
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import PurePosixPath

from tree_sitter import Query, QueryCursor

from mcp_retrieval.indexers.definitions import body, definitions, kinds
from mcp_retrieval.indexers.languages import grammar

log = logging.getLogger(__name__)


@dataclass
class FileGraph:
    symbols: list[tuple] = field(default_factory=list)  # (id, path, name, qualname, kind, start, end)
    edges: list[tuple] = field(default_factory=list)  # (path, source id, target, type, line)


def module_name(path: str) -> str:
    """`src/pkg/mod.py` -> `src.pkg.mod`; `pkg/__init__.py` (or `index.js`, `mod.rs`, Lua's
    `init.lua`) -> `pkg`. String operations, as PurePosixPath reads the path (`stem`, `parent`) at
    a tenth of its cost: every indexed path is read so when the path resolver is built."""
    folder, _, name = path.rpartition("/")
    dot = name.rfind(".")
    stem = name[:dot] if 0 < dot < len(name) - 1 else name
    package_file = stem in ("__init__", "index", "mod") or name == "init.lua"
    parts = [part for part in folder.split("/") if part and part != "."] + ([] if package_file else [stem])
    return ".".join(parts) or stem


_SCOPE_SEPARATOR = re.compile(r"::|#|->")


def dotted_name(written: str) -> str:
    """A scoped name as the symbol table qualifies it: `Type::method` (Rust, C++, PHP),
    `Class#method` (Ruby) and `obj->f` read as `Type.method`, `Class.method`, `obj.f`."""
    return _SCOPE_SEPARATOR.sub(".", written)


def module_suffixes(path: str) -> list[str]:
    """Every dotted suffix of a file's module name: `src.pkg.mod` is also `pkg.mod` and `mod`."""
    parts = module_name(path).split(".")
    return [".".join(parts[i:]) for i in range(len(parts))]


_SHARED_QUERIES = {"javascript": "ecmascript", "typescript": "ecmascript"}  # read first: patterns both hold


@functools.cache
def _query(language: str) -> Query | None:
    try:
        name = "typescript" if language == "tsx" else language  # TSX shares the TypeScript queries
        files = resources.files("mcp_retrieval.indexers")
        source = "".join(files.joinpath(f"queries/{part}.scm").read_text()
                         for part in (_SHARED_QUERIES.get(name), name) if part)
        return Query(grammar(language), source)
    except Exception as exc:  # a missing or broken query file disables edges for that language only
        log.warning("no graph query for %s: %s", language, exc)
        return None


def extract(path: str, language: str, tree) -> FileGraph:
    graph = FileGraph()
    graph.symbols.append((path, path, PurePosixPath(path).name, module_name(path), "file", 1,
                          tree.root_node.end_point[0] + 1))
    spans: list[tuple[int, int, str, str]] = []  # (start, end, symbol id, qualname) for enclosing lookup
    _collect_defs(tree.root_node, kinds(language), path, None, path, graph, spans, depth=0)
    query = _query(language)
    if query is None:
        return graph
    spans.sort(key=lambda s: (s[0], -s[1]))
    starts = [s[0] for s in spans]
    for _, captures in QueryCursor(query).matches(tree.root_node):
        _add_match(captures, path, spans, starts, graph)
    return graph


def _collect_defs(node, defs, path, qual, parent_id, graph, spans, depth) -> None:
    if depth > 8:
        return
    for child, found in definitions(node, defs, qual):
        if found is None:
            if child.type in ("block", "statement_block", "if_statement", "try_statement", "with_statement"):
                _collect_defs(child, defs, path, qual, parent_id, graph, spans, depth + 1)
            continue
        definition, name, kind, qualname = found.definition, found.name, found.kind, found.qualname
        sid = f"{path}::{qualname}"
        start, end = found.start + 1, found.end + 1
        row = (sid, path, name.split("::")[-1].split(".")[-1], qualname, kind, start, end)
        if graph.symbols[-1][0] == sid:  # the next equation or clause of one definition extends it
            graph.symbols[-1] = (*graph.symbols[-1][:6], end)
        else:
            graph.symbols.append(row)
            graph.edges.append((path, parent_id, sid, "contains", start))
        spans.append((start, end, sid, qualname))
        members = body(definition)
        if members is not None:
            _collect_defs(members, defs, path, qualname if kind == "class" else qual if kind == "method" else qualname,
                          sid, graph, spans, depth + 1)


def _enclosing(spans, starts: list[int], line: int, default: str) -> str:
    """The innermost definition around `line`: of the spans (sorted by start, outer first on a
    tie) starting at or before it, the last that still contains it."""
    for i in range(bisect.bisect_right(starts, line) - 1, -1, -1):
        if spans[i][1] >= line:
            return spans[i][2]
    return default


def _text(nodes) -> str:
    node = nodes[0] if isinstance(nodes, list) else nodes
    return node.text.decode("utf-8", "replace") if node.text is not None else ""


def _add_match(captures: dict, path: str, spans, starts: list[int], graph: FileGraph) -> None:
    anchor = next(iter(captures.values()))[0]
    line = anchor.start_point[0] + 1
    source = _enclosing(spans, starts, line, path)
    if "call" in captures:
        graph.edges.append((path, source, _text(captures["call"]), "call", line))
    elif "call.attr" in captures:
        obj = _text(captures["call.object"]) if "call.object" in captures else ""
        target = f"{obj}.{_text(captures['call.attr'])}" if obj and len(obj) < 80 else _text(captures["call.attr"])
        graph.edges.append((path, source, target, "call", line))
    elif "import" in captures:
        alias = _text(captures["import.alias"]) if "import.alias" in captures else ""
        target = _text(captures["import"]).removeprefix("import ").strip("\"'<>")  # Scala: the whole declaration
        graph.edges.append((path, path, f"{target}={alias}" if alias else target, "import", line))
    elif "from.module" in captures:
        alias = _text(captures["from.alias"]) if "from.alias" in captures else ""
        target = f"{_text(captures['from.module'])}:{_text(captures['from.name'])}"
        graph.edges.append((path, path, f"{target}={alias}" if alias else target, "import", line))
    elif "inherit" in captures:
        graph.edges.append((path, source, _text(captures["inherit"]), "inherit", line))
    elif "ref" in captures:
        graph.edges.append((path, source, _text(captures["ref"]), "reference", line))
