"""Stage 6: pack the ranked pool into a token budget — a hard ceiling on the rendered text.

Greedy MMR (relevance vs. redundancy, λ≈0.7) over word 3-gram Jaccard (`near_duplicates`) — no
embeddings, so it reproduces byte for byte; near-duplicates (Jaccard ≥ 0.9 to a chosen chunk) are dropped; chunks
already delivered in the session become one-line pointer stubs; a chunk too big for what is left
of the budget is delivered as an excerpt rather than skipped: its code without its comments and
docstrings when that fits, else its signature plus the lines around what matched (the rest marked
elided).

Every piece is costed from the string the renderer writes (`indexers.tokens.budget_counts`, the
same count budgets are in), and the finished window — head line, headers, stubs, bodies,
elision marks — is counted once more and trimmed from its weakest piece until it fits. So the
text an agent is shown never exceeds `budget_tokens`. Pure: no I/O.
"""

from __future__ import annotations

import difflib
import functools
import html
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from mcp_retrieval import near_duplicates, rules
from mcp_retrieval.doc_lines import elidable_runs
from mcp_retrieval.indexers.analysis import term_set
from mcp_retrieval.indexers.tokens import budget_counts, budget_tokens, byte_floor
from mcp_retrieval.neutralize import neutralize
from mcp_retrieval.retrieve import Candidate

EXCERPT_CONTEXT = 2  # lines kept on each side of a matching line
MIN_EXCERPT_TOKENS = 60  # below this an excerpt says too little to be worth its header
MAX_EXCERPT_HITS = 40
MIN_PIECE_TOKENS = 12  # below this not even a stub's header fits: stop looking
DIFF_SHARE = 0.6  # a changed definition comes as a diff only when that costs at most this share of it whole
SEAT_TOKENS = 120  # what a seat kept free for a further file must hold (a header and an excerpt)
HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")  # old start, count; new start, count
CODE_ONLY_NOTE = "code only; comments and docstrings elided"
MATCHING_NOTE = "signature and matching lines; the rest is elided"
NEAR_MISS = 0.25  # a chunk this close to fitting whole is costed exactly before it is cut to an excerpt
# A window chooses by relevance (MMR over the chunk scores), not by relevance per token: scaling a
# wide window's values by (200 / tokens) ** 0.25 (BENCHMARKS-history 26c) showed fewer of the
# changed functions and lines at 4k on mined fix commits, multilang_dev and swebench_dev alike
# (BENCHMARKS 53a), and was deleted.
STUB_NOTE = "stubs: chunks delivered earlier in this session; reread one if it is no longer in your context"
# Each piece is booked at an upper bound (its header with the path, which the window writes once
# per run of one file), so a wide window's books ran out while a tenth of its budget was still
# free. When a candidate does not fit whole by the books, what is left is counted again from the
# window as rendered so far before the candidate is cut or passed over (`Rules.exact_remaining`).


@dataclass
class Placed:
    candidate: Candidate
    stub: bool  # True: delivered earlier in this session, sent as a pointer
    text: str | None = None  # what the window shows of the chunk (neutralised); None for a stub
    excerpt: bool = False  # True: part of the chunk only, the rest elided
    code_only: bool = False  # the excerpt is the chunk's code without its comments and docstrings
    by_choice: bool = False  # code only though it fits whole: a big chunk in a tight window (Layout)
    diff: bool = False  # True: a unified diff against the text this session was shown before


