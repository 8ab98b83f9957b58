"""The ranking and assembly rules that can be switched off: one `Rules` object per root
(`Config.rules`), in force for each request that root answers.

Every rule here was kept by a measurement (the section of docs/BENCHMARKS-history.md beside it).
The server never switches one off; the switches exist to measure a rule again (`python -m
mcp_retrieval.bench ab --switch rules.NAME`) and for tests that show a rule is what decides their
case, which construct `Rules(name=False)` instead of patching a module. Code reads `current()`;
`Engine.gather` and the `Workspace` tools put the answering root's rules in force with `applied`
(a context variable: two threads, or two roots answering at once, each see their own).

A leaf module: it imports nothing of the project.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
from dataclasses import dataclass


@dataclass(frozen=True)
class Rules:
    # reading the question (pipeline, question_parts, extract)
    environment_set_aside: bool = True  # version dumps leave the question before any stage reads it (24a)
    env_sections: bool = True  # so do a template's Environment/Versions sections (24a)
    template_comments_set_aside: bool = True  # and an issue template's HTML comments (37c)
    join_title_pairs: bool = True  # the title tier also searches `man page` as `manpage`
    read_from_imports: bool = True  # `from pkg.mod import A` read as `pkg.mod.A` (19b)
    read_options: bool = True  # `--collect-only` read as an option, found where it is declared (19b)
    located_messages: bool = True  # a quoted message found at its format string (25a)
    # anchors (retrieve)
    library_test_packages: bool = True  # `django/test/`, `numpy/testing/`: a Python package's own, code (68a)
    one_word_modules_only_python: bool = True  # a bare `utils` names a module in Python only
    strict_path_match: bool = True  # a written path names at most three files; `lib.rs` alone none
    # the pool (pipeline)
    vectors_only_add: bool = True  # `packet`: with vectors the pool is the one without them plus the dense tiers' finds (42h)
    dense_by_title: bool = True  # a long question with a title: the title's vector is fused, not the whole text's (52a)
    # `packet`: the rerank stage's structural factors but the test demotion (prose, generated,
    # template) are left to the file ranker (43b)
    file_ranker_weighs_structure: bool = True
    file_test_by_path: bool = True  # the file ranker's `test`: the file's path, not its best chunk (a Rust `mod tests`) (68b)
    handwritten_twin_kept: bool = True  # of a source chunk and its generated copy, the source is kept (68d)
    learned_chunk_order: bool = True  # `packet`: a file's chunks in the learned order (`lead_chunk`, 67a)
    # the `context` window (continuation, assemble, workspace)
    continuations: bool = True  # a split definition's pieces come together (22)
    exact_remaining: bool = True  # what is left is recounted from the rendered window before a cut (34a)
    tokens_per_chunk: int | None = 150  # a window may hold one chunk per this many tokens (28d); None: fixed caps
    context_file_ranker: bool = True  # the learned file ranker weighs `context`'s files, not the hand-set evidence (54i)
    window_files_by_ranker: bool = True  # the window shows its files in the file ranker's order, as `packet` (65d)

    def with_changes(self, **changes) -> "Rules":
        """These rules with some changed; an unknown name is a clear error."""
        unknown = set(changes) - {f.name for f in dataclasses.fields(self)}
        if unknown:
            raise ValueError(f"no such rule: {', '.join(sorted(unknown))}")
        return dataclasses.replace(self, **changes)


DEFAULT = Rules()
_IN_FORCE: contextvars.ContextVar[Rules] = contextvars.ContextVar("mcp_retrieval_rules", default=DEFAULT)


def current() -> Rules:
    """The rules of the request being answered (the defaults outside any)."""
    return _IN_FORCE.get()


@contextlib.contextmanager
def applied(rules: Rules):
    """Put `rules` in force for the calls made inside the block (this thread only)."""
    token = _IN_FORCE.set(rules)
    try:
        yield rules
    finally:
        _IN_FORCE.reset(token)


def enforced(rules_of):
    """A method decorator: the call runs with `rules_of(self)` in force (an Engine's own config's
    rules; a Workspace's lead root's)."""
    def wrap(method):
        @functools.wraps(method)
        def call(self, *args, **kwargs):
            with applied(rules_of(self)):
                return method(self, *args, **kwargs)
        return call
    return wrap
