"""Stage 5: rerank the fused pool.

Default (`structural`): the fused rank score, then structural signals — chunks in
files the question names, chunks defining names it uses, and demotion of test and prose files
for code questions (tests crowd out the answer: FINDINGS.md). No model, deterministic. For
`packet` only the test demotion and the conversation's signal apply (`RerankSignals.structural`):
its learned file ranker weighs the rest as features (docs/BENCHMARKS-history.md 43b).

`cross-encoder`: fastembed's TextCrossEncoder from a folder the user supplies (no weights are
obtainable offline here); scores (original query, chunk) pairs over the head of the pool. Any
failure falls back to the structural order, then to identity: a reranker problem never fails an answer.

The tiers' raw scores are not blended in: a z-score blend of the lexical and dense raw scores
(a quarter of the base until session 48) cost `packet` with vectors on mined commits and moved
`context` by noise (docs/BENCHMARKS-history.md 52c).
"""

from __future__ import annotations

import logging
import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mcp_retrieval import scoring
from mcp_retrieval.indexers.languages import PROSE_LANGUAGES, is_test_chunk
from mcp_retrieval.indexers.store import PRIORITY_LAST
from mcp_retrieval.retrieve import Candidate

log = logging.getLogger(__name__)

_DOCS_QUERY = re.compile(r"\b(docs?|documentation|readme|guide|tutorial|changelog|release notes?|install(ation)?)\b",
                         re.I)
_TEST_QUERY = re.compile(r"\b(test suite|unit ?tests?|the tests?|test case|fixture|conftest|pytest plugin)\b", re.I)
# Folders of documentation, examples and repository chrome: code there illustrates, it is rarely the answer.
_DOC_PATH = re.compile(r"(^|/)(docs?|examples?|demos?|samples?|benchmarks?|benches|announce|changelog|\.github)(/|$)",
                       re.I)
# Issue and pull-request templates: a pasted report echoes its template word for word.
_TEMPLATE_PATH = re.compile(r"(^|/)(\.github|\.gitlab|\.gitea)/(ISSUE_TEMPLATE|PULL_REQUEST_TEMPLATE|ISSUE_TEMPLATE\.md|"
                            r"PULL_REQUEST_TEMPLATE\.md|pull_request_template\.md)", re.I)
PASTED_ISSUE_CHARS = 400  # a question this long is a pasted issue or report: the answer is code


@dataclass
class RerankSignals:
    """Structural evidence from the question, shared by every reranker."""
    query: str
    anchored_files: set[str] = field(default_factory=set)
    code_question: bool = True
    bug_report: bool = False  # a pasted issue or traceback: docs and templates echo it, code fixes it
    about_tests: bool = False
    exact_lookup: bool = False  # the question is one identifier: its definition wins wherever it lives
    # the conversation (`recent_turns`, seed 004): files and definitions the agent's last messages
    # named; read here only, never by retrieval
    turn_files: set[str] = field(default_factory=set)
    turn_names: set[str] = field(default_factory=set)
    # the structural factors below weigh in (`context`); off for `packet`, whose learned file
    # ranker weighs prose, asides, named files and definitions as features and did as well
    # without them (BENCHMARKS 43b): there only the conversation's factor (the contract's) and
    # the test chunks' demotion stay (a test module inside a source file is no file feature)
    structural: bool = True


def signals_for(query: str, anchored_files: Sequence[str], query_class: str, structural: bool = True) -> RerankSignals:
    # A bug report mentioning "docs" is still about code; so is a pasted issue, whatever its words.
    bug_report = query_class == "debug" or len(query) >= PASTED_ISSUE_CHARS
    return RerankSignals(query=query, anchored_files=set(anchored_files),
                         code_question=bug_report or (query_class not in ("procedural", "broad")
                                                      and not _DOCS_QUERY.search(query)),
                         bug_report=bug_report, exact_lookup=query_class == "identifier",
                         about_tests=bool(_TEST_QUERY.search(query)), structural=structural)


@dataclass
class RerankWeights:
    test_factor: float = 0.35
    generated_factor: float = 0.5
    template_factor: float = 0.2
    prose_factor: float = 0.6
    prose_factor_bug_report: float = 0.2
    turn_factor: float = 1.15


WEIGHTS = RerankWeights()  # what every reranker built without weights of its own reads (`bench ab` changes it
# in place: `--switch rerank.WEIGHTS.test_factor=1.0`)


def _named_in_conversation(c: Candidate, s: RerankSignals) -> bool:
    return c.chunk.path in s.turn_files or bool(c.chunk.symbol and c.chunk.symbol.rsplit(".", 1)[-1] in s.turn_names)


