"""mcp-retrieval: a local MCP tool server that answers a coding agent with the few pieces of a
workspace that matter — hybrid lexical + dense + graph retrieval, inside a token budget.

The package's names load on first use (PEP 562): `import mcp_retrieval.question_parts`, or the
command line's `--help`, does not pay for Tantivy, LanceDB and tree-sitter.
"""

import importlib

__all__ = ["BadRequest", "Config", "Engine", "Workspace", "open_workspace"]
__version__ = "0.1.0"
_HOMES = {"BadRequest": "validate", "Config": "config", "Engine": "engine", "Workspace": "workspace",
          "open_workspace": "workspace"}


def __getattr__(name: str):
    if name in _HOMES:
        return getattr(importlib.import_module(f"mcp_retrieval.{_HOMES[name]}"), name)
    raise AttributeError(f"module 'mcp_retrieval' has no attribute {name!r}")
