"""Answers first: background work that competes with them for the interpreter waits for a quiet moment.

The code graph is rebuilt after an index change by the first question that needs it, in a thread
(`Engine.graph`). Started at once, that rebuild (about a second of Python on a large repository)
shared the interpreter with the question that started it: `context` right after a save on sympy
took 42 ms against 26 with the graph left as it was (docs/BENCHMARKS-history.md 56c). The question is
answered with the previous graph either way, so the rebuild now waits until no question is being
answered in this process (the agent is reading the answer), or `MAX_WAIT_S` at the longest so a
server kept busy still rebuilds.
"""

from __future__ import annotations

import contextlib
import functools
import threading

MAX_WAIT_S = 10.0

_changed = threading.Condition()
_answering = 0


@contextlib.contextmanager
def answering():
    """Mark the block as a question being answered."""
    global _answering
    with _changed:
        _answering += 1
    try:
        yield
    finally:
        with _changed:
            _answering -= 1
            _changed.notify_all()


def answers(method):
    """A method decorator: the call is a question being answered (`answering`)."""
    @functools.wraps(method)
    def call(*args, **kwargs):
        with answering():
            return method(*args, **kwargs)
    return call


def wait(timeout: float = MAX_WAIT_S) -> bool:
    """Until no question is being answered, or `timeout` seconds; True when it is quiet."""
    with _changed:
        return _changed.wait_for(lambda: _answering == 0, timeout)
