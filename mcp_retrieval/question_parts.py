"""The parts of a pasted question that are searched on their own, beside the whole question:
its title (`title` tier) and the source it quotes (`code` tier). Pure text; no index."""

from __future__ import annotations

import re

from mcp_retrieval import rules

CODE_NAME = re.compile(r"_|[a-z][A-Z]")  # snake_case or camelCase: a name, not an English word


# First lines that are no title: a template's heading, a code fence, a prompt, a traceback, a comment.
_NOT_A_TITLE = re.compile(r"^(#|\*\*|```|>>>|\$ |Traceback \(|<!--)")


def question_title(query: str) -> str | None:
    """A pasted issue's first line, its title: the subject in a few words. None for a one-line
    question, or when the first line is a template heading, code, a prompt or a traceback."""
    lines = [ln.strip() for ln in query.strip().splitlines() if ln.strip()]
    if len(lines) < 2 or len(lines[0]) > 200 or len(lines[0].split()) < 2 or _NOT_A_TITLE.match(lines[0]):
        return None
    return lines[0]


_WORD = re.compile(r"[A-Za-z]{2,}")


def with_joined_pairs(title: str) -> str:
    """A title and each pair of adjacent words written as one (`man page` -> `manpage`, `JUnit
    XML` -> `junitxml`): code and file names join what prose writes apart. A pair no file holds
    adds nothing to a BM25 query."""
    words = [w.lower() for w in _WORD.findall(title)]
    return " ".join([title, *(a + b for a, b in zip(words, words[1:]))])


_FENCE = re.compile(r"^[ \t]*+(`{3,}+|~{3,}+)[^\n]*+\n(.*?)^[ \t]*\1", re.S | re.M)
_INLINE = re.compile(r"(?<!`)`([^`\n]{1,200})`(?!`)")
_PROMPT = re.compile(r"^[ \t]*(?:>>>|\.\.\.|In \[\d+\]:)[ \t]?(.*)$", re.M)
# A line of source, not of output, logs, shell or configuration: a call, an assignment, or a
# definition or import keyword (what a fenced block of program output or a Caddyfile lacks).
_CODE_LINE = re.compile(r"(?<![\w.])[A-Za-z_][\w.]*+\(|^\s*[A-Za-z_][\w.]*(?:\[[^\]]*\])?\s*=[^=]|"
                        r"^\s*(?:import|from|def|class|fn|func|function|let|const|var|pub|public|private|static|"
                        r"return|struct|impl|#include)\b")
MIN_CODE_CHARS = 12
_TRACE_FRAME = re.compile(r'^\s*File "[^"\n]{1,512}", line \d+')


def prose(query: str) -> str:
    """The question without its fenced blocks (a blank line where each was)."""
    return _FENCE.sub("\n", query)


def fenced_blocks(query: str) -> list[str]:
    """The text inside each fenced block of the question."""
    return [m.group(2) for m in _FENCE.finditer(query)]


def question_code(query: str) -> str | None:
    """The source a question quotes, as one text: the lines of its fenced blocks and of interpreter
    prompts outside them that call, assign, define or import (not output, logs, shell or
    configuration; not a traceback's echo of its frames), and its inline `spans` that are code —
    the API the reporter actually called, which the question's prose outnumbers in BM25. None
    when it quotes (almost) no source."""
    parts = fenced_blocks(query)
    rest = prose(query)
    parts += _PROMPT.findall(rest)
    lines = [ln for p in parts for ln in _own_lines(_PROMPT.sub(r"\1", p)) if _CODE_LINE.search(ln)]
    lines += [s for s in _INLINE.findall(rest) if _CODE_LINE.search(s) or CODE_NAME.search(s)]
    code = "\n".join(lines)
    return code if len(code.strip()) >= MIN_CODE_CHARS else None


def _own_lines(block: str) -> list[str]:
    """A block's lines without those a Python traceback echoes under each frame: that is code of
    the frame's file — often the standard library's — which the path tier already reads by frame."""
    out, echo = [], False
    for line in block.splitlines():
        if not echo:
            out.append(line)
        echo = bool(_TRACE_FRAME.match(line))
    return out


# An issue template's instructions: HTML comments, which GitHub does not show. Only closed ones: a
# reporter who deleted the `-->` wrote the rest of the report inside the comment.
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.S)


def without_template_comments(query: str) -> tuple[str, int]:
    """The question without the HTML comments a template left in it, and how many it held. A
    template's hints name its own files and words — bat's asks for the output of
    `diagnostics/info.sh`, which then ranked first for an infinite-loop report —, none of them the
    reporter's; each comment's line breaks stay, so the lines around it keep their places."""
    return _HTML_COMMENT.subn(lambda m: "\n" * m.group(0).count("\n"), query)


