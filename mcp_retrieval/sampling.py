"""Query understanding by the host's own model (`serve --understand sampling`, off by default).

An MCP server's caller *is* a language model, so instead of shipping one we may ask the host,
through `sampling/createMessage`, to rewrite a question as a search request (template in
`prompts/understand_sampling.txt`; broad "how does X work" questions get a step-back
generalisation instead). This module is the policy, free of any MCP import: whether to ask
(`plan`), what to ask (`SamplingAsk`), and what to make of the reply (`settle`). The transport
glue lives in `server.py`.

Decisions:
- At most one call per *novel* query: replies are cached by normalised query (case and
  whitespace folded), persisted next to the index so a restart does not re-spend the budget.
- A per-day budget (local date) caps calls, counted when the question is asked, whatever the
  host then does; past it the stage reports `skipped` with reason `budget` and answers go on.
- Anything but a well-formed JSON object of the expected shape (prose, a huge reply, a
  refusal, a timeout) falls back to the raw query with the stage reported as `error`.
- On the 2026-07-28 protocol the question rides an `InputRequiredResult` and the client
  retries with the answer; the retry is recognised (`in_flight`) and not charged again. A
  query whose earlier ask was never answered is not asked again for `IN_FLIGHT_TTL_S`: the
  next identical call proceeds without the host.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections import OrderedDict
from dataclasses import asdict, dataclass, field
from datetime import date
from pathlib import Path

from mcp_retrieval import prompts
from mcp_retrieval.classify import classify

log = logging.getLogger("mcp_retrieval")

MAX_REPLY_CHARS = 8000  # a rewrite is a few hundred characters; anything past this is not one
MAX_TOKENS = 400
TIMEOUT_S = 10.0  # legacy transport: how long a tool call waits on the host before falling back
IN_FLIGHT_TTL_S = 300.0
CACHE_ENTRIES = 512


def normalise(query: str) -> str:
    return " ".join(query.lower().split())


def is_broad(query: str) -> bool:
    """Broad questions ("how does X work", "overview of") get a step-back generalisation."""
    return classify(query).name == "broad"


@dataclass
class HostRewrite:
    rewrite: str
    sub_queries: list[str] = field(default_factory=list)
    path_prefix: str | None = None
    is_ambiguous: bool = False
    step_back: bool = False


@dataclass
class HostOutcome:
    """What the understanding stage reports: `done` with a rewrite, `skipped` with a reason
    (`off | no_sampling | budget | cached` — a cached outcome still carries its rewrite), or
    `error` with what went wrong (the raw query is used)."""

    status: str
    reason: str
    rewrite: HostRewrite | None = None
    ms: float = 0.0


@dataclass(frozen=True)
class SamplingAsk:
    system_prompt: str
    user_text: str
    max_tokens: int = MAX_TOKENS


class SamplingReplyError(ValueError):
    pass


def parse_reply(text: str, step_back: bool = False) -> HostRewrite:
    """The host's reply as a `HostRewrite`, or `SamplingReplyError` saying why it is not one."""
    if not isinstance(text, str) or not text.strip():
        raise SamplingReplyError("empty reply")
    if len(text) > MAX_REPLY_CHARS:
        raise SamplingReplyError(f"reply of {len(text)} characters (limit {MAX_REPLY_CHARS})")
    start = text.find("{")
    if start < 0:
        raise SamplingReplyError("no JSON object in the reply")
    try:
        obj, _ = json.JSONDecoder().raw_decode(text[start:])
    except json.JSONDecodeError as exc:
        raise SamplingReplyError(f"malformed JSON ({exc.msg})") from None
    if not isinstance(obj, dict):
        raise SamplingReplyError("the reply is not a JSON object")
    rewrite = obj.get("rewrite")
    if not isinstance(rewrite, str) or not rewrite.strip():
        raise SamplingReplyError("no 'rewrite' string")
    subs = obj.get("sub_queries") or []
    if not isinstance(subs, list):
        raise SamplingReplyError("'sub_queries' is not a list")
    subs = [s.strip()[:300] for s in subs if isinstance(s, str) and s.strip()][:3]
    filters = obj.get("filters") if isinstance(obj.get("filters"), dict) else {}
    ambiguous = obj.get("is_ambiguous")
    return HostRewrite(rewrite=rewrite.strip()[:1000], sub_queries=subs,
                       path_prefix=_safe_prefix(filters.get("path_prefix")),
                       is_ambiguous=ambiguous if isinstance(ambiguous, bool) else False, step_back=step_back)


def _safe_prefix(value) -> str | None:
    """A suggested folder, kept only when it is a plain relative path (it is a soft boost anyway)."""
    if not isinstance(value, str):
        return None
    value = value.strip().strip("/").removeprefix("./")
    if not value or len(value) > 200 or ".." in value.split("/") or "\\" in value or ":" in value:
        return None
    return value


