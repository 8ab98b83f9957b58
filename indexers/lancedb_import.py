"""LanceDB, imported once and lean: without the parts of its import a server here never uses.

LanceDB's import costs 2.5 s and ~45 MB on Python 3.11, at every server start and every CLI
call, and most of it goes to things no local or S3 table calls: pandas (brought by the tokenizer
package, imported by pyarrow and LanceDB because it is installed), the API modules of the REST
namespace client (hundreds of pydantic-validated methods), and the `overrides` package checking
each of LanceDB's method signatures against its base class (Python 3.12 and newer use
`typing.override`, a marker, instead). Each is skipped here the way the library allows: pandas is
optional to both, the client's package is complete on first use, and a marker is what Python's
own `override` is. Together 2.5 -> 1.1 s (docs/BENCHMARKS.md 73a).
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import sys
from contextlib import contextmanager

# LanceDB imports this REST client's data models (`.models`); the package's own `__init__` also
# imports its nine API modules (1.2 s and 13 MB)
_NAMESPACE_CLIENT = "lance_namespace_urllib3_client"


def lancedb_module():
    """`lancedb`, imported on first use with its Rust log at errors only unless `LANCEDB_LOG`
    says otherwise: its warnings ("No existing dataset at …, it will be created" on every new
    index) reach stderr unformatted and report nothing wrong."""
    os.environ.setdefault("LANCEDB_LOG", "error")
    if "lancedb" not in sys.modules:
        with _lean_import():
            import lancedb
    import lancedb

    return lancedb


@contextmanager
def _lean_import():
    _defer_package_init(_NAMESPACE_CLIENT)
    blocker = None if "pandas" in sys.modules else _WithoutPandas()
    if blocker is not None:
        sys.meta_path.insert(0, blocker)
    with _overrides_as_markers():
        try:
            yield
        finally:
            if blocker is not None:
                sys.meta_path.remove(blocker)


def _defer_package_init(name: str) -> None:
    """Puts package `name` in `sys.modules` without running its `__init__`: its submodules import
    as usual (by its `__path__`), and the first read of a name the package itself defines runs
    the `__init__` then, so nothing that uses it finds it incomplete."""
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None or spec.submodule_search_locations is None:
        return
    package = importlib.util.module_from_spec(spec)

    def run_init(attribute: str):
        package.__dict__.pop("__getattr__", None)
        spec.loader.exec_module(package)
        return getattr(package, attribute)

    package.__getattr__ = run_init
    sys.modules[name] = package


class _WithoutPandas(importlib.abc.MetaPathFinder):
    """Makes pandas look absent while LanceDB is imported (33 MB of the server's memory for a
    library nothing here calls). pyarrow then keeps believing it absent in this process (its
    `to_pandas` fails): nothing here converts."""

    def find_spec(self, name, path=None, target=None):
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


@contextmanager
def _overrides_as_markers():
    """While LanceDB is imported, `overrides.override` only marks a method as overriding (what
    `EnforceOverrides` looks for), as `typing.override` does, instead of disassembling the class
    body's frame and comparing signatures (0.25 s). Restored after: other importers get it whole."""
    try:
        import overrides
    except ImportError:
        yield
        return
    real = overrides.override

    def mark(method=None, **_options):
        if method is None:  # used as @override(check_signature=...)
            return mark
        method.__override__ = True
        return method

    overrides.override = mark
    try:
        yield
    finally:
        overrides.override = real
