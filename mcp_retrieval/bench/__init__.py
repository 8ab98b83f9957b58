"""Benchmarks: `python -m mcp_retrieval.bench swebench ...` and `... scale ...` (not unit tests)."""

import json
from pathlib import Path


def read_rows(path: str | Path) -> list[dict]:
    """The rows of an instance or question file: JSON lines, or one JSON list (SWE-bench's own files)."""
    text = Path(path).read_text(encoding="utf-8")
    if text.lstrip().startswith("["):
        return json.loads(text)
    return [json.loads(line) for line in text.splitlines() if line.strip()]