@dataclass(frozen=True)
class Layout:
    """How a window is laid out (seed 002's caller classes and seat floor).

    `seat_floor`: while fewer files than this are in the window, a chunk may use only what leaves
    SEAT_TOKENS for each further file (bigger ones come as excerpts), so a tight budget shows
    several files instead of one long function. `max_share`: no chunk takes more than this share of
    the budget in full, or `whole_floor` tokens if that is more (frontier: 0.6 and 1,000 — one
    1,900-token docstring chunk filled a 2k window and left out the answer a 1k window held, while
    at 1k a whole 700-token function beats its excerpt; docs/BENCHMARKS-history.md 15e). `excerpt_share`:
    no excerpt takes more than this share of the budget — an
    excerpt stands in for a chunk that did not fit, and a long one (the matching lines of a
    2,000-token function) would leave a tight budget no room for the next candidate, often the
    answer whole (docs/BENCHMARKS-history.md 11a). `tight_window`, `code_share`: in a window of at most
    `tight_window` tokens a chunk over `code_share` of the budget comes as its code only, even when
    it fits whole, if that leaves out at least half of it — at 1k the first chunk is often an
    entry point whose docstring fills the window before the function the fix changes (BENCHMARKS
    18b); over 1k the gold functions are themselves those docstring-heavy chunks. `compact`:
    headers carry path and lines only (no symbol, a short excerpt note) — for small local models
    that pay for every token of markup."""
    seat_floor: int = 0
    max_share: float = 1.0
    whole_floor: int = 0
    excerpt_share: float = 0.5
    tight_window: int = 0
    code_share: float = 1.0
    compact: bool = False
    show_root: bool = False  # a workspace of several roots: headers name the root too


FRONTIER = Layout(max_share=0.6, whole_floor=1000, tight_window=1000, code_share=0.4)
COMPACT = Layout(max_share=0.5, compact=True)
COMPACT_MAX_CHUNKS = 8
RENDERS = {"frontier": FRONTIER, "compact": COMPACT}


@dataclass
class Window:
    placed: list[Placed] = field(default_factory=list)
    text: str = ""
    tokens: int = 0


# --- rendering ---------------------------------------------------------------------------------
def attr(value: object) -> str:
    """A value fit for an attribute of our markup: neutralised, quoted, no angle brackets."""
    return _attr(str(value))


@functools.lru_cache(maxsize=50_000)
def _attr(text: str) -> str:
    """Cached: a window's headers are rendered several times while it is packed (costed, placed,
    counted), and each value's neutralisation check was a third of assembly (docs/BENCHMARKS-history.md 41a)."""
    return html.escape(neutralize(text), quote=True).replace("&lt;", "‹").replace("&gt;", "›")


def header_line(p: Placed, same_file: bool = False, layout: Layout = FRONTIER) -> str:
    """`<mcp-retrieval:chunk path=… lines=… symbol=…/>` (`root=…` first in a workspace of several
    roots); root and path are left out when the previous piece was from the same file (contract:
    a header without `path` continues that file). Compact: no symbol, a one-word excerpt note."""
    c = p.candidate.chunk
    attrs = {} if same_file else {"root": p.candidate.root, "path": c.path} if layout.show_root else {"path": c.path}
    attrs["lines"] = f"{c.start_line}-{c.end_line}"
    if c.symbol and not layout.compact:
        attrs["symbol"] = c.symbol
    if p.excerpt:
        attrs["excerpt"] = "elided" if layout.compact else CODE_ONLY_NOTE if p.code_only else MATCHING_NOTE
    if p.diff:
        attrs["diff"] = "changed" if layout.compact else "changed since this session saw it; a diff against that text"
    tag = "stub" if p.stub else "chunk"
    return f"<mcp-retrieval:{tag} " + " ".join(f'{k}="{attr(v)}"' for k, v in attrs.items()) + "/>"


def _piece(p: Placed, same_file: bool, layout: Layout = FRONTIER) -> str:
    header = header_line(p, same_file, layout)
    return header if p.stub else header + "\n" + (p.text or "")


def _file(p: Placed) -> tuple[str, str]:
    return p.candidate.root, p.candidate.chunk.path


def order_for_reading(placed: Sequence[Placed], file_order: Mapping[tuple[str, str], float] | None = None
                      ) -> list[Placed]:
    """Files in `file_order` (a score per (root, path), higher first: the learned file ranker's, as
    `packet` orders them), else and on a tie in order of their strongest chunk; inside a file that
    chunk first (the answer leads) with the other pieces of its definition when it was split
    (`continuation`), all in line order, so a definition reads from its first line; then the
    file's other chunks in line order."""
    best: dict[tuple[str, str], float] = {}
    lead: dict[tuple[str, str], tuple] = {}  # each file's strongest chunk's definition: (symbol, kind)
    for p in placed:
        if p.candidate.score > best.get(_file(p), float("-inf")):
            best[_file(p)] = p.candidate.score
            lead[_file(p)] = (p.candidate.chunk.symbol or p.candidate.chunk.id, p.candidate.chunk.kind)
    rank = file_order or {}

    def leads(p: Placed) -> bool:
        return (p.candidate.chunk.symbol or p.candidate.chunk.id, p.candidate.chunk.kind) == lead[_file(p)]

    return sorted(placed, key=lambda p: (-rank.get(_file(p), 0.0), -best[_file(p)], _file(p), not leads(p),
                                         p.candidate.chunk.start_line, p.candidate.chunk.id))


