"""Walk a workspace the way git would see it, and say why anything was skipped.

The file list is git's own (`indexers.listing`: tracked + untracked-not-ignored, or git's rules
through an empty repository outside git), so `.gitignore` semantics are exactly git's; on top,
`.mcp-retrieval-ignore` (gitignore syntax), pruned dependency/build trees, generated, binary and
oversized files, and links that leave the root are skipped. Without git installed, nested
`.gitignore` files and `.git/info/exclude` are matched with pathspec instead. Never raises for
one bad file: the file is skipped and the reason counted.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import stat
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pathspec

from mcp_retrieval.indexers.languages import GRAMMAR_LANGUAGES, language_for
from mcp_retrieval.indexers.listing import exported_repository, git_listing
from mcp_retrieval.indexers.notebooks import is_notebook, notebook_text
from mcp_retrieval.indexers.safe_read import read_inside
from mcp_retrieval.indexers.secrets import holds_credentials, without_private_keys

log = logging.getLogger(__name__)
DEFAULT_MAX_FILE_BYTES = 1_000_000
NOTEBOOK_SIZE_FACTOR = 20  # a notebook's outputs (figures as base64) are dropped: it may be this much larger


# A source file in a parsed language may be this much larger: a project's central class can pass a
# megabyte (RxJava's `Flowable.java`, 1.2 MB: 0.1 s to parse, chunk and read for the graph), and a
# generated one that large is read as generated (an amalgamation's stamp, BENCHMARKS 64c).
SOURCE_SIZE_FACTOR = 4
# A file with a longer line is not read: minified code, a source map, an SVG's path, a data file on
# one line. No agent reads such a line, and one chunk of it held megabytes (babel's minified test
# fixture and its `Makefile.js`: +190 MiB in the server while its first index ran, BENCHMARKS 73b).
MAX_LINE_CHARS = 20_000


def size_limit(rel: str, max_bytes: int) -> int:
    """The largest file at `rel` that is read: `max_bytes`; SOURCE_SIZE_FACTOR times it for source
    in a parsed language; NOTEBOOK_SIZE_FACTOR times it for a Jupyter notebook (only its cells'
    source is kept)."""
    if is_notebook(rel):
        return max_bytes * NOTEBOOK_SIZE_FACTOR
    return max_bytes * SOURCE_SIZE_FACTOR if language_for(rel) in GRAMMAR_LANGUAGES else max_bytes

# Directories that are never source of truth: dependencies, build output, caches.
PRUNED_DIRS = frozenset({
    ".git", ".hg", ".svn", "node_modules", ".yarn", ".venv", "venv", "env", "__pycache__", "build", "dist",
    ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".eggs", "site-packages",
    "target", "vendor", "third_party", ".idea", ".vscode", ".next", ".cache", "bower_components",
    "_build", ".elixir_ls", ".stack-work", "dist-newstyle", ".zig-cache", "zig-cache", "zig-out",
})
# Names of output folders that are also names of source: commons-io's `io/build` package, the
# `env` utility of uutils and nushell's `env` commands, a `target` module. A file the project
# committed there (`listing.Listing.committed`: git tracks it, or outside git the root has the
# project's `.gitignore`, whose rules already dropped the outputs) is source; otherwise the folder is
# pruned. `dist` is not among them: projects commit their built bundles (axios).
SOURCE_NAMES = frozenset({"build", "env", "target"})


def is_pruned_dir(name: str, committed: bool = False) -> bool:
    return (name in PRUNED_DIRS and not (committed and name in SOURCE_NAMES)) or name.endswith(".egg-info")


def in_pruned_dir(rel_path: str, committed: bool = False) -> bool:
    """A workspace path below a pruned folder (dependencies, build output, caches). A file the
    project committed is not pruned by a folder whose name is also a source name (`SOURCE_NAMES`)."""
    return any(is_pruned_dir(part, committed) for part in rel_path.split("/")[:-1])


GENERATED_FILES = frozenset({"package-lock.json", "yarn.lock", "pnpm-lock.yaml", "poetry.lock", "Cargo.lock", "uv.lock",
                             "go.sum", "Gemfile.lock", "composer.lock", "Pipfile.lock", "flake.lock", "bun.lockb"})
# Checksum lists and detached signatures: never the answer, often full of release names.
_CHECKSUM_FILE = re.compile(r"(?i)^(sha(1|224|256|384|512)sums?|md5sums?|checksums?)(\.\w+)?$|\.(asc|sig|sha256|sha512|md5)$")
# What editors and patch tools leave beside a file: backups (`cart.py~`, `#cart.py#`, `.bak`,
# `.orig`), swap and lock files (`.cart.py.swp`, `.#cart.py`), safe-write temporaries (vim's
# `4913`, JetBrains' `___jb_tmp___`), a patch's rejects. Each repeats a file's definitions as they
# were, and the watcher saw them come and go with every save. One the project committed is kept.
_EDITOR_LEFTOVER = re.compile(r"(~|\.(swp|swo|swn|swx|bak|orig|rej)|___jb_(tmp|old)___)$|^#.*#$|^\.#|^4913$")
BINARY_SUFFIXES = frozenset({
    ".png", ".jpg", ".jpeg", ".gif", ".bmp", ".ico", ".webp", ".pdf", ".zip", ".gz", ".tgz", ".bz2",
    ".xz", ".7z", ".tar", ".whl", ".so", ".dylib", ".dll", ".exe", ".o", ".a", ".pyc", ".class",
    ".jar", ".onnx", ".bin", ".pt", ".npy", ".npz", ".parquet", ".lance", ".db", ".sqlite", ".woff",
    ".woff2", ".ttf", ".otf", ".mp3", ".mp4", ".wav", ".mov", ".fits", ".h5", ".hdf5", ".pkl",
})
OUR_IGNORE_FILE = ".mcp-retrieval-ignore"
IGNORE_FILES = (".gitignore", OUR_IGNORE_FILE)


@dataclass(frozen=True)
class FileEntry:
    path: str  # workspace-relative, POSIX separators
    abs_path: Path
    size: int
    mtime_ns: int


@dataclass
class WalkStats:
    files: int = 0
    skipped: Counter[str] = field(default_factory=Counter)


class _Rules:
    """One ignore file's rules, each matched as git matches it: against the whole path of the file
    or folder being checked (below the ignore file's folder), the last matching rule deciding. A
    rule that names only folders (`logs/`) is not a file rule: what lies inside an ignored folder
    is ignored through that folder (`IgnoreRules.ignored`), which is also why a negation cannot
    bring a file back out of one. (pathspec's own reading matches a rule against a path's leading
    folders too, so `!docs/` re-included every file inside `docs`.)"""

    def __init__(self, lines: list[str]):
        self.files = _exact_rules(line for line in lines if _without_folder_slash(line) == line)
        self.folders = _exact_rules(_without_folder_slash(line) for line in lines)

    def check(self, sub: str, is_dir: bool) -> bool | None:
        """True: ignored, False: kept by a negation, None: no rule matches."""
        verdict = None
        for regex, include in self.folders if is_dir else self.files:
            if regex.match(sub):
                verdict = include
        return verdict


_INSIDE_OR_ITSELF = "(?:/|$)"  # how pathspec's regex of a rule ends: the path itself, or anything inside it


def _exact_rules(lines) -> tuple[tuple[re.Pattern, bool], ...]:
    """Each rule as a regex for one whole path: pathspec's `docs` also matches `docs/c` (so a later
    `!docs/` re-included `docs/c`) and `deep/**` is read as what is inside `deep`, not `deep`
    itself. (`foo/**` stays a prefix: git matches it against every path inside `foo`.)"""
    out = []
    for pattern in pathspec.PathSpec.from_lines("gitignore", list(lines)).patterns:
        if pattern.include is None or pattern.regex is None:
            continue
        text = pattern.regex.pattern
        exact = re.compile(text[:-len(_INSIDE_OR_ITSELF)] + "$") if text.endswith(_INSIDE_OR_ITSELF) else pattern.regex
        out.append((exact, pattern.include))
    return tuple(out)


def _load_spec(root: Path, rel: str) -> _Rules | None:
    """An ignore file's rules, read safely (a FIFO or a link out of the root is no rules)."""
    got = read_inside(root, rel, DEFAULT_MAX_FILE_BYTES)
    if isinstance(got, str):
        return None
    lines = got.data.decode("utf-8", errors="replace").splitlines()
    try:
        return _Rules(lines) if lines else None
    except Exception:  # a line pathspec cannot read (`!` alone, `[z-a]`): left out, as git leaves it
        valid = [line for line in lines if _readable(line)]
        log.warning("%s: %d ignore line(s) that are not patterns left out", rel, len(lines) - len(valid))
        return _Rules(valid) if valid else None


