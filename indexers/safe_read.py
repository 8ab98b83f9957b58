"""The one way to read a workspace file: inside the root after resolving links, a regular file,
bounded in size, never blocking.

Indexing, the freshness gate and every other reader go through here, so a file that was swapped
for a symlink to `~/.ssh/id_rsa`, a FIFO, `/dev/zero` or a 400 MB log after it was indexed is a
skip reason, never bytes from outside the root, a hung worker thread or an exhausted heap.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

# Skip reasons (also the keys of `reindex`'s `skipped` counts).
OUTSIDE_ROOT = "outside_root"
NOT_REGULAR = "not_regular"
TOO_LARGE = "too_large"
UNREADABLE = "vanished_or_unreadable"

_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_CHUNK = 1 << 20
# Where the kernel says what an open descriptor is (Linux): a file reached first is checked after,
# by the path of what was reached, so no swap between a check and the open can pass.
_FD_PATHS = "/proc/self/fd"


def _kernel_names_fds() -> bool:
    if not hasattr(os, "O_PATH") or not os.path.isdir(_FD_PATHS):
        return False
    fd = os.open(os.devnull, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        return os.path.islink(f"{_FD_PATHS}/{fd}")
    finally:
        os.close(fd)


_KERNEL_NAMES_FDS = _kernel_names_fds()
_REFERENCE_FLAGS = getattr(os, "O_PATH", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_REOPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


@dataclass(frozen=True)
class FileBytes:
    data: bytes
    size: int
    mtime_ns: int


def _inside(root: Path, real: str) -> bool:
    """A resolved path (a string) is the root or below it."""
    return real == str(root) or real.startswith(str(root).rstrip(os.sep) + os.sep)


def resolve_inside(root: Path, rel: str) -> Path | str:
    """The real path of `root/rel`, or OUTSIDE_ROOT when it (or a folder on the way) links out."""
    try:
        real = Path(os.path.realpath(root / rel))
    except (OSError, ValueError):
        return UNREADABLE
    return real if real == root or real.is_relative_to(root) else OUTSIDE_ROOT


def stat_inside(root: Path, rel: str) -> os.stat_result | str:
    """`stat` of a workspace file that resolves inside the root and is a regular file, else a reason."""
    real = resolve_inside(root, rel)
    if isinstance(real, str):
        return real
    try:
        st = os.stat(real, follow_symlinks=False)
    except OSError:
        return UNREADABLE
    return st if stat.S_ISREG(st.st_mode) else NOT_REGULAR


def stat_many(root: Path, rels: Iterable[str]) -> dict[str, os.stat_result | str]:
    """`stat_inside` of each of `rels`, each folder resolved once for the whole call (an answer's
    files share a few folders; `realpath` walks every component of every path). A file found to
    be a link is resolved whole, and the final `stat` never follows one, as in `stat_inside`."""
    folders: dict[str, str | None] = {}
    out: dict[str, os.stat_result | str] = {}
    for rel in rels:
        folder, _, name = rel.rpartition("/")
        if name in ("", ".", "..") or rel.startswith("/"):
            out[rel] = stat_inside(root, rel)
            continue
        if folder not in folders:
            try:
                folders[folder] = os.path.realpath(root / folder) if folder else str(root)
            except (OSError, ValueError):
                folders[folder] = None
        real_folder = folders[folder]
        if real_folder is None:
            out[rel] = UNREADABLE
            continue
        if not _inside(root, real_folder):
            out[rel] = OUTSIDE_ROOT
            continue
        try:
            st = os.stat(os.path.join(real_folder, name), follow_symlinks=False)
        except (OSError, ValueError):
            out[rel] = UNREADABLE
            continue
        if stat.S_ISLNK(st.st_mode):
            out[rel] = stat_inside(root, rel)
        else:
            out[rel] = st if stat.S_ISREG(st.st_mode) else NOT_REGULAR
    return out


def _open_inside(root: Path, rel: str) -> int | str:
    """A descriptor of `root/rel` opened for reading, only if it is a regular file inside `root`;
    else a skip reason. Where the kernel names open descriptors, the path is first opened as a
    reference only (`O_PATH`: no device or FIFO is opened by it, a link as the last part is not
    followed), the kernel's name for what it reached is checked to lie inside the root and its
    type to be a regular file, and that same file is then opened for reading through the
    reference — an `lstat` of every folder on the way (`realpath`, ~2 s of babel's cold index)
    saved, and nothing to swap between the check and the open. A link as the last part, and
    systems without such names, take the resolve-then-open way."""
    if _KERNEL_NAMES_FDS:
        try:
            ref = os.open(root / rel, _REFERENCE_FLAGS)
        except ValueError:  # a NUL in the path
            return UNREADABLE
        except OSError:  # vanished, permission denied, not a folder on the way
            return UNREADABLE
        try:
            st = os.fstat(ref)
            if not stat.S_ISLNK(st.st_mode):
                if not _inside(root, os.readlink(f"{_FD_PATHS}/{ref}")):
                    return OUTSIDE_ROOT
                if not stat.S_ISREG(st.st_mode):
                    return NOT_REGULAR
                return os.open(f"{_FD_PATHS}/{ref}", _REOPEN_FLAGS)  # the same file, not the path again
        except OSError:
            return UNREADABLE
        finally:
            os.close(ref)
    real = resolve_inside(root, rel)
    if isinstance(real, str):
        return real
    try:
        return os.open(real, _OPEN_FLAGS)
    except OSError:  # vanished, permission denied, or a link swapped in since resolving (ELOOP)
        return UNREADABLE


def read_inside(root: Path, rel: str, max_bytes: int) -> FileBytes | str:
    """The bytes of `root/rel` if it is a regular file inside `root` of at most `max_bytes`, else a
    skip reason. `root` must already be resolved. Opening never blocks (O_NONBLOCK: a FIFO opens
    at once and is then refused by fstat) and never reads through a link that leaves the root
    (`_open_inside`); a file that grows past the bound while read is refused."""
    fd = _open_inside(root, rel)
    if isinstance(fd, str):
        return fd
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return NOT_REGULAR
        if st.st_size > max_bytes:
            return TOO_LARGE
        parts, total = [], 0
        while True:
            block = os.read(fd, min(_CHUNK, max_bytes + 1 - total))
            if not block:
                break
            parts.append(block)
            total += len(block)
            if total > max_bytes:
                return TOO_LARGE
        return FileBytes(b"".join(parts), st.st_size, st.st_mtime_ns)
    except OSError:
        return UNREADABLE
    finally:
        os.close(fd)
