"""Which lines of a chunk are documentation (comments, docstrings) rather than code.

An excerpt that drops a definition's documentation keeps every line of its code: when a chunk
does not fit a window whole, its code alone often does, and the code is what an agent edits
(docs/BENCHMARKS-history.md 16a). Line-based and conservative: a line counts as documentation only when
it is a comment line of the chunk's language, inside a block comment, or part of a Python
docstring (a string statement right after a `def`/`class` line, or at the top of a module).
Only runs of MIN_RUN or more such lines are elided — a lone comment costs less than its mark.
"""

from __future__ import annotations

import re

MIN_RUN = 3
_HASH = ("#",)
_C_LIKE = ("//",)
LINE_COMMENTS = {"python": _HASH, "ruby": _HASH, "shell": _HASH, "perl": _HASH, "r": _HASH, "elixir": _HASH,
                 "javascript": _C_LIKE, "typescript": _C_LIKE, "tsx": _C_LIKE, "go": _C_LIKE, "rust": _C_LIKE,
                 "java": _C_LIKE, "c": _C_LIKE, "cpp": _C_LIKE, "csharp": _C_LIKE, "swift": _C_LIKE,
                 "scala": _C_LIKE, "kotlin": _C_LIKE, "php": ("//", "#"), "dart": _C_LIKE}
BLOCK_COMMENTS = {"javascript", "typescript", "tsx", "go", "rust", "java", "c", "cpp", "csharp", "swift", "scala",
                  "kotlin", "php", "dart"}
_DOCSTRING_OPEN = re.compile(r'^[rRuUbBfF]{0,2}("""|\'\'\')')


def documentation_lines(lines: list[str], language: str) -> set[int]:
    """Indexes of the lines that are comments or docstrings (every such line, runs not yet applied)."""
    prefixes = LINE_COMMENTS.get(language, ())
    blocks = language in BLOCK_COMMENTS
    out: set[int] = set()
    i, previous = 0, ""  # previous: the last non-blank code line
    while i < len(lines):
        s = lines[i].strip()
        if not s:
            i += 1
            continue
        if language == "python" and (m := _DOCSTRING_OPEN.match(s)) and (not previous or previous.endswith(":")):
            quote = m.group(1)
            end = i if s.count(quote) >= 2 and len(s) > len(m.group(0)) else \
                next((j for j in range(i + 1, len(lines)) if quote in lines[j]), len(lines) - 1)
            out.update(range(i, end + 1))
            i, previous = end + 1, ""
            continue
        if blocks and s.startswith("/*"):
            end = i if "*/" in s[2:] else next((j for j in range(i + 1, len(lines)) if "*/" in lines[j]), len(lines) - 1)
            out.update(range(i, end + 1))
            i = end + 1
            continue
        if prefixes and s.startswith(prefixes) and not s.startswith(("#!", "#[")):  # a shebang, a PHP attribute
            out.add(i)
        else:
            previous = s
        i += 1
    return out


def elidable_runs(lines: list[str], language: str) -> set[int]:
    """The documentation lines that sit in runs of at least MIN_RUN (blank lines inside a run join it)."""
    doc = documentation_lines(lines, language)
    out: set[int] = set()
    i = 0
    while i < len(lines):
        if i not in doc:
            i += 1
            continue
        j = i
        while j + 1 < len(lines) and (j + 1 in doc or not lines[j + 1].strip()):
            j += 1
        while j > i and not lines[j].strip():  # a run does not swallow the blank line after it
            j -= 1
        if sum(k in doc for k in range(i, j + 1)) >= MIN_RUN:
            out.update(range(i, j + 1))
        i = j + 1
    return out