def _without_folder_slash(line: str) -> str:
    """`logs/` -> `logs`: a rule that names folders only, read for the checks of folders."""
    kept = line.rstrip(" ")
    return kept[:-1] if len(kept) > 1 and kept.endswith("/") and not kept.endswith("\\/") else line


def _readable(line: str) -> bool:
    try:
        _Rules([line])
        return True
    except Exception:
        return False


class IgnoreRules:
    """Gitignore rules keyed by the directory they live in; deeper rules win, as in git. `files`:
    the ignore files read in each directory (only `.mcp-retrieval-ignore` when git already
    applied its own rules)."""

    def __init__(self, root: Path, files: tuple[str, ...] = IGNORE_FILES, git_exclude: bool = True):
        self.root = root
        self.files = files
        spec = _load_spec(root, ".git/info/exclude") if git_exclude else None
        self._specs: dict[str, list[_Rules]] = {"": [spec] if spec else []}
        self._entered: set[str] = set()
        self._folders: dict[str, bool] = {}  # folder -> it or a folder above it is ignored (`_folder_out`)

    def enter(self, rel_dir: str, abs_dir: Path) -> None:
        if rel_dir in self._entered:
            return
        self._entered.add(rel_dir)
        specs = [s for name in self.files if (abs_dir / name).is_file()
                 and (s := _load_spec(self.root, f"{rel_dir}/{name}" if rel_dir else name))]
        if rel_dir == "":
            self._specs[""] = self._specs[""] + specs
        elif specs:
            self._specs[rel_dir] = specs

    def enter_parents(self, rel_path: str) -> None:
        """Read the ignore files of every folder on the way to `rel_path`, the root and its own
        folder included (each once)."""
        parts = rel_path.split("/")
        for depth in range(len(parts)):
            rel_dir = "/".join(parts[:depth])
            if rel_dir not in self._entered:  # the Path is built only for a folder not yet read
                self.enter(rel_dir, self.root.joinpath(*parts[:depth]))

    def ignored(self, rel_path: str, is_dir: bool) -> bool:
        """As git: inside an ignored folder, whatever the rules say of the path itself; else the
        deepest ignore file's last matching rule. The folders of `rel_path` must have been entered."""
        if is_dir:
            return self._folder_out(rel_path)  # the walk's verdict on a folder, kept for its files
        return self._folder_out(rel_path.rpartition("/")[0]) or self._verdict(rel_path, False)

    def _folder_out(self, rel_dir: str) -> bool:
        """Whether `rel_dir` or a folder above it is ignored (kept per folder: every file of a
        folder asks, and the git-listed walk and the watcher meet its files one by one)."""
        if not rel_dir:
            return False
        out = self._folders.get(rel_dir)
        if out is None:
            out = self._folder_out(rel_dir.rpartition("/")[0]) or self._verdict(rel_dir, True)
            self._folders[rel_dir] = out
        return out

    def _verdict(self, rel_path: str, is_dir: bool) -> bool:
        verdict = False
        parts = rel_path.split("/")
        for depth in range(len(parts)):
            specs = self._specs.get("/".join(parts[:depth]))
            if not specs:
                continue
            sub = "/".join(parts[depth:])
            for spec in specs:
                include = spec.check(sub, is_dir)
                if include is not None:
                    verdict = include
        return verdict


