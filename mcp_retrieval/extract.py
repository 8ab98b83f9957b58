"""Stage 1: pull the exact anchors out of a question: paths, traceback frames, dotted names,
identifiers, quoted strings, error lines and the literal parts of the messages they quote.
Pure functions, no index access."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from mcp_retrieval import rules
from mcp_retrieval.indexers.symbols import dotted_name
from mcp_retrieval.question_parts import prose

# Every open-ended run in a path below is bounded ({1,512}, possessive where nothing needs to
# backtrack into it): unbounded, they were quadratic on a pasted line without spaces — about a
# second at the 8,000 characters a question may hold, two minutes at 120,000.
_FRAME = re.compile(r'File "([^"]+)", line (\d+)(?:, in ([\w<>.]+))?')
# IPython and Jupyter print a frame as `<path> in <function>(<args>)` (the path sometimes a markdown
# link) and mark its line below with an arrow, `--> 1490`.
_IPYTHON_FRAME = re.compile(r"(?m)^\[?(?P<path>[^\s\[\]()]{1,512}\.py)\]?(?:\([^)\s]*\))? in (?P<func>[\w<>]+)\(")
_IPYTHON_ARROW = re.compile(r"(?m)^\s*-+>\s*(\d+)")
# Stack frames of other runtimes, as (function, path, line):
# Java/Kotlin `at com.x.Y.method(Y.java:12)`, JS/TS `at fn (/abs/path/x.js:1:194)` or `at /path/x.js:3:9`,
# Go `\t/home/u/pkg/x.go:42 +0x1d`, Rust `at src/main.rs:10:5` / `panicked at src/x.rs:10:5`.
_OTHER_FRAMES = (
    re.compile(r"\bat (?:[\w$]+\.)*[\w$]+\.(?P<func>[\w$<>]+)\((?P<path>[\w$]+\.(?:java|kt|scala|groovy)):(?P<line>\d+)\)"),
    re.compile(r"\bat (?:(?:new )?(?P<func>[\w$.<>\[\] ]+?) \()?(?P<path>(?:[A-Za-z]:)?[^\s()'\"]{1,512}\."
               r"(?:js|mjs|cjs|jsx|ts|tsx|mts|cts|vue)):(?P<line>\d+):\d+\)?"),
    # Go prints each frame's function on the line above its file: `pkg/path.(*node).getValue(0x1, ...)`
    re.compile(r"(?m)^(?P<func>(?:[\w./\-@]{1,256}\.)?(?:\(\*?\w+\)\.)?\w+)\([^\n]*\)\n\s+(?P<path>[^\s:]{1,512}\.go):(?P<line>\d+)"
               r"(?: \+0x[0-9a-f]+)?$"),
    re.compile(r"(?m)^\s+(?P<path>[^\s:]{1,512}\.go):(?P<line>\d+)(?: \+0x[0-9a-f]+)?$"),
    re.compile(r"(?P<path>(?<![\w/.])[\w./\-]{1,256}\.rs):(?P<line>\d+):\d+"),
    # Ruby: `app/models/cart.rb:12:in 'Cart#total'` (3.4) or "in `total'"
    re.compile(r"(?P<path>(?<![\w/.])[\w./\-]{1,256}\.rb):(?P<line>\d+):in [`'](?:[\w:]+[#.])?(?P<func>\w+[?!]?)'"),
    # PHP: `#0 /app/src/Cart.php(12): App\Cart->total()`, `in /app/src/Cart.php on line 12`
    re.compile(r"(?P<path>(?<![\w/.])[\w./\-]{1,256}\.php)\((?P<line>\d+)\): (?:[\w\\]+(?:->|::))?(?P<func>\w+)\("),
    re.compile(r"(?P<path>(?<![\w/.])[\w./\-]{1,256}\.php)(?::| on line )(?P<line>\d+)"),
    # C#: `at Shop.Cart.Total() in /src/Shop/Cart.cs:line 12`
    re.compile(r"\bat (?:[\w<>`]+\.)*(?P<func>\w+)\([^)]*\) in (?P<path>(?:[A-Za-z]:)?[^\s:]{1,512}\.cs):line (?P<line>\d+)"),
    # Swift: `Shop/Cart.swift:12: Fatal error: ...`
    re.compile(r"(?P<path>(?<![\w/.])[\w./\-]{1,256}\.swift):(?P<line>\d+)"),
)
# A link to lines of a file in a repository host's web view: GitHub `/blob/<ref>/<path>#L12-L40`,
# GitLab `/-/blob/<ref>/<path>#L12-40`, Bitbucket `/src/<ref>/<path>#lines-12`.
_PERMALINK = re.compile(r"/(?:-/)?(?:blob|src)/[^/\s]{1,128}/(?P<path>[^\s#?)\]>\"']{1,512}+)(?:\?[^\s#)]{0,256}+)?"
                        r"#L?(?:ines-)?(?P<first>\d+)(?:[-:]L?(?P<last>\d+))?")
_EXTENSIONS = (r"py|pyi|ipynb|js|jsx|mjs|cjs|ts|tsx|mts|cts|vue|svelte|go|rs|java|kt|scala|cs|rb|php|swift|c|h|cc|cpp|cxx|"
               r"hh|hpp|hxx|m|mm|proto|sh|md|rst|toml|cfg|ini|yaml|yml|json|txt")
# A reporter's own pointer at a line, written in prose: "`sessions.py:313` is simply ...", "see
# tree.go:446". Read outside fenced blocks only: there `file:line` is a log's or a compiler's output.
_POINTER = re.compile(r"(?<![\w/.@\-])(?P<path>(?:[\w.\-]{1,128}/){0,32}+[\w\-]{1,128}\.(?:" + _EXTENSIONS +
                      r")):(?P<line>\d{1,7})(?!\w|\.\d)")
_PATH = re.compile(r"(?<![\w@])((?:[\w.\-]{1,128}/){0,32}+[\w\-]{1,128}\.(?:" + _EXTENSIONS + r"))\b")
# `Type::method`, `std::vec::Vec` (Rust, C++) and `obj->field` (C, C++, PHP): chains of names.
_SCOPED = re.compile(r"\b([A-Za-z_]\w*(?:(?:::|->)[A-Za-z_]\w*)+)")
# Ruby's way of naming a method in prose and docs: `Cart#total`, `Jekyll::Site#process`
_RUBY_METHOD = re.compile(r"\b([A-Z]\w*(?:::[A-Z]\w*)*)#([a-z_]\w*[?!]?)")
_DOTTED = re.compile(r"(?<![\w./])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?![\w/])")
# `from pkg.mod import A, B as C` in quoted Python: the names come from that module (`pkg.mod.A`)
_FROM_IMPORT = re.compile(r"^[ \t>.]*from[ \t]+([A-Za-z_][\w.]{0,200}+)[ \t]+import[ \t]+\(?([\w \t,]{1,500}+)", re.M)
# A long command-line option, `--collect-only`: the code that declares it holds it as a string
_OPTION = re.compile(r"(?<![\w-])--([a-z][a-z0-9]{1,40}(?:-[a-z0-9]{1,40}){0,5})(?![\w-])")
MIN_OPTION_CHARS = 5  # `--all`, `--opt` are in every tool
_BACKTICK = re.compile(r"`{1,3}([^`\n]{1,200})`{1,3}")
_CALL = re.compile(r"\b([A-Za-z_]\w*)!?\s*\(")  # calls, and Rust macro calls `name!(`
_IDENT = re.compile(r"\b([A-Za-z_]\w*)\b")
# A name with hyphens written as code (`_bash-it-component-help`: bash, Lisp, CSS, make targets)
_HYPHENATED = re.compile(r"(?<![\w-])([A-Za-z_]\w*(?:-\w+)+)(?![\w-])")
_QUOTED = re.compile(r"\"([^\"\n]{3,200})\"|'([^'\n]{3,200})'")
_ERROR = re.compile(r"^\s*((?:\w+\.)*\w*(?:Error|Exception|Warning)\b[^\n]{0,200})", re.M)
# Messages of other runtimes and tools: `error: ...`, `error[E0308]: ...`, `fatal: ...`, `warning: ...`,
# `panic: ...` (Go) at a line's start, and Rust's `panicked at 'message'`.
_OTHER_MESSAGE = re.compile(r"^\s*(?:error|fatal|warning|panic)(?:\[[\w-]+\])?:\s*([^\n]{8,300})$", re.M | re.I)
_PANICKED = re.compile(r"panicked at ['\"]([^'\"\n]{8,300})['\"]")
# A logged message anywhere in a line — inside quotes or backticks, or after the `path:line:` a
# documentation builder, compiler or linter prints first ("/doc/index.rst:5: WARNING: duplicate
# label"): up to the line's end or a closing quote. `ValueError:` is the exception pattern's.
_LOGGED_MESSAGE = re.compile(r"(?<![\w.])(?i:warning|error|critical|fatal)(?:\[[\w-]+\])?:[ \t]+([^\n\"'`]{8,300})")
# A message printed after its source location, as GNU tools, documentation builders and linters
# do with no level word first ("index.rst:4:Malformed option description '[x]'", "a.py:1:0:
# W0611: Unused import os"): the rest of the line is the program's message. Not a test runner's
# failure frame ("expr.py:124: in __eq__"), which names a function, not a message. A listing of
# more than MAX_LOCATED_LINES such lines is a tool's run over the reporter's project (a linter's
# 200 findings): its output is the setting, not the complaint.
MAX_LOCATED_LINES = 5
_LOCATED_MESSAGE = re.compile(r"^[ \t]*[\w./\\-]*\w\.[A-Za-z]\w{0,5}:\d+(?::\d+)?:[ \t]*(?!in [\w.<>]+[ \t]*$)"
                              r"(\S[^\n]{7,299})$", re.M)
# An exception's message: `ValueError: ...`, `pkg.FooWarning ...`, or a bare `Error: ...` (not prose
# that starts with the word "Error").
_EXCEPTION_MESSAGE = re.compile(r"^\s*(?:\w+\.)*(?:\w+(?:Error|Exception|Warning)\b:?|(?:Error|Exception|Warning):)"
                                r"\s*([^\n]{8,300})$", re.M)
# What a program fills into a message: quoted and bracketed values, numbers, paths, file names.
_FILLED_VALUE = re.compile(r"""'[^']*'|"[^"]*"|`[^`]*`|<[^>]*>|\[[^\]]*\]|\([^)]*\)|\{[^}]*\}|\b0x[0-9a-fA-F]+\b"""
                           r"""|-?\b\d[\d.,eE+-]*\b|(?:/[\w.\-]+)+|\b[\w\-]+\.[a-z]{1,4}\b""")
