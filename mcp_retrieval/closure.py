"""Dependency closure: the signatures of what the delivered code calls or extends.

A window rarely ends exactly at its budget: the next chunk did not fit. That room holds one line
per definition the delivered bodies call or subclass (from the code graph), after the bodies —
`src/shop/pricing.py:12  def apply_discount(total: float, pct: float) -> float:` — so the agent
sees the shape of what the code depends on without a second call. Definitions already in the
window are left out; those called from more delivered chunks come first. Read from the graph
as it is (never waits for a rebuild) and from the index's chunk texts, so nothing comes from
outside a root; each line passes the control-tag filter.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from mcp_retrieval.indexers.tokens import budget_tokens
from mcp_retrieval.neutralize import neutralize

SECTION = '<mcp-retrieval:signatures note="definitions the code above calls or extends; bodies not shown"/>'
EDGE_TYPES = ("call", "inherit")
MAX_SIGNATURES = 12
MIN_ROOM = 40  # tokens left below which a section line and one signature do not pay
MAX_SIGNATURE_LINES = 4  # a signature spread over lines (long parameter lists) is cut here
KINDS = ("function", "method", "class")


@dataclass(frozen=True)
class Signature:
    root: str
    path: str
    line: int
    symbol: str
    text: str

    def render(self, show_root: bool) -> str:
        where = f"{self.root}:{self.path}" if show_root else self.path
        return f"{where}:{self.line}  {self.text}"


def signature_text(body: str, first_line: int, line: int) -> str | None:
    """The definition's head from a chunk text starting at `first_line`: decorators skipped, the
    lines up to the one that closes its parameter list (at most MAX_SIGNATURE_LINES), joined."""
    lines = body.split("\n")[max(0, line - first_line):]
    while lines and lines[0].lstrip().startswith("@"):
        lines = lines[1:]
    out: list[str] = []
    depth = 0
    for row in lines[:MAX_SIGNATURE_LINES]:
        out.append(row.strip())
        depth += row.count("(") - row.count(")")
        if depth <= 0:
            break
    text = " ".join(out).replace("( ", "(").replace(" )", ")").strip()
    return text or None


def dependencies(engine, placed: list, limit: int = MAX_SIGNATURES) -> list[Signature]:
    """Signatures of definitions the placed (non-stub) chunks of `engine`'s root call or extend,
    most-referenced first, excluding any the window already shows."""
    graph = engine.graph()
    if graph is None:
        return []
    shown = [(p.candidate.chunk.path, p.candidate.chunk.start_line, p.candidate.chunk.end_line)
             for p in placed if p.candidate.root == engine.name]
    counts: Counter[int] = Counter()
    for path, start, end in shown:
        callees = set()
        for source in graph.nodes_in(path, start, end):
            callees.update(t for t, typ in graph.out.get(source, ()) if typ in EDGE_TYPES)
        counts.update(callees)
    out: list[Signature] = []
    for target, _ in counts.most_common():
        node = graph.nodes[target]
        if node.kind not in KINDS or any(p == node.path and s <= node.start_line <= e for p, s, e in shown):
            continue
        text = _signature(engine, node)
        if text:
            out.append(Signature(engine.name, node.path, node.start_line, node.qualname, neutralize(text)))
        if len(out) >= limit:
            break
    return out


def _signature(engine, node) -> str | None:
    """From the indexed chunk holding the definition's first line (the innermost, latest-starting)."""
    found = engine.store.chunk_at(node.path, node.start_line)
    return signature_text(found[2], found[1], node.start_line) if found else None


def render(signatures: list[Signature], show_root: bool) -> str:
    """The section: its marker line, then one line a signature."""
    return "\n".join([SECTION, *(sig.render(show_root) for sig in signatures)])


def fitting(signatures: list[Signature], room: int, show_root: bool) -> list[Signature]:
    """The leading signatures whose section fits in `room` tokens (the newline before it included);
    the caller skips the graph work when the room is under MIN_ROOM."""
    kept: list[Signature] = []
    for sig in signatures:
        if budget_tokens(render([*kept, sig], show_root)) + 1 > room:
            break
        kept.append(sig)
    return kept