def is_binary(sample: bytes) -> bool:
    return b"\x00" in sample


class Scopes:
    """Workspace paths of files or folders (a watcher's batch, `reindex`'s `paths`): a path is in
    scope when it or one of its folders is one of them, found by walking up its folders (a branch
    switch's thousands of paths cost what one does)."""

    def __init__(self, paths: Sequence[str]):
        self.paths = frozenset(p.strip("/") for p in paths)
        self._on_the_way = frozenset(p[:i] for p in self.paths for i in range(len(p)) if p[i] == "/")

    def holds(self, rel: str) -> bool:
        while True:
            if rel in self.paths:
                return True
            cut = rel.rfind("/")
            if cut <= 0:
                return False
            rel = rel[:cut]

    def leads_to(self, rel_dir: str) -> bool:
        """A folder the walk must enter: in scope, or on the way to a scope."""
        return rel_dir in self._on_the_way or self.holds(rel_dir)


def scopes_of(paths: Sequence[str] | None) -> Scopes | None:
    """None (the whole workspace) for no paths given or one naming the root (`""`, `"."`)."""
    if paths is None or any(p.strip("/") in ("", ".") for p in paths):
        return None
    return Scopes(paths)


def walk(root: Path, *, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES, stats: WalkStats | None = None,
         use_git: bool = True, scopes: Sequence[str] | None = None,
         own: Sequence[Path] = ()) -> Iterator[FileEntry]:
    """Yield indexable files under `root`, in a stable (sorted) order: the files git shows
    (`indexers.listing`), minus `.mcp-retrieval-ignore`, pruned, generated, binary, oversized and
    linked-out files. Without git, the same through the built-in matcher. `scopes` (workspace
    paths of files or folders: a watcher's batch) limits the walk to them, so a saved file costs
    what it lists, not what the workspace holds (a 27,000-file tree took 1.6 s to walk whole).
    `own`: the server's own folders (its index, its embedding cache), left out when a user put
    them inside the root (`--index-dir .mcp-index`): the index never reads itself."""
    root = root.resolve()
    stats = stats if stats is not None else WalkStats()
    inside = prefixes_inside(root, own)
    for entry in _listed(root, max_file_bytes, stats, use_git, scopes):
        if inside and entry.path.startswith(inside):
            stats.skipped["index_folder"] += 1
            continue
        stats.files += 1
        yield entry