def render_window(placed: Sequence[Placed], head: str = "", layout: Layout = FRONTIER) -> str:
    """The window: an optional head line, then one header per chunk (path once per run of one file)
    and its text; stubs are their header alone."""
    parts = [head] if head else []
    if any(p.stub for p in placed):
        parts.append(STUB_NOTE)
    previous = None
    for p in placed:
        parts.append(_piece(p, _file(p) == previous, layout))
        previous = _file(p)
    return "\n".join(parts)


def no_match_window(reason: str, escalate_to: str) -> str:
    return f'<mcp-retrieval:no_match reason="{reason}" escalate_to="{escalate_to}" do_not_answer="true"/>'


# --- diffs against what a session saw -----------------------------------------------------------
def _seen_before(earlier: dict, c: Candidate):
    """What the session last saw of this chunk: the same definition part (root, path, symbol,
    first line), else the definition's only remembered part (an edit above it moved its lines)."""
    if not c.chunk.symbol or not earlier:
        return None
    exact = earlier.get((c.root, c.chunk.path, c.chunk.symbol, c.chunk.start_line))
    if exact is not None:
        return exact
    parts = [v for k, v in earlier.items() if k[:3] == (c.root, c.chunk.path, c.chunk.symbol)]
    return parts[0] if len(parts) == 1 else None


def unified_diff(old: str, old_start: int, new: str, new_start: int) -> str:
    """`old` -> `new` as unified-diff hunks (2 lines of context) numbered by file line."""
    out = []
    for line in difflib.unified_diff(old.split("\n"), new.split("\n"), n=2, lineterm=""):
        if line.startswith(("---", "+++")):
            continue
        m = HUNK_HEADER.match(line)
        if m:
            a, b, c, d = (int(x) if x else 1 for x in m.groups())
            line = f"@@ -{a + old_start - 1},{b} +{c + new_start - 1},{d} @@"
        out.append(line)
    return "\n".join(out)


# --- excerpts ----------------------------------------------------------------------------------
def _signature_end(lines: list[str]) -> int:
    """Lines of the definition's signature: up to the first line ending its header (`:` or `{`)."""
    for i, line in enumerate(lines[:8]):
        if line.rstrip().endswith((":", "{", "=>", "->")):
            return i + 1
    return 1


def excerpt(text: str, query_terms: frozenset[str], max_tokens: int, first_line: int) -> str | None:
    """The signature plus the lines around those sharing the most terms with the question, within
    `max_tokens`; elided runs are marked with their line numbers. None when nothing matches or
    not even the signature and one match fit. Costs are summed per line (an upper bound: tokens
    add up across lines, the byte floor only rounds up), so no trial rendering is needed. Code and
    documentation lines are matched alike (matching code first moved no window: BENCHMARKS 53a)."""
    lines = text.split("\n")
    sig = _signature_end(lines)
    hits = sorted(((len(term_set(line) & query_terms), i) for i, line in enumerate(lines) if i >= sig),
                  key=lambda h: (-h[0], h[1]))
    hits = [i for n, i in hits if n > 0][:MAX_EXCERPT_HITS]
    if not hits:
        return None
    line_cost = budget_counts(lines)
    mark_cost = budget_tokens(_elision(first_line + len(lines), first_line + len(lines))) + 1
    keep: set[int] = set(range(sig))
    cost = sum(line_cost[i] + 1 for i in keep) + mark_cost
    added = False
    for i in hits:
        span = set(range(max(sig, i - EXCERPT_CONTEXT), min(len(lines), i + EXCERPT_CONTEXT + 1))) - keep
        extra = sum(line_cost[j] + 1 for j in span) + 2 * mark_cost
        if cost + extra > max_tokens:
            continue
        keep |= span
        cost += extra - mark_cost  # one new run can add at most one new elision mark net
        added = True
    return _render_excerpt(lines, keep, first_line) if added else None


