"""mcp-retrieval: a local MCP tool server that answers a coding agent with the few pieces of a
workspace that matter — hybrid lexical + dense + graph retrieval, inside a token budget."""

from mcp_retrieval.config import Config
from mcp_retrieval.engine import Engine
from mcp_retrieval.validate import BadRequest
from mcp_retrieval.workspace import Workspace, open_workspace

__all__ = ["BadRequest", "Config", "Engine", "Workspace", "open_workspace"]
__version__ = "0.1.0"