def prefixes_inside(root: Path, folders: Sequence[Path]) -> tuple[str, ...]:
    """The workspace paths (`pkg/index/`) of those of `folders` that lie inside `root` (resolved)."""
    return tuple(f"{f.resolve().relative_to(root).as_posix()}/" for f in folders
                 if f.resolve() != root and f.resolve().is_relative_to(root))


def _listed(root: Path, max_file_bytes: int, stats: WalkStats, use_git: bool,
            scopes: Sequence[str] | None) -> Iterator[FileEntry]:
    """`walk`'s files before its own folders are left out."""
    scope = scopes_of(scopes)
    if scope is not None and not scope.paths:  # an empty batch: nothing to list
        return
    listed = git_listing(root, sorted(scope.paths) if scope else None) if use_git else None
    if listed is None:
        yield from _walk_tree(root, max_file_bytes, stats, scope)
        return
    paths, n_ignored, committed = listed
    stats.skipped["ignored"] += n_ignored
    rules = IgnoreRules(root, files=(OUR_IGNORE_FILE,), git_exclude=False)
    for rel in paths:
        if scope is not None and not scope.holds(rel):
            continue
        if in_pruned_dir(rel, committed=rel in committed):
            stats.skipped["pruned_dir"] += 1
            continue
        rules.enter_parents(rel)
        entry = _check_file(root, root / rel, rel, rules, max_file_bytes, stats, committed=rel in committed)
        if entry is not None:
            yield entry


def _walk_tree(root: Path, max_file_bytes: int, stats: WalkStats, scope: Scopes | None = None) -> Iterator[FileEntry]:
    """The walk without git: os.walk with the built-in gitignore matcher (entering only the
    folders on the way to `scope`, whose ignore files still apply)."""
    rules = IgnoreRules(root)
    exported = exported_repository(root)  # as `listing.git_listing` reads a folder outside git
    visited: set[tuple[int, int]] = set()

    def on_error(exc: OSError) -> None:
        stats.skipped["unreadable_dir"] += 1

    for dirpath, dirnames, filenames in os.walk(root, onerror=on_error, followlinks=False):
        abs_dir = Path(dirpath)
        rel_dir = "" if abs_dir == root else abs_dir.relative_to(root).as_posix()
        try:
            st = abs_dir.stat()
            if (st.st_dev, st.st_ino) in visited:  # a loop through a bind mount or similar
                dirnames[:] = []
                continue
            visited.add((st.st_dev, st.st_ino))
        except OSError:
            dirnames[:] = []
            continue
        rules.enter(rel_dir, abs_dir)
        kept = []
        for name in sorted(dirnames):
            rel = f"{rel_dir}/{name}" if rel_dir else name
            if scope is not None and not scope.leads_to(rel):
                continue
            if is_pruned_dir(name, committed=exported):
                stats.skipped["pruned_dir"] += 1
            elif (abs_dir / name).is_symlink():
                stats.skipped["symlink_dir"] += 1
            elif rules.ignored(rel, is_dir=True):
                stats.skipped["ignored"] += 1
            else:
                kept.append(name)
        dirnames[:] = kept
        for name in sorted(filenames):
            rel = f"{rel_dir}/{name}" if rel_dir else name
            if scope is not None and not scope.holds(rel):
                continue
            entry = _check_file(root, abs_dir / name, rel, rules, max_file_bytes, stats)
            if entry is not None:
                yield entry