@functools.lru_cache(maxsize=4096)
def code_only(text: str, language: str, first_line: int) -> str | None:
    """The chunk without its runs of comments and docstrings (each marked elided); None when it
    has none to leave out. Cached: the same chunks recur across calls."""
    lines = text.split("\n")
    drop = elidable_runs(lines, language)
    return _render_excerpt(lines, set(range(len(lines))) - drop, first_line) if drop else None


def _elision(first: int, last: int) -> str:
    """The line that stands for an elided run (bench tokens parses it back)."""
    return f"⋯ lines {first}-{last} elided ⋯"


def _render_excerpt(lines: list[str], keep: set[int], first_line: int) -> str:
    out: list[str] = []
    i = 0
    while i < len(lines):
        if i in keep:
            out.append(lines[i])
            i += 1
            continue
        j = i
        while j < len(lines) and j not in keep:
            j += 1
        out.append(_elision(first_line + i, first_line + j - 1))
        i = j
    return "\n".join(out)


# --- assembly ------------------------------------------------------------------------------------
def assemble(candidates: Sequence[Candidate], *, budget: int, max_chunks: int, delivered: set[str] = frozenset(),
             lam: float = 0.7, near_duplicate: float = 0.9, head: str = "",
             query_terms: frozenset[str] = frozenset(), layout: Layout = FRONTIER,
             earlier: dict | None = None, file_order: Mapping[tuple[str, str], float] | None = None) -> Window:
    """Choose what goes into the window and render it; `Window.tokens` (the rendered text's
    count, head line included) never exceeds `budget`. `file_order` orders the chosen files
    (`order_for_reading`); it chooses nothing."""
    remaining = budget - budget_tokens(head) - 1
    if delivered:
        remaining -= budget_tokens(STUB_NOTE) + 1
    chosen: list[Placed] = []
    if candidates and remaining > 0:
        max_piece = max(int(layout.max_share * budget), layout.whole_floor)
        code_over = int(layout.code_share * budget) if budget <= layout.tight_window else None
        chosen = _choose(candidates, remaining, max_chunks, delivered, lam, near_duplicate, query_terms, layout,
                         max_piece=max_piece, max_excerpt=int(layout.excerpt_share * budget), earlier=earlier or {},
                         budget=budget, head=head, code_over=code_over)
    return _fit(order_for_reading(chosen, file_order), budget, head, layout)