def structural_factors(c: Candidate, s: RerankSignals, w: RerankWeights) -> tuple[dict[str, float], list[str]]:
    """The structural evidence on a chunk as named factors (`scoring` multiplies them into the
    score, in this order) and the reasons shown in `why`."""
    factors: dict[str, float] = {}
    why: list[str] = []
    if c.chunk.path in s.anchored_files:  # no factor: the anchor tier has brought it (a lift moved no window, 53a)
        why.append("file named in the question")
    if "symbol" in c.raw:  # no factor: the symbol tier has ranked it (a lift moved no window, 53c)
        why.append("defines (or re-exports) a name in the question")
    if "message" in c.raw:
        why.append("holds a message the question quotes, verbatim (or declares an option it names)")
    if _named_in_conversation(c, s):
        factors["conversation"] = w.turn_factor
        why.append("named in the recent conversation")
    if s.exact_lookup and "symbol" in c.raw:
        return factors, why  # asked for this name by name: no demotion of where it is defined
    if not s.about_tests and is_test_chunk(c.chunk.path, c.chunk.symbol, c.chunk.language):
        factors["test"] = w.test_factor
        why.append("test code, ranked after code")
    if not s.structural:  # `packet`: the conversation's factor (a contract) and the test chunks'
        return factors, why  # demotion (a file-level feature cannot see Rust's inline test modules)
    if c.chunk.priority == PRIORITY_LAST:
        factors["generated"] = w.generated_factor
        why.append("generated file, ranked after hand-written code")
    if s.code_question and (c.chunk.language in PROSE_LANGUAGES or _DOC_PATH.search(c.chunk.path)):
        factors["prose"] = w.prose_factor_bug_report if s.bug_report else w.prose_factor
    if s.bug_report and _TEMPLATE_PATH.search(c.chunk.path):
        factors["template"] = w.template_factor
        why.append("issue template: a report echoes it")
    return factors, why


class StructuralReranker:
    name = "structural"

    def __init__(self, weights: RerankWeights | None = None):
        self.weights = weights or WEIGHTS

    def rerank(self, candidates: list[Candidate], signals: RerankSignals) -> list[Candidate]:
        if not candidates:
            return candidates
        top = max(c.fused for c in candidates) or 1.0
        for c in candidates:
            factors, why = structural_factors(c, signals, self.weights)
            scoring.set_base(c, c.fused / top, factors)
            c.why.extend(why)
        return sorted(candidates, key=lambda c: (-c.score, c.chunk.id))


class IdentityReranker:
    name = "none"

    def rerank(self, candidates: list[Candidate], signals: RerankSignals) -> list[Candidate]:
        top = max((c.fused for c in candidates), default=1.0) or 1.0
        for c in candidates:
            scoring.set_base(c, c.fused / top)
        return sorted(candidates, key=lambda c: (-c.score, c.chunk.id))


class CrossEncoderReranker:
    """A user-supplied cross-encoder (a folder with model.onnx and tokenizer files).

    It reads the head of the structural order in batches, best first, and stops when
    `time_budget_s` is spent, so a query stays under ~1 s whatever the model or machine; what it
    did not read keeps its structural order below what it read. Pool and passage length were
    sized with `python -m mcp_retrieval.bench rerank_cost` (docs/BENCHMARKS.md, "Reranker cost").
    """

    name = "cross-encoder"
    # A MiniLM-L6-class cross-encoder reads ~31 pairs/s here at 500 passage characters (the
    # header, signature, docstring and first lines) and ~15/s at 1000+ (it hits 512 tokens):
    # 20 pairs x 500 chars is ~0.65 s; the time budget guards slower models and machines.
    HEAD = 20  # pairs at most per query
    BATCH = 8
    PASSAGE_CHARS = 500

    def __init__(self, folder: Path, cache_dir: Path, fallback: StructuralReranker, time_budget_s: float = 0.8):
        from fastembed.common.model_description import ModelSource
        from fastembed.rerank.cross_encoder import TextCrossEncoder

        if not (folder / "model.onnx").is_file() or not (folder / "tokenizer.json").is_file():
            raise FileNotFoundError(f"{folder} needs model.onnx and tokenizer.json (a cross-encoder export)")
        name = "local/cross-encoder-" + folder.name
        if name not in {m["model"] for m in TextCrossEncoder.list_supported_models()}:
            TextCrossEncoder.add_custom_model(model=name, sources=ModelSource(hf=name), model_file="model.onnx")
        self._model = TextCrossEncoder(name, specific_model_path=str(folder), cache_dir=str(cache_dir),
                                       local_files_only=True)
        self.fallback = fallback
        self.time_budget_s = time_budget_s

    def rerank(self, candidates: list[Candidate], signals: RerankSignals) -> list[Candidate]:
        ordered = self.fallback.rerank(candidates, signals)  # structural order first, then the model reads the head
        head = ordered[: self.HEAD]
        read = 0
        started = time.perf_counter()
        while read < len(head):
            part = head[read: read + self.BATCH]
            passages = [(c.chunk.header + "\n" + c.chunk.text)[: self.PASSAGE_CHARS] for c in part]
            scores = list(self._model.rerank(signals.query, passages, batch_size=self.BATCH))
            if len(scores) != len(part) or any(not math.isfinite(float(s)) for s in scores):
                raise ValueError("cross-encoder returned scores that do not describe the candidates")
            for c, s in zip(part, scores):
                factors, _ = structural_factors(c, signals, self.fallback.weights)
                c.raw["rerank"] = float(s)
                scoring.set_base(c, 1 / (1 + math.exp(-float(s))), factors)
            read += len(part)
            if time.perf_counter() - started >= self.time_budget_s:
                break
        done, rest = sorted(head[:read], key=lambda c: (-c.score, c.chunk.id)), ordered[read:]
        floor = min((c.score for c in done), default=0.0)
        for c in rest:  # the unread rest stays below the read head, in structural order
            scoring.cap(c, floor * 0.99)  # 0.99 x min(score, floor)
            scoring.multiply(c, "unread", 0.99)
        return done + rest