def _check_file(root: Path, abs_path: Path, rel: str, rules: IgnoreRules, max_bytes: int, stats: WalkStats,
                committed: bool = False) -> FileEntry | None:
    if not _utf8_path(rel):  # not even opened: an open of it stops the file watcher (`watch`)
        stats.skipped["undecodable_name"] += 1
        return None
    name = abs_path.name
    if not committed and _EDITOR_LEFTOVER.search(name):
        stats.skipped["editor_leftover"] += 1
        return None
    if (name in IGNORE_FILES or name in GENERATED_FILES or name.endswith((".min.js", ".min.css", ".map"))
            or _CHECKSUM_FILE.search(name)):
        stats.skipped["generated"] += 1
        return None
    if abs_path.suffix.lower() in BINARY_SUFFIXES:
        stats.skipped["binary"] += 1
        return None
    if rules.ignored(rel, is_dir=False):
        stats.skipped["ignored"] += 1
        return None
    if holds_credentials(rel):  # never opened (`secrets`)
        stats.skipped["credentials"] += 1
        return None
    try:
        st = os.lstat(abs_path)  # one call for the usual file; a link is resolved and followed
        if stat.S_ISLNK(st.st_mode):
            target = abs_path.resolve()
            if not target.is_relative_to(root):
                stats.skipped["symlink_outside_root"] += 1
                return None
            st = os.stat(abs_path)
    except (OSError, RuntimeError):  # vanished, permission denied, symlink loop
        stats.skipped["vanished_or_unreadable"] += 1
        return None
    if not stat.S_ISREG(st.st_mode):
        stats.skipped["not_regular"] += 1
        return None
    if st.st_size > size_limit(rel, max_bytes):
        stats.skipped["too_large"] += 1
        return None
    return FileEntry(rel, abs_path, st.st_size, st.st_mtime_ns)


def _utf8_path(rel: str) -> bool:
    """Whether the path is UTF-8 text. os.walk and git's listing keep a name's other bytes
    (`bad\\xffname.rs`, a Latin-1 name) as lone surrogates, which SQLite and a JSON result cannot
    hold: one such file failed the whole index."""
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def file_sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


_UTF16_MARKS = (b"\xff\xfe", b"\xfe\xff")


def read_source(root: Path, rel: str, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> tuple[str, str] | str:
    """(text, sha256 of the bytes) of a workspace file, or a skip reason (outside the root, not a
    regular file, too large, unreadable, binary, `minified`: a line over MAX_LINE_CHARS). Invalid
    UTF-8 is replaced, never fatal; a byte-order mark is dropped, and a file with UTF-16's (what
    some Windows tools write: a C# or PowerShell file, a `.rc`) is read as UTF-16 rather than
    skipped for its zero bytes."""
    got = read_inside(root, rel, size_limit(rel, max_bytes))
    if isinstance(got, str):
        return got
    if got.data.startswith(_UTF16_MARKS):
        text = got.data.decode("utf-16", errors="replace")  # the "utf-16" codec reads the mark and drops it
        if "\0" in text[:4096] or "\ufffd" in text[:4096]:  # binary data that begins with the mark
            return "binary"
    elif is_binary(got.data[:8192]):
        return "binary"
    elif is_notebook(rel):  # its cells as a script: outputs and metadata are never the answer
        text = notebook_text(got.data)
        if text is None:
            return "unreadable_notebook"
    else:
        text = got.data.decode("utf-8-sig", errors="replace")
    if has_long_line(text):
        return "minified"
    return without_private_keys(text), file_sha256(got.data)


def has_long_line(text: str) -> bool:
    """A line of more than MAX_LINE_CHARS characters (`read_source` skips the file)."""
    return len(text) > MAX_LINE_CHARS and max(map(len, text.split("\n"))) > MAX_LINE_CHARS


def files_on_disk(root: Path, limit: int = 2000) -> int:
    """Regular files under `root` outside `.git` and pruned trees, counted up to `limit`."""
    n = 0
    for _, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = [d for d in dirnames if d not in PRUNED_DIRS]
        n += len(filenames)
        if n >= limit:
            break
    return n


def suspiciously_small(root: Path, indexed: int) -> str | None:
    """A warning when the ignore rules leave far fewer files than the tree holds (a `.gitignore`
    of `*` with re-includes that the matcher got wrong, a stray `.mcp-retrieval-ignore`)."""
    if indexed >= 200:
        return None
    on_disk = files_on_disk(root)
    if on_disk >= 50 and indexed * 5 <= on_disk:
        return (f"only {indexed} of {on_disk}{'+' if on_disk >= 2000 else ''} files under {root} are indexed: "
                "check .gitignore and .mcp-retrieval-ignore (skipped counts are in the reindex result)")
    return None
