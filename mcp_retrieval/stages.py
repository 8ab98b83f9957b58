"""Per-stage timing and status (`done | skipped | error`) for `debug.stages`.

An optional stage that raises is recorded as `error`, warned about once on stderr, and its
input passes through: no stage failure ever fails an answer.
"""

from __future__ import annotations

import logging
import time
from contextlib import contextmanager

from mcp_retrieval.models import Stage

log = logging.getLogger("mcp_retrieval")
_warned: set[str] = set()


class StageLog:
    def __init__(self) -> None:
        self.stages: list[Stage] = []

    @contextmanager
    def run(self, name: str):
        record = {"status": "done", "detail": None}
        t0 = time.perf_counter()
        try:
            yield record
        except Exception as exc:
            record["status"], record["detail"] = "error", f"{type(exc).__name__}: {exc}"[:300]
            if name not in _warned:
                _warned.add(name)
                log.warning("stage %s failed (%s); passing its input through", name, record["detail"])
        self.stages.append(Stage(name=name, status=record["status"], ms=round((time.perf_counter() - t0) * 1000, 2),
                                 detail=record["detail"]))

    def skip(self, name: str, reason: str) -> None:
        self.record(name, "skipped", 0.0, reason)

    def record(self, name: str, status: str, ms: float, detail: str | None) -> None:
        """A stage that ran elsewhere (the host-sampling call happens in the server, before the engine)."""
        self.stages.append(Stage(name=name, status=status, ms=round(ms, 2), detail=detail))