MAX_SPAN_LINES = 200  # a link to more lines than this points at a file, not at code in it
MESSAGE_FRAGMENT_CHARS = 12  # a shorter literal part ("not found") is in too many messages to point anywhere
_COMMON_WORDS = frozenset("""a an and are as at be but by can do does for from has have how i if in into is it its
not of on or should that the their then there these this to was we what when where which while who why will with
would you your self none true false return def class import""".split())
_FILE_EXT_WORDS = frozenset({"py", "js", "ts", "md", "rst", "txt", "json", "yaml", "toml", "cfg", "html", "com", "org",
                             "java", "go", "rs", "c", "h", "cc", "cpp", "hpp", "kt", "cs", "rb", "tsx", "jsx", "mjs",
                             "vue", "swift", "scala", "php", "proto", "sh", "yml", "xml", "io", "dev", "net"})


@dataclass
class Anchors:
    paths: list[str] = field(default_factory=list)  # file paths as written (may be absolute or partial)
    frames: list[tuple[str, int, str | None]] = field(default_factory=list)  # (path, line, function), deepest first
    # links to lines of a file (a host's web view, `/blob/<ref>/<path>#L12-L40`), as the repository names it,
    # and `path:line` pointers written in prose: where the reporter says to look
    links: list[tuple[str, int, int]] = field(default_factory=list)  # (path, first line, last line)
    dotted: list[str] = field(default_factory=list)  # a.b.C, module paths and attribute chains
    identifiers: Counter[str] = field(default_factory=Counter)  # code-like names, with mention counts
    quoted: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)  # literal parts of quoted messages, longest first
    options: list[str] = field(default_factory=list)  # command-line options it names (`--collect-only`)
    active_files: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"paths": self.paths[:10], "frames": [list(f) for f in self.frames[:10]], "dotted": self.dotted[:10],
                "identifiers": [k for k, _ in self.identifiers.most_common(15)], "quoted": self.quoted[:5],
                "errors": self.errors[:3], "messages": self.messages[:5], "active_files": self.active_files[:10],
                "links": [list(s) for s in self.links[:10]], "options": self.options[:5]}


