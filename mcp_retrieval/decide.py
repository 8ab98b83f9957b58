"""Stage 7: know or miss, with a confidence computed from the evidence.

Evidence for the top candidate: how much of the question's vocabulary it covers, how similar
it is by meaning (dense cosine), whether lexical and dense agree on the head, whether it sits
in a file the question names, the score gap to the runner-up, and how many of the question's
words the workspace holds anywhere. An anchored question (a file or symbol it names is found) is
always `know`; so is one whose meaning a sentence model's vectors match (MiniLM:
`similarity_decides`). Otherwise, with the static token table's vectors (the default), a logistic
model over the evidence decides, learned on semble_dev's questions (all answerable) against
off-topic ones asked of the same indexes (`weights/know_miss.json`, `training/know_miss_folds.py`;
docs/BENCHMARKS-history.md 47f); on lexical evidence alone (no vectors, or MiniLM's below its cosine) the
hand-set thresholds below decide, because the model learned for it misses a plain two-word
question half of whose words the workspace does not use. Weak evidence is `miss` (abstain), not
a broad fallback.
"""

from __future__ import annotations

import functools
import json
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources

from mcp_retrieval.indexers.analysis import STOPWORDS, term_set, terms
from mcp_retrieval.models import Know, Miss
from mcp_retrieval.retrieve import Candidate

log = logging.getLogger(__name__)
MODEL_FILE = "know_miss.json"
COVERAGE_TERMS = 8
MIN_DENSE = 0.40  # a sentence model's cosine that decides alone (MiniLM; docs/BENCHMARKS-history.md 40e)
MIN_COVERAGE = 0.30
# Without vectors a short everyday question ("radix tree path matching") rarely finds most of its
# words in one chunk, though the workspace uses them; an off-topic one ("the capital of
# Mongolia") uses words the workspace never does. So a question most of whose words the
# workspace knows, and whose first three chunks together hold some of them, is answered too
# (docs/BENCHMARKS-history.md 38c; words known in another form of their stem, BENCHMARKS 44c).
MIN_KNOWN_WORDS = 2 / 3
MIN_HEAD_COVERAGE = 0.2
HEAD_CHUNKS = 3
FEATURES = ("coverage", "known_words", "head_coverage", "dense_top", "anchored", "agree", "gap", "all_known")


@dataclass(frozen=True)
class Evidence:
    coverage: float
    dense_top: float
    agree: bool
    anchored: bool
    path_match: str | None
    top_score: float
    gap: float
    known_words: float = 1.0  # share of the question's words the lexical index holds anywhere
    head_coverage: float = 0.0  # coverage by the first HEAD_CHUNKS chunks together

    def features(self) -> dict[str, float]:
        """The know/miss model's inputs, by name (FEATURES)."""
        return {"coverage": self.coverage, "known_words": self.known_words, "head_coverage": self.head_coverage,
                "dense_top": self.dense_top, "anchored": float(self.anchored), "agree": float(self.agree),
                "gap": min(1.0, self.gap * 5), "all_known": float(self.known_words == 1.0)}


def salient_terms(query: str) -> set[str]:
    return {t for t in terms(query) if len(t) >= 3 and t not in STOPWORDS and not t.isdigit()}


def gather(query: str, ranked: Sequence[Candidate], anchors_hit: set[str], anchored_files: set[str],
           restatements: Sequence[str] = (), known: Callable[[set[str]], int] | None = None) -> Evidence:
    """`restatements`: the host model's rewrite and the facets (sub-queries) of the question; the
    top chunk's coverage is the best over the question and these (a two-facet question's best
    chunk answers one facet). `known`: how many of some words the workspace's lexical index holds."""
    top = ranked[0]
    have = term_set(top.chunk.header + "\n" + top.chunk.text)
    wanted = salient_terms(query)
    coverage = max(_coverage(words, have) for words in (wanted, *map(salient_terms, restatements)))
    head: set[str] = set()
    for c in ranked[:HEAD_CHUNKS]:
        head |= term_set(c.chunk.header + "\n" + c.chunk.text)
    known_words = known(wanted) / len(wanted) if known is not None and wanted else 1.0
    dense_top = max((c.raw.get("dense", 0.0) for c in ranked[:10]), default=0.0)
    head_lex = {c.chunk.id for c in sorted(ranked, key=lambda c: c.ranks.get("lexical", 10**6))[:5] if "lexical" in c.raw}
    head_dense = {c.chunk.id for c in sorted(ranked, key=lambda c: c.ranks.get("dense", 10**6))[:5] if "dense" in c.raw}
    second = ranked[1].score if len(ranked) > 1 else 0.0
    gap = (top.score - second) / top.score if top.score > 0 else 0.0
    anchored = bool(anchors_hit & {c.chunk.id for c in ranked[:10]})
    path_match = top.chunk.path if top.chunk.path in anchored_files else None
    return Evidence(coverage, dense_top, bool(head_lex & head_dense), anchored, path_match, top.score, gap,
                    known_words, _coverage(wanted, head))


