"""Which roots a workspace has: `--root` flags (`DIR` or `NAME=DIR`, repeatable), else a
`.mcp-retrieval.toml` in the current directory or at the top of its git work tree, else that
work tree (the current directory outside git).

`.mcp-retrieval.toml`:

    roots = ["services/api", "client=../client-lib"]   # relative to the file's folder
    [settings]
    embedder = "static"        # static | minilm | none
    understand = "off"         # off | sampling
    understand_budget = 20

Names default to the folder's name and are made unique (`api`, `api-2`); a folder given twice is
one root. The file is read again when `reindex` is called, so a root added there is indexed
(alone) without a restart. A root the file lists that is not a folder here (a teammate has not
cloned `../client-lib`) is left out with a warning and named in `index://status` as unavailable;
the file is refused only when none of its roots is a folder. A `--root` flag that is no folder is
refused at once: it was typed now.
"""

from __future__ import annotations

import logging
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from mcp_retrieval.config import detect_root

log = logging.getLogger(__name__)

CONFIG_FILE = ".mcp-retrieval.toml"
SETTINGS = {"embedder": str, "understand": str, "understand_budget": int,
            # measured neutral on the dev splits, so off unless a deployment turns it on:
            "signatures": bool}  # the closure's signatures in a window's room left (BENCHMARKS 10a)
# Settings that no longer do anything: read without error, so a file written for an older
# version still opens, and named in the log (co-activation: neutral, removed, BENCHMARKS 47).
RETIRED = {"coactivation"}


@dataclass
class RootSpec:
    name: str
    path: Path


@dataclass
class WorkspaceSpec:
    roots: list[RootSpec]
    settings: dict[str, object] = field(default_factory=dict)
    config_file: Path | None = None
    detected: bool = False  # no --root and no configuration file: the root around the cwd was taken
    unavailable: dict[str, str] = field(default_factory=dict)  # a listed root left out -> why


def _split_root(text: str) -> tuple[str | None, str]:
    """`NAME=DIR` -> (NAME, DIR); a plain `DIR` (even one holding `=`) -> (None, DIR)."""
    name, sep, path = text.partition("=")
    if not sep or "/" in name or not name.strip():
        return None, text
    return name.strip(), path


def parse_root(text: str, base: Path) -> tuple[str | None, Path]:
    name, path = _split_root(text)
    resolved = (base / Path(path).expanduser()).resolve()
    if not resolved.is_dir():
        raise ValueError(f"root {resolved} is not a directory; pass --root DIR (or NAME=DIR) of an existing folder")
    return name, resolved


def unique_names(pairs: list[tuple[str | None, Path]]) -> list[RootSpec]:
    """One root per folder (a folder given twice is one root, under its first name: two would
    index it twice into one index folder and answer each file twice), each under a unique name."""
    out: list[RootSpec] = []
    taken: set[str] = set()
    seen: set[Path] = set()
    for name, path in pairs:
        if path in seen:
            log.warning("root %s is given twice: it is one root", path)
            continue
        seen.add(path)
        base = name or path.name or "root"
        candidate, n = base, 2
        while candidate in taken:
            candidate, n = f"{base}-{n}", n + 1
        taken.add(candidate)
        out.append(RootSpec(candidate, path))
    return out


def find_config(cwd: Path) -> Path | None:
    for folder in dict.fromkeys([cwd, detect_root(cwd)]):
        if (folder / CONFIG_FILE).is_file():
            return folder / CONFIG_FILE
    return None


def read_config(path: Path) -> WorkspaceSpec:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"{path}: {exc}") from None
    raw = data.get("roots", [])
    if not isinstance(raw, list) or not all(isinstance(r, str) for r in raw):
        raise ValueError(f'{path}: roots must be a list of strings such as ["src/api", "client=../client"]')
    settings = data.get("settings", {})
    for key in sorted(RETIRED.intersection(settings)):
        log.warning("%s: setting %r was retired and is ignored", path, key)
    settings = {k: v for k, v in settings.items() if k not in RETIRED}
    for key, value in settings.items():
        if key not in SETTINGS or not isinstance(value, SETTINGS[key]):
            raise ValueError(f"{path}: unknown or mistyped setting {key!r}; known: {', '.join(SETTINGS)}")
    pairs, unavailable = [], {}
    for text in raw:
        try:
            pairs.append(parse_root(text, path.parent))
        except ValueError as exc:  # named as it would be served: `client`, or the folder's name
            name, folder = _split_root(text)
            unavailable[name or Path(folder).name or text] = str(exc).split(";")[0]  # the advice after it is for a typed --root
    if raw and not pairs:
        raise ValueError(f"{path}: no root it lists is a folder here ({next(iter(unavailable.values()))})")
    for text, why in unavailable.items():
        log.warning("%s: root %r left out: %s", path, text, why)
    return WorkspaceSpec(unique_names(pairs or [(None, path.parent.resolve())]), dict(settings), path,
                         unavailable=unavailable)


def resolve_workspace(flags: list[str] | None, cwd: Path | None = None) -> WorkspaceSpec:
    cwd = (cwd or Path.cwd()).resolve()
    if flags:
        return _narrow(WorkspaceSpec(unique_names([parse_root(f, cwd) for f in flags])))
    config = find_config(cwd)
    if config is not None:
        return read_config(config)  # a root listed there is meant, even a home folder
    return _narrow(WorkspaceSpec([RootSpec(detect_root(cwd).name or "root", detect_root(cwd))], detected=True))


def _narrow(spec: WorkspaceSpec) -> WorkspaceSpec:
    """Refuse a root that is the file system's root or the home folder, as `--root .` or the
    working directory gives it when a host starts servers there (or a home folder kept in git for
    its dotfiles is the work tree around a project): it would index every document, mail and
    dependency cache for hours. A `.mcp-retrieval.toml` that lists it is taken as meaning it."""
    for r in spec.roots:
        if (what := too_wide(r.path)) is not None:
            raise ValueError(f"root {r.path} is {what}; pass --root with a project's absolute path (a host "
                             f"may start servers there), or list it in a {CONFIG_FILE} to index it anyway")
    return spec


def too_wide(path: Path) -> str | None:
    """What `path` (resolved) is when it is the file system's root or the home folder, else None."""
    if path == Path(path.anchor):
        return "the file system's root"
    try:
        return "your home folder" if path == Path.home().resolve() else None
    except (RuntimeError, KeyError):  # no home folder known
        return None
