"""Benchmarks: `python -m mcp_retrieval.bench swebench ...` and `... scale ...` (not unit tests)."""
