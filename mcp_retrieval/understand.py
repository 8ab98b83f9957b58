"""Stage 2: query understanding without a model call by default.

Always on and free: the calling agent's own `sub_queries` (it *is* a language model) and a
deterministic fallback — split a question at clear conjunctions into facets and expand
identifiers (`camelCase`, `snake_case`, dotted paths) into their parts. The optional host
sampling path lives in `mcp_retrieval.sampling` and feeds the same `Understanding`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from indexers.analysis import split_identifier

MAX_SUB_QUERIES = 3
_CONJUNCTION = re.compile(r"\s*(?:;|\band also\b|\bas well as\b|\band how\b|\band where\b|\band what\b|\band why\b)\s*",
                          re.I)
_IDENT = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*\b")


@dataclass
class Understanding:
    retrieval_query: str  # what the retrievers read (the original still feeds the reranker)
    sub_queries: list[str] = field(default_factory=list)
    expansions: list[str] = field(default_factory=list)
    source: str = "none"  # agent | deterministic | sampling | none

    def as_dict(self) -> dict:
        return {"query": self.retrieval_query[:300], "sub_queries": self.sub_queries,
                "expansions": self.expansions[:20], "source": self.source}


def deterministic(query: str, agent_sub_queries: list[str] | None) -> Understanding:
    subs = [s.strip() for s in (agent_sub_queries or []) if s and s.strip()][:MAX_SUB_QUERIES]
    source = "agent" if subs else "none"
    if not subs and len(query) < 300:  # a pasted bug report is one facet; a short question may be several
        parts = [p.strip(" ?.") for p in _CONJUNCTION.split(query) if len(p.strip(" ?.")) >= 12]
        if len(parts) > 1:
            subs, source = parts[:MAX_SUB_QUERIES], "deterministic"
    expansions: list[str] = []
    for ident in _IDENT.findall(query[:2000]):
        for piece in ident.split("."):
            parts = split_identifier(piece)
            if len(parts) > 1:
                expansions.append(" ".join(parts))
    expansions = list(dict.fromkeys(expansions))
    if expansions and source == "none":
        source = "deterministic"
    retrieval = query if not expansions else query + "\n" + " ".join(expansions[:30])
    return Understanding(retrieval, subs, expansions, source)
