"""Which files an import list names: `module_paths` of each spec matched against a file's path,
as the tests of each language's import forms read them."""

import posixpath

from mcp_retrieval.indexers.import_links import C_INCLUDE, strip_extension, module_paths


def _ends_with(path: str, suffix: str) -> bool:
    return bool(suffix) and (path == suffix or path.endswith("/" + suffix))


def _same_tail(a: str, b: str) -> bool:
    """One path ends with the other at a folder boundary: a Go import path ends with the package
    folder (`github.com/acme/app/core/stat` and `core/stat`), an include path with the header's."""
    return _ends_with(a, b) or _ends_with(b, a)


class Imports:
    """One file's imports: which files do they name? (each language's `module_paths`, matched by path
    suffix)"""

    def __init__(self, importer: str, specs: list[str]):
        self.importer = importer
        # a path-shaped spec (Go package, include) may carry more folders than the repository
        # (`github.com/acme/app/`) or fewer (`bar.h` for `lib/bar.h`); a dotted one names the
        # module from a package root, so only the file may carry more (`src/`)
        self.exact: set[str] = set()  # dotted module paths: matched as suffixes of the file
        self.loose: list[str] = []  # path-shaped: either may be the suffix of the other
        for spec in specs:
            loose = "/" in spec and not spec.startswith(".") or bool(C_INCLUDE.search(spec))
            for path in module_paths(spec, importer):
                if loose:
                    self.loose.append(path)
                elif path:
                    self.exact.add(path)

    def __contains__(self, candidate: str) -> bool:
        if candidate == self.importer:
            return False
        stem = strip_extension(candidate)
        forms = [stem]
        if candidate.endswith(("/__init__.py", "/mod.rs", "/init.lua")) or candidate.endswith(".go"):
            if package := posixpath.dirname(candidate):
                forms.append(package)
        for form in forms:
            parts = form.split("/")
            if any("/".join(parts[i:]) in self.exact for i in range(len(parts))):
                return True
            if any(_same_tail(form, path) for path in self.loose):
                return True
        return False