def _choose(candidates, remaining: int, max_chunks: int, delivered, lam, near_duplicate, query_terms,
            layout: Layout, max_piece: int, max_excerpt: int, earlier: dict, budget: int, head: str,
            code_over: int | None = None) -> list[Placed]:
    top = max(c.score for c in candidates) or 1.0
    pool = list(candidates)
    # every candidate's full header costed in one tokenizer call (one call per header cost more
    # than the rest of assembly together)
    stub = {id(c): c.chunk.sha256 in delivered for c in pool}
    headers = [_piece(Placed(c, stub=stub[id(c)]), False, layout) for c in pool]
    header_cost = {id(c): n + 1 for c, n in zip(pool, budget_counts(headers))}  # + the joining newline
    mmr = _MMR(pool, [lam * (c.score / top) for c in pool], 1 - lam)
    chosen: list[Placed] = []
    seated: set[tuple[str, str]] = set()  # files in the window
    full = 0
    recounted = -1  # how many pieces were chosen when what is left was last counted from the render
    while len(mmr) and full < max_chunks and remaining >= MIN_PIECE_TOKENS:
        picked, redundancy = mmr.pop_best()
        best = pool[picked]
        if redundancy >= near_duplicate:
            continue
        key = (best.root, best.chunk.path)
        seats_to_keep = max(0, layout.seat_floor - len(seated) - (key not in seated))
        limit = min(remaining - seats_to_keep * SEAT_TOKENS, max_piece)
        placed, cost = _place(best, header_cost[id(best)], limit, delivered, query_terms, layout, earlier, max_excerpt,
                              code_over)
        cut = _is_cut(placed)
        if cut and rules.current().exact_remaining and recounted != len(chosen):
            recounted = len(chosen)
            exact = _left_after(chosen, budget, head, layout, stub_note_due=bool(delivered) and not any(
                p.stub for p in chosen))
            if exact > remaining:
                remaining = exact
                limit = min(remaining - seats_to_keep * SEAT_TOKENS, max_piece)
                placed, cost = _place(best, header_cost[id(best)], limit, delivered, query_terms, layout, earlier,
                                      max_excerpt, code_over)
                cut = _is_cut(placed)
        if cut and not seats_to_keep and best.chunk.sha256 not in delivered:
            whole = _near_miss(best, header_cost[id(best)], limit, max_piece, chosen, budget, head, layout)
            if whole is not None:
                (placed, window_tokens), cost = whole, 0
                remaining = budget - window_tokens
                if delivered and not any(p.stub for p in chosen):  # the stub note still to come
                    remaining -= budget_tokens(STUB_NOTE) + 1
        if placed is None:
            continue  # too big for what is left even as an excerpt; a smaller one may still fit
        chosen.append(placed)
        seated.add(key)
        remaining -= cost
        mmr.chose(picked)
        if not placed.stub:
            full += 1
        elif sum(p.stub for p in chosen) >= max_chunks:
            mmr.close(lambda c: c.chunk.sha256 not in delivered)
    return chosen


class _MMR:
    """Maximal marginal relevance: a candidate's value is its relevance less `weight` x its largest
    similarity to a chosen piece; the highest value is taken next, ties to the earlier candidate.
    The similarities are the pool's word 3-gram Jaccard, measured for the whole pool at once
    (`near_duplicates`, the measure `packet` drops near-duplicates by; docs/BENCHMARKS-history.md 56i)."""

    def __init__(self, pool: list[Candidate], relevance: list[float], weight: float):
        self.candidates = list(pool)
        self._relevance = np.array(relevance, dtype=np.float64)
        self._weight = weight
        self._similar = near_duplicates.similarities([c.chunk.text for c in pool])
        self._redundancy = np.zeros(len(pool))  # largest similarity to a chosen piece
        self._open = np.ones(len(pool), dtype=bool)

    def __len__(self) -> int:
        return int(self._open.sum())

    def pop_best(self) -> tuple[int, float]:
        """The open candidate of highest value (its index), closed, and its redundancy."""
        values = np.where(self._open, self._relevance - self._weight * self._redundancy, -np.inf)
        best = int(np.argmax(values))  # the first of equal values: the earlier candidate
        self._open[best] = False
        return best, float(self._redundancy[best])

    def chose(self, i: int) -> None:
        np.maximum(self._redundancy, self._similar[i], out=self._redundancy)  # symmetric: a row is a column

    def close(self, keep) -> None:
        """Close every open candidate `keep` says no to."""
        for i in np.flatnonzero(self._open).tolist():
            if not keep(self.candidates[i]):
                self._open[i] = False


def _is_cut(placed: Placed | None) -> bool:
    """Not placed, or cut to an excerpt because it did not fit (not by the layout's choice)."""
    return placed is None or (placed.excerpt and not placed.by_choice)


def _left_after(chosen: list[Placed], budget: int, head: str, layout: Layout, stub_note_due: bool) -> int:
    """What the budget has left for one more piece (and its joining newline) after the window
    rendered from `chosen`, counted exactly; the stub note is kept back while it is still due."""
    used = budget_tokens(render_window(order_for_reading(chosen), head, layout))
    return budget - used - 1 - (budget_tokens(STUB_NOTE) + 1 if stub_note_due else 0)