TURNS_MARK = "\n\nRecent conversation (oldest first; rewrite the question, not these):\n"


def host_question(query: str, turns: list[str]) -> str:
    """What the host's model is asked to rewrite: the question, and the recent conversation when
    the agent passed it (cached under this whole text, so another conversation asks again)."""
    if not turns:
        return query
    return f"{query}{TURNS_MARK}" + "\n---\n".join(turns)


def question_part(text: str) -> str:
    return text.split(TURNS_MARK, 1)[0]


class SamplingPlanner:
    """Whether, what and how often to ask the host. Thread-safe; state persisted in `state_path`."""

    def __init__(self, enabled: bool, budget_per_day: int = 20, state_path: Path | None = None,
                 timeout_s: float = TIMEOUT_S, clock=time.time, today=date.today):
        self.enabled = enabled
        self.budget = max(0, int(budget_per_day))
        self.timeout_s = timeout_s
        self.state_path = state_path
        self._clock, self._today = clock, today
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, HostRewrite] = OrderedDict()
        self._in_flight: dict[str, float] = {}
        self._day, self.calls_today = self._today().isoformat(), 0
        self._load()

    # --- deciding -----------------------------------------------------------------------------
    def plan(self, query: str, *, client_can_sample: bool, retry: bool = False) -> SamplingAsk | HostOutcome:
        if not self.enabled:
            return HostOutcome("skipped", "off")
        if not client_can_sample:
            return HostOutcome("skipped", "no_sampling: the client does not offer sampling")
        key = normalise(query)
        with self._lock:
            self._roll_day()
            if key in self._cache:
                self._cache.move_to_end(key)
                return HostOutcome("skipped", "cached", self._cache[key])
            asked = self._in_flight.get(key)
            if asked is not None and self._clock() - asked < IN_FLIGHT_TTL_S:
                if retry:  # the client is bringing the answer to the question we asked: same question, no charge
                    return self.ask_for(query)
                return HostOutcome("error", "the host did not answer the last request for this query; raw query used")
            if self.calls_today >= self.budget:
                return HostOutcome("skipped", f"budget: {self.calls_today} of {self.budget} calls used today")
            self.calls_today += 1
            self._in_flight[key] = self._clock()
            self._save()
        return self.ask_for(query)

    @staticmethod
    def ask_for(query: str) -> SamplingAsk:
        """The request, rendered identically for identical queries (the retry protocol checks)."""
        system = prompts.load("understand_sampling")
        if is_broad(question_part(query)):
            system += "\n\n" + prompts.load("understand_step_back")
        return SamplingAsk(system_prompt=system, user_text=f"Question:\n{query}")

    # --- settling -----------------------------------------------------------------------------
    def settle(self, query: str, reply: str | None, error: str | None = None, ms: float = 0.0) -> HostOutcome:
        """Turn the host's reply (or the failure to get one) into the stage outcome."""
        key = normalise(query)
        with self._lock:
            self._in_flight.pop(key, None)
        if error is not None:
            return HostOutcome("error", f"{error}; raw query used", ms=ms)
        try:
            rewrite = parse_reply(reply or "", step_back=is_broad(question_part(query)))
        except SamplingReplyError as exc:
            log.info("sampling reply rejected: %s", exc)
            return HostOutcome("error", f"unusable reply ({exc}); raw query used", ms=ms)
        with self._lock:
            self._cache[key] = rewrite
            while len(self._cache) > CACHE_ENTRIES:
                self._cache.popitem(last=False)
            self._save()
        return HostOutcome("done", "host rewrite", rewrite, ms=ms)

    # --- state ----------------------------------------------------------------------------------
    def _roll_day(self) -> None:
        today = self._today().isoformat()
        if today != self._day:
            self._day, self.calls_today = today, 0

    def _load(self) -> None:
        if self.state_path is None or not self.state_path.exists():
            return
        try:
            data = json.loads(self.state_path.read_text(encoding="utf-8"))
            if data.get("day") == self._day:
                self.calls_today = int(data.get("calls", 0))
            for key, value in list(data.get("cache", {}).items())[-CACHE_ENTRIES:]:
                self._cache[key] = HostRewrite(**value)
        except (OSError, ValueError, TypeError) as exc:  # a damaged file costs the cache, nothing else
            log.warning("ignoring unreadable sampling state %s (%s)", self.state_path, exc)

    def _save(self) -> None:
        if self.state_path is None:
            return
        data = {"day": self._day, "calls": self.calls_today,
                "cache": {k: asdict(v) for k, v in self._cache.items()}}
        try:
            self.state_path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.state_path.with_suffix(".tmp")
            tmp.write_text(json.dumps(data), encoding="utf-8")
            os.replace(tmp, self.state_path)
        except OSError as exc:
            log.warning("could not save sampling state (%s)", exc)