def _code_like(name: str) -> bool:
    """snake_case, camelCase, CapWords or dunder: something a person would not type as prose."""
    if len(name) < 3 or name.lower() in _COMMON_WORDS:
        return False
    return "_" in name or any(c.isupper() for c in name[1:]) or (name[0].isupper() and name[1:].islower() and
                                                                  len(name) > 3)


def extract(query: str, active_files: list[str] | None = None) -> Anchors:
    # A report pasted from GitHub has CRLF line ends, and `$` does not match before a `\r`.
    query = query.replace("\r\n", "\n").replace("\r", "\n")
    anchors = Anchors(active_files=list(active_files or []))
    # Frames are kept deepest first: Python prints the most recent call last, the other runtimes first.
    for m in reversed(list(_FRAME.finditer(query))):
        anchors.frames.append((m.group(1), int(m.group(2)), m.group(3)))
    ipython = list(_IPYTHON_FRAME.finditer(query))
    ends = [m.start() for m in ipython[1:]] + [len(query)]  # a frame's arrow is before the next frame
    for m, end in reversed(list(zip(ipython, ends))):
        arrow = _IPYTHON_ARROW.search(query, m.end(), end)
        frame = (m.group("path"), int(arrow.group(1)) if arrow else 0, m.group("func"))
        if frame not in anchors.frames:
            anchors.frames.append(frame)
    located = {(f[0], f[1]) for f in anchors.frames}
    for pattern in _OTHER_FRAMES:
        for m in pattern.finditer(query):
            func = (m.groupdict().get("func") or "").strip().rsplit(".", 1)[-1] or None
            frame = (m.group("path"), int(m.group("line")), func if func and func.isidentifier() else None)
            if frame[:2] not in located:  # one frame per place (Go's is read with and without its function)
                located.add(frame[:2])
                anchors.frames.append(frame)
    links: dict[int, str] = {}  # where a link to lines starts -> the path it links
    for m in _PERMALINK.finditer(query):
        first = int(m.group("first"))
        span = (m.group("path"), first, min(max(first, int(m.group("last") or first)), first + MAX_SPAN_LINES))
        links[m.start("path")] = span[0]
        if span not in anchors.links:
            anchors.links.append(span)
    running = prose(query)  # outside fenced blocks: where a pointer is written
    for m in _POINTER.finditer(running):
        line = int(m.group("line"))
        span = (m.group("path").lstrip("./"), line, line)
        if (m.group("path"), line) not in located and line > 0 and span not in anchors.links:
            anchors.links.append(span)
    frame_paths = {f[0] for f in anchors.frames}
    seen_paths: set[str] = set()
    for m in _PATH.finditer(query):
        # a link's path as the repository names it, not `github.com/o/r/blob/<sha>/...`
        link = next((path for start, path in links.items() if start <= m.end() <= start + len(path)), None)
        p = link or m.group(1).lstrip("./")
        if p and p not in seen_paths and not p.startswith(("http", "www.")):
            seen_paths.add(p)
            anchors.paths.append(p)
    anchors.paths = [p for p in anchors.paths if p not in frame_paths] + [f[0] for f in anchors.frames]
    for m in _DOTTED.finditer(query):
        name = m.group(1)
        last = name.rsplit(".", 1)[-1]
        if last.lower() in _FILE_EXT_WORDS or name.lower().startswith(("e.g", "i.e")):
            continue
        if name not in anchors.dotted:
            anchors.dotted.append(name)
    imported_from: Counter[str] = Counter()  # a module -> how often it is named as an import's source
    for m in _FROM_IMPORT.finditer(query) if rules.current().read_from_imports else ():
        imported_from[m.group(1)] += 1
        for name in m.group(2).split(","):
            name = (name.split() or [""])[0]  # `B as C` imports B
            if name.isidentifier() and f"{m.group(1)}.{name}" not in anchors.dotted:
                anchors.dotted.append(f"{m.group(1)}.{name}")
    # a module named only as where imported names come from is not itself what the question is about
    anchors.dotted = [d for d in anchors.dotted
                      if not imported_from[d] or len(re.findall(rf"(?<![\w.]){re.escape(d)}(?![\w])", query)) > imported_from[d]]
    code_spans = [m.group(1) for m in _BACKTICK.finditer(query)]
    for span in code_spans:
        for ident in _IDENT.findall(span) + _HYPHENATED.findall(span):
            if len(ident) >= 3 and ident.lower() not in _COMMON_WORDS:
                anchors.identifiers[ident] += 2
    for name in _CALL.findall(query):
        if len(name) >= 3 and name.lower() not in _COMMON_WORDS:
            anchors.identifiers[name] += 2
    for name in _IDENT.findall(query):
        if _code_like(name):
            anchors.identifiers[name] += 1
    scoped = [m.group(1) for m in _SCOPED.finditer(query)] + [m.group(0) for m in _RUBY_METHOD.finditer(query)]
    for written in scoped:  # `Type::method` and `Type#method` read like `Type.method` to the symbol index
        dotted = dotted_name(written)
        if dotted not in anchors.dotted:
            anchors.dotted.append(dotted)
    for dotted in anchors.dotted:
        for part in dotted.split("."):
            if _code_like(part) or len(part) > 3:
                anchors.identifiers[part] += 1
    for f in anchors.frames:
        if f[2] and not f[2].startswith("<"):
            anchors.identifiers[f[2]] += 2
    for m in _QUOTED.finditer(query):
        text = m.group(1) or m.group(2)
        if text and not text.isspace():
            anchors.quoted.append(text)
    anchors.errors = [m.group(1).strip() for m in _ERROR.finditer(query)][:5]
    quoted_messages = [m.group(1) for pattern in (_EXCEPTION_MESSAGE, _OTHER_MESSAGE, _PANICKED, _LOGGED_MESSAGE)
                       for m in pattern.finditer(query)]
    located = list(dict.fromkeys(m.group(1) for m in _LOCATED_MESSAGE.finditer(query))) if rules.current().located_messages else []
    quoted_messages += located if len(located) <= MAX_LOCATED_LINES else []
    anchors.messages = message_fragments(quoted_messages)
    if rules.current().read_options:
        anchors.options = list(dict.fromkeys(f"--{m.group(1)}" for m in _OPTION.finditer(query)
                                             if len(m.group(1)) >= MIN_OPTION_CHARS))[:5]
    return anchors


