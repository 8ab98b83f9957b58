"""The code graph in memory: symbols and edges from the store, targets resolved across files.

Resolution (Python first-class, other languages by name): `self.x()` -> the enclosing class's
method; imported names and aliases -> their definitions (relative `from . import x` too);
`module.x` -> x in that module's file; bare names -> a same-file definition, else a definition
elsewhere when the name is rare (<= MAX_AMBIGUITY definitions). Edges keep their type:
contains, call, import, inherit, reference. Built lazily and rebuilt when the index changes.
"""

from __future__ import annotations

import bisect
import functools
import re
from array import array
from collections import defaultdict, deque
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from rapidfuzz import fuzz, process

from mcp_retrieval.indexers.store import Store
from mcp_retrieval.indexers.symbols import dotted_name, module_name, module_suffixes
from mcp_retrieval.indexers.import_links import FILE_CONVENTION_SOURCES, module_paths
from mcp_retrieval.indexers.languages import JS_SOURCE_EXTENSIONS, language_for

MAX_AMBIGUITY = 3
# import specs written as paths (JS, Go, Ruby, C includes), Rust `::` or PHP `\\` paths: resolved
# through `import_links.module_paths`, not as Python modules
_PATH_SHAPED = re.compile(r"[/\\]|::|\.(h|hh|hpp|hxx)$")
_JS_EXTS = (*JS_SOURCE_EXTENSIONS, ".d.ts")
RELATIONS = {
    "defines": (("contains",), "out"),
    "references": (("call", "reference", "inherit", "import"), "in"),
    "callers": (("call",), "in"),
    "callees": (("call",), "out"),
    "imports": (("import",), "out"),
    "imported_by": (("import",), "in"),
    "neighbors": (("contains", "call", "reference", "inherit", "import"), "both"),
}


@dataclass(frozen=True)
class Node:
    id: str
    path: str
    name: str
    qualname: str
    kind: str
    start_line: int
    end_line: int


@dataclass(frozen=True)
class Edges:
    """Distinct edges as arrays: source and target node, and the index of the type in `types`
    (sorted names, so code order is name order)."""
    source: np.ndarray
    target: np.ndarray
    code: np.ndarray
    types: tuple[str, ...]

    @classmethod
    def of(cls, edges) -> "Edges":
        """From (source, target, type) tuples, duplicates dropped."""
        edges = sorted(set(edges))
        types = tuple(sorted({typ for _, _, typ in edges}))
        codes = {typ: i for i, typ in enumerate(types)}
        return cls(np.array([e[0] for e in edges], dtype=np.int64), np.array([e[1] for e in edges], dtype=np.int64),
                   np.array([codes[e[2]] for e in edges], dtype=np.int8), types)


class Adjacency:
    """One direction of the graph's edges, `node -> [(neighbour, edge type)]`, held as CSR arrays:
    as a dict of lists of tuples, sympy's 469k edges held ~150 MB in the two directions, and
    building the walk's arrays from them ~100 MB more for a moment (docs/BENCHMARKS-history.md 40b). A
    node's neighbours come in (neighbour, type) order."""

    def __init__(self, size: int, start: np.ndarray, end: np.ndarray, code: np.ndarray, types: tuple[str, ...]):
        order = np.lexsort((code, end, start))
        self.types = types
        self.neighbour = end[order].astype(np.int32)
        self.code = code[order].astype(np.int8)
        self.ptr = np.zeros(size + 1, dtype=np.int64)
        np.cumsum(np.bincount(start, minlength=size), out=self.ptr[1:])

    def get(self, node: int, default=()):
        if not 0 <= node < len(self.ptr) - 1:
            return default
        lo, hi = int(self.ptr[node]), int(self.ptr[node + 1])
        if lo == hi:
            return default
        types = self.types
        return [(t, types[k]) for t, k in zip(self.neighbour[lo:hi].tolist(), self.code[lo:hi].tolist())]

    def degree(self) -> np.ndarray:
        return np.diff(self.ptr)

    def items(self):
        """(node, its neighbours) for every node with any."""
        for node in np.flatnonzero(self.degree()).tolist():
            yield node, self.get(node)

    def __len__(self) -> int:
        return len(self.neighbour)


