"""The text form of a tool's result: what an MCP client reads beside the structured result, and
what the command line prints. Kept apart from `server` so the command line does not import the MCP
SDK, which a one-shot command never uses (0.6 s of `mcp-retrieval packet`, docs/BENCHMARKS-history.md 63h)."""

from __future__ import annotations

import json

from mcp_retrieval.models import ContextResult, PacketResult


def render_context(r: ContextResult, window: str) -> str:
    return window  # the head line is part of the window, inside the budget


def render_json(r, window: str = "") -> str:
    return json.dumps(r.model_dump(mode="json"), indent=1)


def render_packet(r: PacketResult, window: str = "") -> str:
    if r.miss:  # an abstaining packet still lists its weak leads below the miss line
        lines = [f"miss: {r.miss.reason}; next: {r.miss.escalate_to}" + (f" ({r.miss.detail})" if r.miss.detail else "")]
    else:
        lines = [f"know (confidence {r.know.confidence:.2f})"]
    for i in r.items:
        lines.append(f"{i.action:7} {i.path}:{i.start_line}-{i.end_line} {i.symbol or ''} "
                     f"score={i.score:.3f} fresh={str(i.fresh).lower()} — {i.why}")
    return "\n".join(lines)