def message_fragments(messages: list[str], limit: int = 8) -> list[str]:
    """The literal parts of messages as a program printed them: the clauses between the values it
    filled in (quoted names, numbers, paths) and between its colons and commas, which is what the
    format string in the code holds verbatim. Parts shorter than MESSAGE_FRAGMENT_CHARS or of one
    word are left out."""
    parts: list[str] = []
    for message in messages:
        for part in (clause for piece in _FILLED_VALUE.split(message) for clause in re.split(r"[:;,]\s", piece)):
            part = part.strip().strip(":;,.-").strip()
            if len(part) >= MESSAGE_FRAGMENT_CHARS and len(part.split()) >= 2:
                parts.append(part)
    return sorted(dict.fromkeys(parts), key=lambda p: (-len(p), p))[:limit]


def fragment_variants(fragment: str) -> list[str]:
    """A message fragment, then the same without its last word, then without its first: a value
    the program filled in without quotes ("no number is assigned for table" from `'no number is
    assigned for %s'`) sits at a clause's end or start. A shortened fragment keeps at least
    three words and MESSAGE_FRAGMENT_CHARS characters, or it is not tried."""
    words = fragment.split()
    out = [fragment]
    for part in (words[:-1], words[1:]):
        text = " ".join(part)
        if len(part) >= 3 and len(text) >= MESSAGE_FRAGMENT_CHARS:
            out.append(text)
    return out