class CodeGraph:
    def __init__(self, nodes: list[Node], edges: Edges | list[tuple[int, int, str]],
                 external: list[tuple[int, str]] | None = None):
        self.nodes = nodes
        # absolute imports this root does not define (`requests.sessions:Session`, `my-lib/util`):
        # (importing file's node, import spec); another root of the workspace may provide them
        self.external = external or []
        self.index = {n.id: i for i, n in enumerate(nodes)}
        edges = edges if isinstance(edges, Edges) else Edges.of(edges)
        self.out = Adjacency(len(nodes), edges.source, edges.target, edges.code, edges.types)
        self.inc = Adjacency(len(nodes), edges.target, edges.source, edges.code, edges.types)
        self.by_name: dict[str, list[int]] = defaultdict(list)
        self.by_qual: dict[str, list[int]] = defaultdict(list)
        for i, n in enumerate(nodes):
            if n.kind != "file":
                self.by_name[n.name].append(i)
                self.by_qual[n.qualname].append(i)

    @classmethod
    def load(cls, store: Store) -> "CodeGraph":
        # one string per distinct path, name and kind (a file's symbols repeat its path; `get`,
        # `__init__` recur): 28 MiB less held for 184k symbols (docs/BENCHMARKS.md 65c)
        shared: dict[str, str] = {}
        nodes = [Node(id_, shared.setdefault(path, path), shared.setdefault(name, name), qual,
                      shared.setdefault(kind, kind), start, end)
                 for id_, path, name, qual, kind, start, end in store.symbols()]
        resolver, found = _Resolver(nodes), _Found()
        for imports in (True, False):  # imports first: they feed the alias maps
            found.add(resolver, store.iter_edges(imports), imports)
        return cls(nodes, found.edges(len(nodes)), sorted(set(found.external)))

    def with_references(self, store: Store, paths: Sequence[str]) -> "CodeGraph":
        """This graph with the references made in `paths` resolved again (a file saved with a new
        call or import, its definitions the same): its nodes as they are, the other files' edges
        kept. A file's references resolve through the workspace's definitions and that file's own
        imports only (`_Resolver`), so the result is the graph `load` builds (test)."""
        changed = set(paths)
        from_changed = np.array([n.path in changed for n in self.nodes], dtype=bool)
        kept = self.edges()
        keep = ~from_changed[kept.source]
        resolver, found = _Resolver(self.nodes), _Found()
        rows = store.edges_of(sorted(changed))
        for imports in (True, False):
            found.add(resolver, [r for r in rows if (r[3] == "import") == imports], imports)
        external = [(s, spec) for s, spec in self.external if not from_changed[s]] + found.external
        return CodeGraph(self.nodes, found.edges(len(self.nodes), Edges(kept.source[keep], kept.target[keep],
                                                                           kept.code[keep], kept.types)),
                         sorted(set(external)))

    def edges(self) -> Edges:
        """Every edge, as arrays (from the outgoing adjacency)."""
        source = np.repeat(np.arange(len(self.out.ptr) - 1, dtype=np.int64), self.out.degree())
        return Edges(source, self.out.neighbour.astype(np.int64), self.out.code, self.out.types)

    def with_lines(self, lines: dict[str, tuple[int, int]]) -> bool:
        """Take each definition's new (start, end) lines, `lines` holding every node's: what a
        saved file whose definitions and references stayed the same changes here (building the
        graph again costs seconds on a large repository, this a fraction of one). False, and
        nothing changed, when the nodes are not exactly those of `lines` or their new lines break
        the (path, start line) order that `nodes_in` searches."""
        if len(lines) != len(self.nodes):
            return False
        moved = list(self.nodes)
        for i, n in enumerate(self.nodes):
            new = lines.get(n.id)
            if new is None:
                return False
            if new != (n.start_line, n.end_line):
                moved[i] = replace(n, start_line=new[0], end_line=new[1])
        if any((a.path, a.start_line) > (b.path, b.start_line) for a, b in zip(moved, moved[1:])):
            return False
        self.nodes = moved  # one assignment: a reader sees the old list or the new
        return True

    def provides(self, spec: str, package: str | None = None, entry: str | None = None) -> int | None:
        """The file of this root another root's import spec names, if any: a Python module
        (`pkg.mod`, also under `src/` or `lib/`), or for JS/TS a path inside the npm package
        `package` (`my-lib` is its `entry` or index file, `my-lib/util` its `util.ts`, ...)."""
        files = self._files
        module, _, name = spec.partition("=")[0].partition(":")
        if package and (module == package or module.startswith(package + "/")):
            rest = module[len(package):].strip("/")
            stems = [rest, f"src/{rest}", f"lib/{rest}"] if rest else [entry or "", "index", "src/index", "lib/index"]
            for stem in stems:
                for path in (stem, *(stem + ext for ext in _JS_EXTS), *(f"{stem}/index{ext}" for ext in _JS_EXTS)):
                    if path.strip("/") in files:
                        return files[path.strip("/")]
            return None
        if "/" in module or not module:
            return None
        modules = self._python_modules
        for dotted in ([f"{module}.{name}", module] if name else [module]):
            for prefix in ("", "src.", "lib."):
                if (hit := modules.get(prefix + dotted)) is not None:
                    return hit
        return None

    @functools.cached_property
    def _files(self) -> dict[str, int]:
        return {n.path: i for i, n in enumerate(self.nodes) if n.kind == "file"}

    def file_node(self, path: str) -> int | None:
        """The node of an indexed file, by its path."""
        return self._files.get(path)

    @functools.cached_property
    def _python_modules(self) -> dict[str, int]:
        return {module_name(n.path): i for i, n in enumerate(self.nodes) if n.kind == "file" and n.path.endswith(".py")}

    @functools.cached_property
    def _files_by_module(self) -> dict[str, list[int]]:
        """A module's plain name (the last part of `module_name`) -> its files: `parser` ->
        `src/parser.rs`, `src/parser/mod.rs`; a package's entry file by its folder's name."""
        return self._files_keyed(lambda path: module_name(path).rsplit(".", 1)[-1])

    @functools.cached_property
    def _files_by_name(self) -> dict[str, list[int]]:
        """A file's name (`net.py`) -> the files of that name."""
        return self._files_keyed(lambda path: path.rsplit("/", 1)[-1])

    def _files_keyed(self, key) -> dict[str, list[int]]:
        found: dict[str, list[int]] = {}
        for i, n in enumerate(self.nodes):
            if n.kind == "file":
                found.setdefault(key(n.path), []).append(i)
        return found

    # --- lookup -------------------------------------------------------------------------
    def find(self, ref: str) -> list[int]:
        """Nodes a user reference names: an id, a path, a qualified name, or a plain name."""
        ref = ref.strip().strip("/")
        if ref in self.index:
            return [self.index[ref]]
        if ref.startswith("./"):
            ref = ref[2:]
        if "/" not in ref:  # `Type::method` (Rust, C++, PHP), `Class#method` (Ruby), `obj->f`: as qualified
            ref = dotted_name(ref)
        hits = self.by_qual.get(ref) or self.by_name.get(ref)
        if not hits and "." in ref:  # `Cart.total` for `Shop.Cart.total` (a Ruby module, a C++ namespace)
            hits = [i for qual, ids in self.by_qual.items() if qual.endswith("." + ref) for i in ids]
        if not hits and "." in ref:  # `NDDataRef.multiply`, defined by a base class it inherits
            hits = self.inherited(ref)
        if not hits and "/" not in ref:  # `net.py`, `Makefile`: the files of that name
            hits = self._files_by_name.get(ref, [])
        if not hits and "." in ref:  # `module.Class.method` or `pkg.mod`
            parts = ref.split(".")
            for size in range(len(parts) - 1, 0, -1):
                hits = self.by_qual.get(".".join(parts[-size:]))
                if hits:
                    break
            if not hits:
                hits = [i for i, n in enumerate(self.nodes) if n.kind == "file" and module_name(n.path) == ref]
        if not hits and "." not in ref and "/" not in ref:  # `parser`: the module's file (Rust's `mod parser;`)
            hits = self._files_by_module.get(ref, [])
        return (hits or [])[:20]

    def inherited(self, ref: str, max_depth: int = 6) -> list[int]:
        """`Class.member` not defined in that class: the member as the nearest base class defines
        it, following `inherit` edges breadth first (a diamond's nearer base wins, as a method
        resolution order mostly agrees). Empty when the class is unknown or no base defines it."""
        owner, _, member = ref.rpartition(".")
        frontier = [i for i in self.by_qual.get(owner) or self.by_name.get(owner.rsplit(".", 1)[-1], [])
                    if self.nodes[i].kind == "class"]
        seen = set(frontier)
        for _ in range(max_depth):
            bases = [t for i in frontier for t, typ in self.out.get(i, ()) if typ == "inherit" and t not in seen]
            found = [m for b in bases for m in self.by_qual.get(f"{self.nodes[b].qualname}.{member}", [])]
            if found or not bases:
                return list(dict.fromkeys(found))
            seen.update(bases)
            frontier = bases
        return []

    def nodes_in(self, path: str, start: int, end: int) -> list[int]:
        """Definitions (not the file node) that begin inside `path`'s lines start..end; the nodes
        are sorted by (path, start_line) as loaded."""
        lo = bisect.bisect_left(self.nodes, (path, start), key=lambda n: (n.path, n.start_line))
        out = []
        for i in range(lo, len(self.nodes)):
            n = self.nodes[i]
            if n.path != path or n.start_line > end:
                break
            if n.kind != "file":
                out.append(i)
        return out

    @functools.cached_property
    def _names(self) -> list[str]:
        """Every name a reference may spell: short and qualified definition names, file paths."""
        return sorted({*self.by_name, *self.by_qual, *(n.path for n in self.nodes if n.kind == "file")})

    def suggest(self, ref: str, n: int = 5) -> list[str]:
        """The names closest to a reference that matched nothing (similarity at least 0.6, as
        difflib's; rapidfuzz's C scan: 10-13 ms over sympy's 45k names where difflib took 15-85)."""
        return [name for name, _, _ in process.extract(ref, self._names, scorer=fuzz.ratio, limit=n, score_cutoff=60)]

    def traverse(self, starts: list[int], relation: str, depth: int, limit: int, kind: str | None):
        """BFS from `starts`; returns (node indexes, edges, truncated). Bounded by `limit`."""
        types, direction = RELATIONS[relation]
        seen = set(starts)
        found: list[int] = []
        edges: list[tuple[int, int, str]] = []
        queue = deque((s, 0) for s in starts)
        truncated = False
        while queue:
            node, d = queue.popleft()
            if d >= depth:
                continue
            steps = []
            if direction in ("out", "both"):
                steps += [(t, (node, t, typ)) for t, typ in self.out.get(node, ()) if typ in types]
            if direction in ("in", "both"):
                steps += [(s, (s, node, typ)) for s, typ in self.inc.get(node, ()) if typ in types]
            for nxt, edge in steps:
                if kind and self.nodes[nxt].kind != kind:
                    continue
                edges.append(edge)
                if nxt in seen:
                    continue
                if len(found) >= limit:
                    truncated = True
                    break
                seen.add(nxt)
                found.append(nxt)
                queue.append((nxt, d + 1))
            if truncated:
                break
        keep = set(found) | set(starts)
        return found, [e for e in dict.fromkeys(edges) if e[0] in keep and e[1] in keep], truncated