# A line of an environment dump (`xr.show_versions()`, `pip list`, an issue template's Versions
# section): a short name, then a version or None — `numpy: 1.18.5`, `LANG: en_US.UTF-8`,
# `pytest 4.4.0`, `Python 3.10.9 (main, ...) [Clang ...]`.
_ENV_LINE = re.compile(r"^[ \t>*-]*[A-Za-z][\w.+/ -]{0,39}?(?:[ \t]*[:=][ \t]*(?:v?\d[\w.+-]*|None|unknown|N/A|"
                       r"[\w.-]+\.UTF-?8)|[ \t]+v?\d+\.\d+\.\d+[\w.+-]*)[ \t]*(?:\([^)\n]*\))?[ \t]*(?:\[[^\]\n]*\])?[ \t]*$",
                       re.I)
# The line that introduces one: `Output of xr.show_versions()`, "`pip list` of the environment".
_ENV_INTRO = re.compile(r"version|pip (?:list|freeze)|conda list|go env|environment|installed", re.I)
# What stands between that line and the dump: fences, markup, a table's header and rules.
_MARKUP = re.compile(r"^\s*(?:`{3,}\w*|~{3,}\w*|</?details>|</?summary>|[-=\s]+|package\s+version)?\s*$", re.I)
_FENCE_LINE = re.compile(r"^\s*(?:`{3,}|~{3,})")
MIN_ENV_LINES = 4
# A template's section about the reporter's machine: `### Environment`, `**Environment**:`,
# `## Versions`, `### OS / Environment`, `#### System information` ...
_ENV_HEADING = re.compile(r"^\s*(?:#{1,6}\s*|\*\*)?(?:your\s+|os\s*/\s*)?(?:environment|versions?|system\s+info\w*|"
                          r"platform|version\s+and\s+environment\s+details|os)\b[^\n]{0,60}$", re.I)
_HEADING = re.compile(r"^\s*(?:#{1,6}\s|\*\*[^*]+\*\*:?\s*$)")
# One of its facts: `- OS: macOS 11.6`, `* Node.js Version: 16.13.0`, `go version go1.20.4 darwin/arm64`.
_ENV_FACT = re.compile(r"^\s*(?:[-*+]\s+)?[^\s:][^:\n]{0,60}:\s*\S[^\n]{0,120}$|^\s*(?:[-*+]\s+)?\S[^\n]{0,60}\d+\.\d+[^\n]{0,60}$")
MAX_ENV_FACTS = 12
_DOTTED_MODULE = re.compile(r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*){2,}\b")  # sphinx.ext.autodoc, not Node.js


def without_environment(query: str) -> tuple[str, int]:
    """The question without its environment dumps, and how many lines were set aside. A run of at
    least `MIN_ENV_LINES` lines of names and versions (two other lines at most between them; most
    of the run such lines) is the reporter's installation, not the subject: its package names
    match the project's version-printing code and optional backends (xarray's `print_versions.py`
    and `h5netcdf_.py` first for a dask question). The line introducing it goes too — it names the
    function that printed it (`xr.show_versions()`) —, and so does a template's Environment section
    of a few `key: value` facts (`_environment_sections`)."""
    lines = query.splitlines()
    env = [bool(_ENV_LINE.match(ln)) for ln in lines]
    drop: set[int] = set()
    i = 0
    while i < len(lines):
        if not env[i]:
            i += 1
            continue
        end, gap = i, 0
        for j in range(i + 1, len(lines)):
            if env[j]:
                end, gap = j, 0
            elif lines[j].strip() and (gap := gap + 1) > 2:
                break
        run = range(i, end + 1)
        found = sum(env[j] for j in run)
        if found >= MIN_ENV_LINES and found >= 0.6 * sum(bool(lines[j].strip()) for j in run):
            drop.update(run)
            k = i - 1
            while k >= 0 and _MARKUP.match(lines[k]):
                if lines[k].strip() and not _FENCE_LINE.match(lines[k]):  # fences stay paired
                    drop.add(k)
                k -= 1
            if k >= 0 and len(lines[k]) <= 160 and _ENV_INTRO.search(lines[k]):
                drop.add(k)
        i = end + 1
    if rules.current().env_sections:
        drop |= _environment_sections(lines)
    if not drop:
        return query, 0
    return "\n".join(ln for n, ln in enumerate(lines) if n not in drop), len(drop)


def _environment_sections(lines: list[str]) -> set[int]:
    """The lines of a template's Environment/Versions section whose body is a few facts of the
    reporter's machine (`- OS: macOS`, `- go version: 1.16.3`), heading included, but for a fact
    that names a dotted module (the extensions in use); a section holding anything else (prose,
    code) stays."""
    drop: set[int] = set()
    for i, line in enumerate(lines):
        if not _ENV_HEADING.match(line):
            continue
        body: list[int] = []
        for j in range(i + 1, len(lines)):
            if _HEADING.match(lines[j]):
                break
            if lines[j].strip():
                body.append(j)
        if 1 <= len(body) <= MAX_ENV_FACTS and all(_ENV_FACT.match(lines[j]) or _ENV_LINE.match(lines[j])
                                                   for j in body):
            # a fact naming the project's code (`Sphinx extensions: sphinx.ext.autodoc`) stays
            drop.update([i, *(j for j in body if not _DOTTED_MODULE.search(lines[j]))])
    return drop
