"""Benchmarks: `python -m mcp_retrieval.bench swebench ...` and `... scale ...` (not unit tests)."""

import json
import statistics
import time
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


def speed_probe(rounds: int = 5) -> float:
    """Milliseconds for a fixed pure-Python workload (string splitting and dict counting, the
    shape of the ranking code's work), median of `rounds`: the VM's speed drifts by half within an
    hour and differs between machines, so timings are read beside it (BENCHMARKS, machine note)."""
    words = [f"name_{i % 97}_part{i % 13}" for i in range(20_000)]
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        counts: dict[str, int] = {}
        for w in words:
            for part in w.split("_"):
                counts[part] = counts.get(part, 0) + 1
        times.append((time.perf_counter() - t) * 1000)
    return round(statistics.median(times), 1)
