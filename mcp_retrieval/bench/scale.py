"""Scale benchmark (placeholder entry point is intentionally absent): see docs/BENCHMARKS.md."""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    print("the scale benchmark is not written yet; see docs/BENCHMARKS.md for the index-time figures", file=sys.stderr)
    return 2
