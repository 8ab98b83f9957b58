"""Argument checks shared by every entry point. Each failure is a one-line `BadRequest` that
says what to send instead; the MCP server turns it into a ToolError."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

MAX_QUERY_CHARS = 8000
MAX_SESSION_ID = 4096


class BadRequest(ValueError):
    """A caller error: the message says what to send instead."""


def check_query(query: object) -> tuple[str, list[str]]:
    """(cleaned query, notes). Longer than 8000 characters is read up to 8000 (noted in debug)."""
    if not isinstance(query, str):
        raise BadRequest(f"query must be a string of 1-8000 characters; got {type(query).__name__}")
    cleaned = query.replace("\x00", " ").encode("utf-8", "replace").decode("utf-8")
    notes = []
    if not cleaned.strip():
        raise BadRequest("query is empty: send the question or identifier to look up (1-8000 characters)")
    if len(cleaned) > MAX_QUERY_CHARS:
        notes.append(f"query was {len(cleaned)} characters; read the first {MAX_QUERY_CHARS}")
        cleaned = cleaned[:MAX_QUERY_CHARS]
    return cleaned, notes


MAX_TURNS = 5
MAX_TURN_CHARS = 1000


def check_turns(turns: object) -> list[str]:
    """The agent's last few messages, oldest first: at most 5 strings, each clipped to its last
    1000 characters (the end of a message is the part that leads to the question)."""
    if turns is None:
        return []
    if not isinstance(turns, list) or len(turns) > MAX_TURNS or not all(isinstance(t, str) for t in turns):
        raise BadRequest(f"recent_turns must be a list of at most {MAX_TURNS} strings (your last messages, oldest first)")
    cleaned = [t.replace("\x00", " ").encode("utf-8", "replace").decode("utf-8")[-MAX_TURN_CHARS:] for t in turns]
    return [t for t in cleaned if t.strip()]


def check_int(value: object, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadRequest(f"{name} must be an integer from {low} to {high}; got {value!r}"[:200])
    if not low <= value <= high:
        raise BadRequest(f"{name} must be from {low} to {high}; got {value}")
    return value


def check_session(session_id: object) -> str | None:
    if session_id is None:
        return None
    if not isinstance(session_id, str) or not session_id or len(session_id) > MAX_SESSION_ID:
        raise BadRequest(f"session_id must be a non-empty string of at most {MAX_SESSION_ID} characters, or omitted")
    return session_id


def check_paths(paths: object, root: Path, name: str, *, must_exist: bool) -> list[str]:
    """Workspace-relative POSIX paths inside `root`; anything escaping the root is refused."""
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        raise BadRequest(f"{name} must be a list of workspace-relative path strings")
    if len(paths) > 1000:
        raise BadRequest(f"{name} takes at most 1000 paths")
    out = []
    for raw in paths:
        cleaned = raw.replace("\\", "/").strip()
        if not cleaned or "\x00" in cleaned:
            raise BadRequest(f"{name} has an empty or invalid path; send workspace-relative paths like src/app.py")
        p = PurePosixPath(cleaned)
        if p.is_absolute():
            try:
                p = PurePosixPath(Path(cleaned).resolve().relative_to(root).as_posix())
            except (ValueError, OSError):
                raise BadRequest(f"{name}: {raw[:200]!r} is outside the workspace root; send a path inside it") from None
        if ".." in p.parts:
            resolved = (root / p).resolve()
            if not resolved.is_relative_to(root):
                raise BadRequest(f"{name}: {raw[:200]!r} is outside the workspace root; send a path inside it")
            p = PurePosixPath(resolved.relative_to(root).as_posix())
        rel = "" if p.as_posix() == "." else p.as_posix()
        if must_exist and not (root / rel).exists():
            raise BadRequest(f"{name}: {rel!r} does not exist in the workspace")
        out.append(rel)
    return out
