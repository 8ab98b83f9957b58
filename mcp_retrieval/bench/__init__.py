"""Benchmarks: `python -m mcp_retrieval.bench swebench ...` and `... scale ...` (not unit tests)."""

import json
from collections import defaultdict
from pathlib import Path


def read_rows(path: str | Path) -> list[dict]:
    """The rows of an instance or question file: JSON lines, or one JSON list (SWE-bench's own files)."""
    text = Path(path).read_text(encoding="utf-8")
    if text.lstrip().startswith("["):
        return json.loads(text)
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def select_rows(rows: list[dict], repos, per_repo: int | None = None) -> list[dict]:
    """The rows of the given repositories in (repository, instance id) order, the first `per_repo`
    of each repository when that is set."""
    rows = sorted((r for r in rows if r["repo"] in repos), key=lambda r: (r["repo"], r["instance_id"]))
    if not per_repo:
        return rows
    seen: dict[str, int] = defaultdict(int)
    out = []
    for r in rows:
        seen[r["repo"]] += 1
        if seen[r["repo"]] <= per_repo:
            out.append(r)
    return out
