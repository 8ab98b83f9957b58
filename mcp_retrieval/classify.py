"""Stage 0: a rule-based query classifier (no model). The class sets per-class caps."""

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
    max_chunks: int  # cap on delivered chunks for this class
    graph_hops: int  # graph expansion depth


_CAPS = {  # chunks reaching the window at most (min with the caller's max_chunks), graph hops
    "identifier": QueryClass("identifier", 10, 1),
    "path": QueryClass("path", 12, 1),
    "procedural": QueryClass("procedural", 20, 1),
    "multi_hop": QueryClass("multi_hop", 24, 2),
    "broad": QueryClass("broad", 24, 1),
    "debug": QueryClass("debug", 20, 1),
    "default": QueryClass("default", 20, 1),
}


def classify(query: str) -> QueryClass:
    if _IDENT_ONLY.match(query):
        return _CAPS["identifier"]
    if _PATH_ONLY.match(query):
        return _CAPS["path"]
    if _DEBUG.search(query) and len(query) > 80:
        return _CAPS["debug"]
    if _BROAD.search(query):
        return _CAPS["broad"]
    if _MULTI_HOP.search(query):
        return _CAPS["multi_hop"]
    if _PROCEDURAL.search(query):
        return _CAPS["procedural"]
    return _CAPS["default"]
