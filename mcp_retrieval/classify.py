"""Stage 0: a rule-based query classifier (no model). The class picks the rerank stage's signals
(a bug report, an exact lookup, a question about code), the graph's depth and the overview map."""

from __future__ import annotations

import re
from dataclasses import dataclass

_IDENT_ONLY = re.compile(r"^\s*`?[A-Za-z_][\w]*(?:[.:]{1,2}[A-Za-z_]\w*)*(?:\(\))?`?\s*$")
_PATH_ONLY = re.compile(r"^\s*[\w.\-]+(?:/[\w.\-]+)+/?\s*$|^\s*[\w\-]+\.\w{1,5}\s*$")
_PROCEDURAL = re.compile(r"\b(how (do|can|should|to)|steps? to|way to|configure|set ?up|install)\b", re.I)
_BROAD = re.compile(r"\b(overview|architecture|how does .* work|explain the|what is the (design|structure)|"
                    r"high[- ]level|walk me through)\b", re.I)
_MULTI_HOP = re.compile(r"\b(between|relationship|interact|calls? into|flow from|and then|end[- ]to[- ]end|"
                        r"who calls|where is .* used)\b", re.I)
_DEBUG = re.compile(r"Traceback \(most recent call last\)|\b\w+(Error|Exception)\b|\bbug\b|\bfails?\b|"
                    r"\bcrash|\bwrong\b|\bunexpected\b|\bshould\b", re.I)


@dataclass(frozen=True)
class QueryClass:
    name: str  # identifier | path | procedural | multi_hop | broad | debug | default
    graph_hops: int  # graph expansion depth


# Each class once had its own cap on a window's chunks (10 for an identifier ... 24 for a broad
# question); the budget's cap (one chunk per 150 tokens, workspace.chunk_cap) passed them all from
# 3,600 tokens up, and they went (BENCHMARKS 54b).
_CLASSES = {name: QueryClass(name, 2 if name == "multi_hop" else 1)
            for name in ("identifier", "path", "procedural", "multi_hop", "broad", "debug", "default")}


def classify(query: str) -> QueryClass:
    if _IDENT_ONLY.match(query):
        return _CLASSES["identifier"]
    if _PATH_ONLY.match(query):
        return _CLASSES["path"]
    if _DEBUG.search(query) and len(query) > 80:
        return _CLASSES["debug"]
    if _BROAD.search(query):
        return _CLASSES["broad"]
    if _MULTI_HOP.search(query):
        return _CLASSES["multi_hop"]
    if _PROCEDURAL.search(query):
        return _CLASSES["procedural"]
    return _CLASSES["default"]