def _near_miss(c: Candidate, header_cost: int, limit: int, max_piece: int, chosen: list[Placed], budget: int,
               head: str, layout: Layout) -> tuple[Placed, int] | None:
    """A chunk whose estimated cost missed what is left by at most NEAR_MISS of itself, placed whole
    when the window rendered with it — counted exactly, a file's later headers without its path —
    still fits the budget: (the placed chunk, the window's tokens with it), else None."""
    text = _neutral_text(c.chunk.text)
    estimate = header_cost + _body_cost(c, text)
    if estimate > max_piece or estimate - limit > NEAR_MISS * estimate:
        return None
    whole = Placed(c, stub=False, text=text)
    tokens = budget_tokens(render_window(order_for_reading([*chosen, whole]), head, layout))
    return (whole, tokens) if tokens <= budget else None


def _body_cost(c: Candidate, text: str) -> int:
    """What the chunk's body costs whole: the count made at index time when neutralising changed
    nothing (the same measure; never below bytes/4), else the neutralised text counted."""
    return max(c.chunk.tokens, byte_floor(text)) if text == c.chunk.text else budget_tokens(text)


@functools.lru_cache(maxsize=4096)
def _neutral_text(text: str) -> str:
    return neutralize(text)  # the same chunks recur across calls; the scan is the costly part


def _place(c: Candidate, header_cost: int, remaining: int, delivered, query_terms,
           layout: Layout, earlier: dict, max_excerpt: int | None = None,
           code_over: int | None = None) -> tuple[Placed | None, int]:
    """The candidate as it would be placed (stub, diff, whole, or excerpt) and its cost with a full
    header (`header_cost`: its tokens, the newline after it and the joining newline); (None, 0)
    when it cannot fit in `remaining` (an excerpt: in `max_excerpt` either). A chunk costing more
    than `code_over` whole comes as its code only when that saves at least half of it."""
    if c.chunk.sha256 in delivered:
        p = Placed(c, stub=True)
        return (p, header_cost) if header_cost <= remaining else (None, 0)
    p = Placed(c, stub=False, text=_neutral_text(c.chunk.text))
    body_cost = _body_cost(c, p.text)
    seen = _seen_before(earlier, c)
    if seen is not None and seen[0] != c.chunk.sha256:  # changed since this session saw it
        changes = neutralize(unified_diff(seen[2], seen[1], c.chunk.text, c.chunk.start_line))  # one-off: not cached
        d = Placed(c, stub=False, text=changes, diff=True)
        cost = budget_tokens(_piece(d, False, layout)) + 1
        if cost <= DIFF_SHARE * (header_cost + body_cost) and cost <= remaining:
            return d, cost
    whole = header_cost + body_cost
    if code_over is not None and code_over < whole <= remaining:
        code = code_only(p.text, c.chunk.language, c.chunk.start_line)
        if code is not None:
            q = Placed(c, stub=False, text=code, excerpt=True, code_only=True, by_choice=True)
            cost = budget_tokens(_piece(q, False, layout)) + 1
            if 2 * cost <= whole:
                return q, cost
    if whole <= remaining:
        return p, whole
    p.excerpt = True
    if max_excerpt is not None:
        remaining = min(remaining, max_excerpt)
    room = remaining - budget_tokens(header_line(p, False, layout) + "\n") - 1
    if room < MIN_EXCERPT_TOKENS:
        return None, 0
    code = code_only(p.text, c.chunk.language, c.chunk.start_line)
    if code is not None:  # its code whole, when that fits, before a cut by matching lines
        q = Placed(c, stub=False, text=code, excerpt=True, code_only=True)
        cost = budget_tokens(_piece(q, False, layout)) + 1
        if cost <= remaining:
            return q, cost
    if not query_terms:
        return None, 0
    text = excerpt(p.text, query_terms, room, c.chunk.start_line)
    if text is None:
        return None, 0
    p.text = text
    return p, budget_tokens(_piece(p, False, layout)) + 1


def _fit(placed: list[Placed], budget: int, head: str, layout: Layout = FRONTIER) -> Window:
    """Render, count, and drop the weakest piece until the whole window fits (the greedy costs are
    an upper bound, so this rarely drops anything; it makes the ceiling exact, not estimated)."""
    placed = list(placed)
    while True:
        text = render_window(placed, head, layout)
        tokens = budget_tokens(text)
        if tokens <= budget or not placed:
            return Window(placed, text, tokens)
        weakest = min(range(len(placed)), key=lambda i: (placed[i].candidate.score, -i))
        placed.pop(weakest)
