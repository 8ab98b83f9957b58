"""The one place a candidate chunk's score is written.

Stages record evidence on the candidate and call `rescore`; nothing else assigns
`Candidate.score`. A chunk's score is

    score = max(base x (product of factors) + shared, inherited)

- `base`: the rerank model's reading of the retrieval tiers (`rerank`: the fused rank score over
  the pool's best; or a cross-encoder's probability);
- `factors`: named multipliers, in the order they were found: the structural evidence of the
  rerank stage (`test`, `prose`, `generated`, `template`, `conversation`), the
  caller's `path_prefix`, a cross-encoder's `unread` rest, the learned ranker's share for the
  chunk's file (`file`: `context`, `file_rank.with_learned_files`);
- `shared`: what the file's other matches add to every chunk of it (`context` without the
  learned ranker: `file_rank.with_file_evidence`);
- `inherited`: a split definition's piece ranks at least at a share of the piece that brought it
  (`context`: `continuation.with_continuations`);
- `cap`: a ceiling (a cross-encoder's unread rest stays below what it read).

`terms` gives the same evidence back by name, for `debug`. Files are ranked apart, by the learned
file ranker (`file_scorer`) over features of their chunks.
"""

from __future__ import annotations

import math

from mcp_retrieval.retrieve import Candidate


def rescore(c: Candidate) -> float:
    """Write `c.score` from its recorded evidence, and return it."""
    s = c.base * math.prod(c.factors.values())  # left to right, in the order they were found
    if c.cap is not None:
        s = min(s, c.cap)
    s += c.shared
    c.score = max(s, c.inherited)
    return c.score


def set_base(c: Candidate, base: float, factors: dict[str, float] | None = None) -> float:
    """A rerank model's reading: the base and the structural factors, replacing any earlier ones."""
    c.base, c.factors, c.cap, c.shared, c.inherited = base, dict(factors or {}), None, 0.0, 0.0
    return rescore(c)


def multiply(c: Candidate, name: str, factor: float) -> float:
    c.factors[name] = c.factors.get(name, 1.0) * factor
    return rescore(c)


def cap(c: Candidate, ceiling: float) -> float:
    c.cap = ceiling if c.cap is None else min(c.cap, ceiling)
    return rescore(c)


def share(c: Candidate, extra: float) -> float:
    """What the chunk's file adds to it (the same for every chunk of the file)."""
    c.shared += extra
    return rescore(c)


def inherit(c: Candidate, floor: float) -> float:
    """At least `floor`: the score a piece of a split definition takes from the piece that brought it."""
    c.inherited = max(c.inherited, floor)
    return rescore(c)


def terms(c: Candidate) -> dict[str, float]:
    """How the score was made, by name (what `debug` shows): the base, each factor other than 1,
    the file's share and an inherited floor when they count."""
    out = {"base": round(c.base, 4)}
    out.update((name, round(f, 4)) for name, f in c.factors.items() if f != 1.0)
    if c.cap is not None:
        out["cap"] = round(c.cap, 4)
    if c.shared:
        out["shared"] = round(c.shared, 4)
    if c.inherited:
        out["inherited"] = round(c.inherited, 4)
    return out