class _Found:
    """Raw edges resolved to node pairs, held compactly while a graph is built."""

    def __init__(self) -> None:
        self.sources, self.targets, self.codes = array("q"), array("q"), array("b")
        self.types: dict[str, int] = {}  # type -> its code here, in order of first sight
        self.external: list[tuple[int, str]] = []

    def add(self, resolver: "_Resolver", rows, imports: bool) -> None:
        """(path, source, target, type) rows: each resolved edge kept; an import nothing in the
        workspace defines noted as external (what it imports, not the name bound)."""
        for path, source, target, typ in rows:
            s = resolver.index.get(source)
            if s is None:
                continue
            code = self.types.setdefault(typ, len(self.types))
            targets = resolver.resolve(path, source, target, typ)
            for t in targets:
                if t != s:
                    self.sources.append(s), self.targets.append(t), self.codes.append(code)
            if imports and not targets and not target.startswith((".", "/")):
                self.external.append((s, target.partition("=")[0]))

    def edges(self, size: int, also: Edges | None = None) -> Edges:
        """The distinct edges found, with `also`'s, type codes in name order."""
        names = sorted({*self.types, *(also.types if also is not None else ())})
        renumber = np.array([names.index(typ) for typ in self.types] or [0], dtype=np.int64)
        src, dst = np.frombuffer(self.sources, dtype=np.int64), np.frombuffer(self.targets, dtype=np.int64)
        code = renumber[np.frombuffer(self.codes, dtype=np.int8).astype(np.int64)] if len(self.codes) else \
            np.zeros(0, np.int64)
        if also is not None:
            recode = np.array([names.index(typ) for typ in also.types] or [0], dtype=np.int64)
            src, dst = np.concatenate([src, also.source]), np.concatenate([dst, also.target])
            code = np.concatenate([code, recode[also.code.astype(np.int64)]])
        width, size = max(len(names), 1), max(size, 1)
        key = np.unique((src * size + dst) * width + code)  # distinct edges
        return Edges(key // width // size, key // width % size, (key % width).astype(np.int8), tuple(names))


class _Resolver:
    def __init__(self, nodes: list[Node]):
        self.nodes = nodes
        self.index = {n.id: i for i, n in enumerate(nodes)}
        self.by_name: dict[str, list[int]] = defaultdict(list)
        self.local: dict[tuple[str, str], int] = {}  # (path, qualname) -> node
        self.modules: dict[str, list[int]] = defaultdict(list)
        self.aliases: dict[str, dict[str, int]] = defaultdict(dict)  # path -> local name -> node
        # path -> the local names a file binds to a library (`_library`): `re.match(...)`,
        # `join(...)` after `from os.path import join`, Go's `http.HandlerFunc(...)` call the
        # library, never a workspace definition that shares the name
        self.outside: dict[str, set[str]] = defaultdict(set)
        self.folders: set[str] = set()  # every folder name of the workspace
        for i, n in enumerate(nodes):
            if n.kind == "file":
                for suffix in module_suffixes(n.path):
                    self.modules[suffix].append(i)
                self.folders.update(n.path.split("/")[:-1])
            else:
                self.by_name[n.name].append(i)
                self.local[(n.path, n.qualname)] = i

    def _module(self, path: str, dotted: str) -> list[int]:
        if dotted.startswith("."):  # relative: one dot is this package
            level = len(dotted) - len(dotted.lstrip("."))
            package = module_name(path).split(".")
            if not path.endswith("__init__.py"):
                package = package[:-1]
            base = package[: len(package) - (level - 1)] if level - 1 <= len(package) else []
            dotted = ".".join([*base, dotted.lstrip(".")]).strip(".")
        hits = self.modules.get(dotted, [])
        language = language_for(path)  # `shop.cart` from Lua is `lua/shop/cart.lua`, not `lib/shop/cart.ex`
        hits = [h for h in hits if language_for(self.nodes[h].path) == language] or hits
        exact = [h for h in hits if module_name(self.nodes[h].path) == dotted]
        return exact or (hits if len(hits) <= 2 else [])

    def _by_name(self, path: str, name: str) -> list[int]:
        if (path, name) in self.local:
            return [self.local[(path, name)]]
        if name in self.aliases[path]:
            return [self.aliases[path][name]]
        if name in self.outside[path]:
            return []
        hits = self.by_name.get(name, [])
        return hits if len(hits) <= MAX_AMBIGUITY else []

    def resolve(self, path: str, source: str, target: str, typ: str) -> list[int]:
        if typ == "contains":
            t = self.index.get(target)
            return [t] if t is not None else []
        if typ == "import":
            return self._import(path, target)
        head, _, attr = target.rpartition(".")
        if not head:
            return self._by_name(path, target)
        if head in ("self", "cls", "this"):
            src = self.nodes[self.index[source]]
            owner = src.qualname.rsplit(".", 1)[0] if "." in src.qualname else src.qualname
            hit = self.local.get((path, f"{owner}.{attr}"))
            return [hit] if hit is not None else self._by_name(path, attr)
        if head.split(".")[0] in self.outside[path]:
            return []
        base = self.aliases[path].get(head.split(".")[0])
        if base is not None:
            node = self.nodes[base]
            if node.kind == "file":  # a top-level definition (Elixir: inside the file's `defmodule`)
                hit = self.local.get((node.path, attr))
                if hit is None and path.endswith((".ex", ".exs")):
                    hit = next((i for i in self.by_name.get(attr, []) if self.nodes[i].path == node.path), None)
            else:
                hit = self.local.get((node.path, f"{node.qualname}.{attr}"))
            if hit is not None:
                return [hit]
        hits = self.by_name.get(attr, [])
        return hits if len(hits) <= MAX_AMBIGUITY else []

    def _import(self, path: str, target: str) -> list[int]:
        spec, _, alias = target.partition("=")
        if alias and path.endswith(_JS_EXTS):
            # a name an ES import binds (`import { join } from 'path'`): the plain edge beside it is
            # the import; this one says only whether calls of the name go to a library
            if all(self.nodes[f].path == path for f in self._import(path, spec)):  # `stream.ts` imports 'stream'
                self._library(path, spec, alias)
            return []
        if _PATH_SHAPED.search(spec) or path.endswith(FILE_CONVENTION_SOURCES):
            # `./util`, `crate::a::b`, `App\\Util\\Money`, `util/helper`, `x.h`; Elixir modules, Zig files
            # module_paths never climbs above the root, whose `..` would read as a Python relative import
            for module_path in module_paths(spec, path):
                if files := self._module(path, module_path.replace("/", ".")):
                    if path.endswith((".ex", ".exs")):  # `alias MyApp.Repo`: `Repo.get(...)` calls into it
                        self.aliases[path][alias or spec.rsplit(".", 1)[-1]] = files[0]
                    return files[:1]
            self._library(path, spec, alias)
            return []
        module, _, name = spec.partition(":")
        if not name:
            files = self._module(path, module)
            if path.endswith(_JS_EXTS):  # a bare package name (`router`): a workspace package of it, not
                files = [f for f in files if module in self.nodes[f].path.split("/")[:-1]]  # `app.router.js`
            if files:
                local = alias or module.split(".")[0]
                self.aliases[path][local] = files[0] if alias or "." not in module else files[0]
            else:
                self._library(path, module, alias)
            return files[:1]
        files = self._module(path, f"{module}.{name}" if not module.endswith(".") else module + name)
        hit = files[:1]
        if not hit:
            for f in self._module(path, module)[:1]:  # the name and its file are both imported
                sym = self.local.get((self.nodes[f].path, name))
                hit = [sym, f] if sym is not None else [f]
        if hit:
            self.aliases[path][alias or name] = hit[0]
        else:
            self._library(path, module, alias, name)
        return hit

    def _library(self, path: str, spec: str, alias: str, name: str = "") -> None:
        """Note the local name an import the workspace does not resolve binds, when it surely is a
        library's: a Python absolute import (`import re`, `from os.path import join`), or a Go
        standard package (`fmt`, `net/http`: no dot in its first element, unlike a module path,
        and no workspace folder of its name, as a package of a dotless module would have), or a name
        a JavaScript or TypeScript file imports from a package (`fs`, `node:path`, `@scope/pkg/sub`;
        not a bundler's alias such as `@/lib` or `~/lib`) the workspace holds no folder of (a
        monorepo's `@trpc/server` is its `server` folder: its calls still link by name)."""
        if path.endswith(".py") and not spec.startswith("."):
            self.outside[path].add(alias or name or spec.split(".")[0])
        elif path.endswith(".go") and "." not in spec.split("/")[0]:
            package = spec.rstrip("/").rsplit("/", 1)[-1]
            if package not in self.folders:
                self.outside[path].add(alias or package)
        elif alias and path.endswith(_JS_EXTS) and not spec.startswith((".", "/", "~", "#", "@/")):
            parts = spec.removeprefix("node:").split("/")
            package = parts[1] if spec.startswith("@") and len(parts) > 1 else parts[0]
            if package not in self.folders:
                self.outside[path].add(alias)
