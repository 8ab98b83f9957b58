"""Stage 2: query understanding without a model call by default.

Always on and free: the calling agent's own `sub_queries` (it *is* a language model) and a
deterministic fallback — split a question at clear conjunctions into facets and expand
identifiers (`camelCase`, `snake_case`, dotted paths) into their parts. The optional host
sampling path lives in `mcp_retrieval.sampling` and feeds the same `Understanding`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from mcp_retrieval.indexers.analysis import split_identifier
from mcp_retrieval.sampling import HostRewrite, normalise

MAX_SUB_QUERIES = 3
_CONJUNCTION = re.compile(r"\s*(?:;|\band also\b|\bas well as\b|\band how\b|\band where\b|\band what\b|\band why\b)\s*",
                          re.I)
_IDENT = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*\b")


@dataclass
class Understanding:
    retrieval_query: str  # what the dense retriever reads (the original still feeds lexical and the reranker)
    sub_queries: list[str] = field(default_factory=list)
    expansions: list[str] = field(default_factory=list)
    source: str = "none"  # agent | deterministic | none, "+sampling" when the host rewrote it
    rewrite: str | None = None  # the host's rewrite, also searched lexically
    path_prefix: str | None = None  # the host's advisory folder (used only when the agent gave none)
    is_ambiguous: bool | None = None
    step_back: bool = False
    sampling: dict | None = None  # {"status", "reason"} of the host-sampling stage
    question: str = ""  # the question as asked

    def as_dict(self) -> dict:
        out = {"query": self.retrieval_query[:300], "sub_queries": self.sub_queries,
               "expansions": self.expansions[:20], "source": self.source}
        if self.rewrite is not None:
            out.update(rewrite=self.rewrite, path_prefix=self.path_prefix, is_ambiguous=self.is_ambiguous,
                       step_back=self.step_back)
        if self.sampling is not None:
            out["sampling"] = self.sampling
        return out

    @property
    def more_lexical_queries(self) -> list[str]:
        """Searched lexically beside the original question: the host's rewrite (unless it only
        repeats the question), every facet."""
        extra = [self.rewrite] if self.rewrite and normalise(self.rewrite) != normalise(self.question) else []
        return [*extra, *self.sub_queries]


def with_host(base: Understanding, query: str, host: HostRewrite) -> Understanding:
    """Fold the host's rewrite into the deterministic understanding. The agent's own
    sub-queries win over the host's (the agent is the caller); identifiers of the rewrite
    are expanded like the question's."""
    expanded = deterministic(host.rewrite, None)
    return Understanding(retrieval_query=expanded.retrieval_query,
                         sub_queries=base.sub_queries if base.source == "agent" else host.sub_queries,
                         expansions=list(dict.fromkeys(base.expansions + expanded.expansions)),
                         source="sampling" if base.source == "none" else f"{base.source}+sampling",
                         rewrite=host.rewrite, path_prefix=host.path_prefix,
                         is_ambiguous=host.is_ambiguous, step_back=host.step_back, question=query)


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
    return Understanding(retrieval, subs, expansions, source, question=query)
