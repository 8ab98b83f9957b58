"""The module paths an import spec can name, per language: the code graph resolves its `import`
edges through them (`indexers/graph.py`). A spec becomes paths without extension; a file is
named when its path without extension — or its folder, for Go packages and Python `__init__`
files — ends with one of them at a folder boundary. Specs as `indexers/symbols.py` writes them:

    Python  `pkg.mod:Name=alias`, `.sibling:Name`, `..pkg.mod`     -> pkg/mod, pkg/mod/Name
    Java    `com.acme.util.Strings`, `com.acme.util.*`            -> com/acme/util/Strings
    JS/TS   `./util`, `../src/cards/card.js`, `preact`             -> resolved against the importer
    Go      `github.com/acme/app/core/stat`                        -> the package folder, by suffix
    Rust    `crate::a::b::{X, Y}`, `super::x`, `self::Kind::*`     -> a/b, a
    C/C++   `foo/bar.h`                                            -> foo/bar
    Ruby    `json`, `shop/cart`, `../util/helper` (require[_relative]) -> as Python dotted / JS paths
    PHP     `App\\Util\\Helper` (use)                               -> App/Util/Helper, Util/Helper
    Scala   `shop.util.Helper`                                     -> shop/util/Helper
    Lua     `lazy.core.config` (require)                           -> lazy/core/config, or its init.lua
    Elixir  `MyApp.HTTPClient` (alias, import, require)            -> my_app/http_client
    Haskell `Data.Aeson.Types`                                     -> Data/Aeson/Types
    Zig     `util.zig`, `../x/y.zig` (@import)                     -> beside the importer
    Shell   `./lib.sh`, `"${ROOT}/lib/x.bash"` (source)             -> lib/x (a variable's folder dropped)
"""

from __future__ import annotations

import posixpath
import re

from mcp_retrieval.indexers.analysis import CAMEL_BOUNDARY
from mcp_retrieval.indexers.languages import SOURCE_EXTENSION

_RUST_ROOTS = ("crate", "self", "super")
C_INCLUDE = re.compile(r"\.(h|hh|hpp|hxx|c|cc|cpp|cxx|inl|ipp)$")
_RUST_MODULE_FILES = ("mod.rs", "lib.rs", "main.rs")
# Importers whose dotted specs name files by their language's own convention (Elixir modules,
# Zig files), not as Python modules: the graph resolves their imports through `module_paths` too.
FILE_CONVENTION_SOURCES = (".ex", ".exs", ".zig")
_SHELL_VARIABLE_FOLDER = re.compile(r"^\$(\{[^}]*\}|\w+)/")


def elixir_file_stem(module: str) -> str:
    """Elixir's module -> file convention (`Macro.underscore`): `MyApp.HTTPClient` -> `my_app/http_client`."""
    return "/".join(CAMEL_BOUNDARY.sub("_", part).lower() for part in module.split("."))


def strip_extension(path: str) -> str:
    return SOURCE_EXTENSION.sub("", path)


def module_paths(spec: str, importer: str) -> list[str]:
    """The repository-relative module paths (no extension) an import spec can name; a path is
    matched as a suffix, so a package-qualified one need not start at the repository's top. A
    relative path that climbs above the repository (`../../util` from `web/app.js`) names nothing
    indexed and is left out."""
    return [p for p in _spec_paths(spec, importer) if p != ".." and not p.startswith("../")]


def _spec_paths(spec: str, importer: str) -> list[str]:
    spec = spec.partition("=")[0].strip()
    folder = posixpath.dirname(importer)
    if not spec:
        return []
    if importer.endswith((".ex", ".exs")):
        return [elixir_file_stem(spec)]
    if spec.endswith(".zig"):  # Zig imports a file by its path from the importer
        return [posixpath.normpath(posixpath.join(folder, strip_extension(spec)))]
    if _SHELL_VARIABLE_FOLDER.match(spec):  # `source "${BASH_IT}/lib/x.bash"`: the root is unknown
        return [strip_extension(_SHELL_VARIABLE_FOLDER.sub("", spec))]
    if "::" in spec:  # Rust: `crate::` from any file, `self::`/`super::` from the importer's module
        parts = [p for p in spec.split("{")[0].split("::") if p and p != "*"]
        own = folder if posixpath.basename(importer) in _RUST_MODULE_FILES else strip_extension(importer)
        relative = parts[:1] in (["self"], ["super"])
        base = own
        while parts and parts[0] in _RUST_ROOTS:
            if parts.pop(0) == "super":
                base = posixpath.dirname(base)
        stems = ["/".join(parts[:n]) for n in range(len(parts), 0, -1)]
        if relative:
            return [posixpath.join(base, s) for s in stems] or [base]
        return stems
    if "\\" in spec:  # PHP namespace: PSR-4 maps its vendor prefix onto a folder (`App\\` -> `src/`)
        parts = [p for p in spec.split("\\") if p]
        return ["/".join(parts)] + (["/".join(parts[1:])] if len(parts) > 1 else [])
    if spec.startswith(("./", "../")):  # JS/TS relative path
        return [posixpath.normpath(posixpath.join(folder, strip_extension(spec)))]
    if C_INCLUDE.search(spec):  # `#include "x.h"`: beside the importer first, else anywhere
        stem = strip_extension(spec).lstrip("/")
        return [posixpath.normpath(posixpath.join(folder, stem)), stem]
    if "/" in spec:  # Go package path (`github.com/acme/app/core/stat`), JS package subpath
        return [strip_extension(spec).lstrip("/")]
    module, _, name = spec.partition(":")
    if module.startswith("."):  # Python relative: one dot is the importer's package
        dots = len(module) - len(module.lstrip("."))
        base = folder
        for _ in range(dots - 1):
            base = posixpath.dirname(base)
        rest = module[dots:].replace(".", "/")
        path = posixpath.join(base, rest) if rest else base
    else:
        path = module.removesuffix(".*").replace(".", "/")
    out = [path]
    if name and name != "*":
        out.insert(0, f"{path}/{name}")  # `from pkg import submodule`
    return out
