"""A titled question's words weighed by where they stand, for the lexical tier's BM25 query.

A pasted issue or a commit message with a body spends most of its words on the story around the
change; BM25 counts them all alike. Each query term of such a question gets a weight
exp(sum of the learned weights of what is true of it): it is in the title, it is in quoted code
(backticks or a fenced block), it holds a digit (versions, line numbers, issue numbers), it is a
compound name written whole (`read_csv`, `RouterGroup`). The weights are learned by
`training/train_term_weights.py` from mined commit history and the dev files, maximising the
fixed files the lexical tier's first 60 chunks hold (docs/BENCHMARKS.md 57b) and ship in
`weights/term_weights.json`. A question without a title (one line, the everyday question) is
searched with every term alike: there the weights moved nothing or lost (57b).
"""

from __future__ import annotations

import functools
import json
import logging
import math
from collections import Counter
from dataclasses import dataclass
from importlib import resources

from mcp_retrieval.indexers.analysis import compound_names, terms
from mcp_retrieval.question_parts import question_title, quoted_spans

log = logging.getLogger(__name__)

FEATURES = ("title", "code", "digit", "compound")
MODEL_FILE = "term_weights.json"


def term_features(question: str, counts: Counter[str]) -> dict[str, tuple[float, ...]] | None:
    """Each query term's features, in `FEATURES` order; None for a question without a title."""
    title = question_title(question)
    if title is None:
        return None
    in_title = set(terms(title))
    in_code = {t for span in quoted_spans(question) for t in terms(span)}
    compound = compound_names(question)
    return {t: (float(t in in_title), float(t in in_code), float(any(ch.isdigit() for ch in t)),
                float(t in compound)) for t in counts}


@dataclass(frozen=True, eq=False)  # hashed by identity: built queries are cached per (text, weigher)
class TermWeigher:
    version: str
    weights: tuple[float, ...]

    def __call__(self, question: str, counts: Counter[str]) -> dict[str, float] | None:
        """Each term's multiplier for `question`'s BM25 query, or None: every term alike."""
        features = term_features(question, counts)
        if features is None:
            return None
        return {t: math.exp(sum(w * x for w, x in zip(self.weights, f))) for t, f in features.items()}

    @classmethod
    def from_dict(cls, data: dict) -> "TermWeigher":
        if tuple(data["features"]) != FEATURES:
            raise ValueError(f"its features {data['features']} are not {list(FEATURES)}")
        weights = tuple(float(w) for w in data["weights"])
        if len(weights) != len(FEATURES) or not all(math.isfinite(w) for w in weights):
            raise ValueError("its weights are not one finite number per feature")
        return cls(str(data.get("version", "")), weights)


@functools.lru_cache(maxsize=1)
def shipped() -> TermWeigher | None:
    """The weights that ship with the package, or None (with a warning): every term alike."""
    try:
        text = resources.files("mcp_retrieval.weights").joinpath(MODEL_FILE).read_text(encoding="utf-8")
        return TermWeigher.from_dict(json.loads(text))
    except (OSError, ValueError, KeyError, TypeError, ModuleNotFoundError) as exc:
        log.warning("query-term weights not loaded (%s); every term weighs alike", exc)
        return None