def _coverage(wanted: set[str], have: set[str]) -> float:
    # A pasted issue has hundreds of terms and no chunk holds them all: cover a handful to count as evidence.
    return min(1.0, len(wanted & have) / min(len(wanted), COVERAGE_TERMS)) if wanted else 0.0


@dataclass(frozen=True)
class KnowModel:
    """A logistic score over named evidence features, and the score from which it answers."""
    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float
    threshold: float

    def score(self, ev: Evidence) -> float:
        values = ev.features()
        z = self.bias + sum(w * (values[f] - m) / s for f, m, s, w in zip(self.features, self.mean, self.scale, self.weights))
        return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))

    @classmethod
    def from_dict(cls, data: dict) -> "KnowModel":
        features = tuple(data["features"])
        if not features or not set(features) <= set(FEATURES):
            raise ValueError(f"unknown features {sorted(set(features) - set(FEATURES))}")
        arrays = [tuple(float(v) for v in data[k]) for k in ("mean", "scale", "weights")]
        if any(len(a) != len(features) for a in arrays) or not all(s > 0 for s in arrays[1]):
            raise ValueError("its arrays do not match its features")
        return cls(features, *arrays, float(data["bias"]), float(data["threshold"]))


@functools.lru_cache(maxsize=1)
def shipped_models() -> dict[str, KnowModel]:
    """{"static": ...} from the package, or {} (with a warning: the hand-set thresholds then
    decide for the static table too) when the file cannot be read."""
    try:
        text = resources.files("mcp_retrieval.weights").joinpath(MODEL_FILE).read_text(encoding="utf-8")
        return {name: KnowModel.from_dict(m) for name, m in json.loads(text)["models"].items()}
    except (OSError, ValueError, KeyError, TypeError, ModuleNotFoundError) as exc:
        log.warning("know/miss model not loaded (%s); the hand-set thresholds decide", exc)
        return {}


def decide(ev: Evidence, has_vectors: bool, similarity_decides: bool = True) -> Know | Miss:
    """Anchored evidence is always `know`; so is, with a sentence model's vectors
    (`similarity_decides`; not the static token table, whose cosines are high for any text), a
    question whose meaning a chunk matches. Otherwise the static table's learned model decides
    where its vectors were searched, else the words: a chunk covering enough of the question, or
    most of its words known to the workspace and some of them in the first chunks."""
    dense = has_vectors and similarity_decides and ev.dense_top >= MIN_DENSE
    model = shipped_models().get("static") if has_vectors and not similarity_decides else None
    if model is not None:
        answered = model.score(ev) >= model.threshold
    else:
        answered = ev.coverage >= MIN_COVERAGE or (ev.known_words >= MIN_KNOWN_WORDS
                                                   and ev.head_coverage >= MIN_HEAD_COVERAGE)
    if not (ev.anchored or dense or answered):
        return Miss(reason="abstain", escalate_to="ask_user",
                    detail=f"weak evidence: covers {ev.coverage:.0%} of the question's terms, "
                           f"best semantic match {ev.dense_top:.2f}")
    dense_part = max(0.0, min(1.0, (ev.dense_top - 0.2) / 0.5)) if has_vectors else ev.coverage
    confidence = 0.4 * ev.coverage + 0.3 * dense_part + 0.1 * ev.agree + 0.15 * ev.anchored + 0.05 * min(1.0, ev.gap * 5)
    return Know(confidence=round(max(0.05, min(1.0, confidence)), 3), top_score=round(ev.top_score, 4),
                score_gap=round(ev.gap, 4), lexical_dense_agree=ev.agree, path_match=ev.path_match)
