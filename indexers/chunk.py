"""Split a source file into retrieval units: definitions for code, sections for prose.

Code (tree-sitter): one chunk per function/method/class; a class that does not fit is split
into its header (signature, docstring, attributes) and its members; a function that does not
fit is split at statement boundaries; tiny neighbours are merged (cAST-style). Markdown/RST
split at headings; anything else in line windows. Every chunk carries a deterministic
contextual header (path + enclosing signatures) that is indexed and embedded with it.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

from mcp_retrieval.indexers.definitions import body, definitions, first_definition_line, has_definitions, kinds
from mcp_retrieval.indexers.languages import GRAMMAR_LANGUAGES, parser

# Bump when an unchanged file would now chunk differently (boundaries, languages, symbols): the
# next sync re-chunks every file once, as a new lexical analyser does. 2: Ruby, PHP, C#, Swift,
# Scala and Kotlin parsed; other code extensions no longer plain text. 3: notebooks read as their
# cells' script (`indexers/notebooks.py`), not as JSON; generator stamps below a license header
# (`languages.looks_generated`) mark a file generated. 4: bash, Lua, Elixir, Haskell and Zig
# parsed; neighbours defining one name (equations, clauses, overloads) read as one chunk; C/C++
# definitions under #if/#ifdef. 5: TypeScript namespaces and ambient modules are containers. 6: a
# Kotlin extension function is named with its receiver (`String.toSlug`); a Haskell signature no
# equation follows (a class method) is a definition. (7: a trial, docs/BENCHMARKS-history.md 59e.) 8: C
# directives (`#include`, `#define`) are not comments: a file's banner and includes no longer join
# its first function. 9: a `.h` header whose text is C++ is read by the C++ grammar
# (`languages.language_of`); C/C++ lines of one macro name parsed as blank; definitions the parser
# recovered inside an ERROR node are definitions; JS/TS functions bound by `export const`, by a
# wrapping call, by a property assignment or a class field are definitions, as are Java enum
# methods, Ruby `class << self` methods, Java `@interface` and Scala package objects and extensions;
# Rust inner docs and comment blocks longer than a chunk no longer lead the next definition; the
# items inside a Rust macro's braces are definitions (docs/BENCHMARKS-history.md 62c-62f). 10: a JS/TS
# function bound by `export default` (anonymous: named `default`), or guarded there by `&&`/`||`,
# is a definition (63d). 11: a file no extension names is read in the language of its name
# (`Rakefile`, `.bashrc`) or its `#!` line (`languages.language_of`, docs/BENCHMARKS.md 64a);
# flex's, Bison's and Autoconf's output is read as generated (64c). 12: a split definition's
# last piece under MIN_CHARS stays with the piece before it; "auto-generated" inside a sentence and
# "amalgamation" without "an" mark no file generated (65a). 14 (66c's 13 was dropped): a Rust
# `mod name;` without a body declares a module kept in another file, no definition (69c). 15: nor is
# a C/C++ forward declaration (`struct event_base;`, `class Foo;`, 69d). 16: each type of a Go
# `type ( ... )` group is a definition, not the first alone (69e). 17: lines end at "\n" alone
# (`source_lines`), as tree-sitter's rows do: a form feed no longer shifts the chunks below it (70d).
# 18: a file with a line over `walk.MAX_LINE_CHARS` is not read (minified; 73b): an index made
# before holds such files' chunks, and only a full re-read drops them; and a JavaScript or
# TypeScript `require('./x')` is an import edge (73h).
CHUNKER_VERSION = "18"
MAX_CHARS = 2400  # ~600 tokens: big enough for a whole method, small enough to rank precisely
MIN_CHARS = 120  # only tiny neighbours (one-liners, getters) are merged; symbols stay precise
WINDOW_LINES = 60
_COMMENT_PREFIXES = ("#", "//", "/*", "*", "--", ";")


@dataclass(frozen=True)
class Chunk:
    path: str
    start_line: int  # 1-based, inclusive
    end_line: int
    symbol: str | None  # qualified name of the enclosing definition, e.g. "Session.request"
    kind: str  # function | method | class | module | section | window
    language: str
    header: str
    text: str
    generated: bool = False  # the file says it is generated: its vectors come last

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8", "surrogatepass")).hexdigest()

    @property
    def id(self) -> str:
        key = f"{self.path}\x00{self.start_line}\x00{self.end_line}\x00{self.sha256}"
        return hashlib.sha1(key.encode("utf-8", "surrogatepass")).hexdigest()[:20]


@dataclass
class _Seg:
    start: int  # 0-based line indexes, inclusive
    end: int
    symbol: str | None
    kind: str
    context: list[str] = field(default_factory=list)  # enclosing signatures, outermost first
    mergeable: bool = True


# A C or C++ line that is one upper-case name (`ABSL_NAMESPACE_BEGIN`, `G_BEGIN_DECLS`, `Q_OBJECT`,
# `FMT_BEGIN_EXPORT`): a macro the grammar cannot expand, read as the start of a declaration that
# swallows the definition below it (abseil: a third of its definitions lost). It is parsed as
# spaces of the same length, so every position holds; the chunk keeps the line (BENCHMARKS 62c).
_LONE_MACRO = re.compile(rb"^[ \t]*[A-Z_][A-Z0-9_]{2,}[ \t]*(\(\))?[ \t\r]*$", re.M)


# What a Rust macro's braces hold when they hold items: tokio's `cfg_rt! { pub fn spawn ... }` gates
# whole modules' worth of functions behind its `cfg_*!` macros, `pin_project! { pub struct ... }`
# and hyper's `ffi_fn! { fn ... }` wrap definitions (BENCHMARKS 62f).
_RUST_ITEMS = re.compile(rb"\s*(#!?\[|///|//!|pub\b|fn\b|async\s+fn\b|unsafe\b|struct\b|enum\b|impl\b|mod\b|"
                         rb"use\b|trait\b|type\b|extern\b|macro_rules!)")


def parse(text: str, language: str):
    """The tree-sitter tree of a code file, or None (unknown language, broken grammar)."""
    if language not in GRAMMAR_LANGUAGES:
        return None
    ts_parser = parser(language)
    if ts_parser is None:
        return None
    try:
        data = text.encode("utf-8", "surrogatepass")
        if language in ("c", "cpp"):
            data = _LONE_MACRO.sub(lambda m: b" " * len(m.group(0)), data)
        tree = ts_parser.parse(data)
        for _ in range(3):  # a macro of items inside another (`cfg_rt! { cfg_net! { ... } }`)
            if language != "rust" or (opened := _open_item_macros(tree, data, ts_parser)) is None:
                break
            data = opened
            tree = ts_parser.parse(data)
        return tree
    except Exception:
        return None


def _open_item_macros(tree, data: bytes, ts_parser) -> bytes | None:
    """The source with each top-level Rust macro whose braces hold items opened: its `name! {` and
    its closing `}` parsed as spaces (newlines kept, so every position holds), its items then read
    as the file's own. Braces whose text alone does not parse as items stay shut (serde's
    `seq_impl! { #[cfg(...)] Vec<T> }`: attributes, then a macro's own syntax). None when none opens."""
    spans = []
    for node in tree.root_node.named_children:
        tokens = node.named_children[-1] if node.type == "macro_invocation" and node.named_children else None
        if tokens is None or tokens.type != "token_tree" or data[tokens.start_byte:tokens.start_byte + 1] != b"{" \
                or data[tokens.end_byte - 1:tokens.end_byte] != b"}":
            continue
        if _RUST_ITEMS.match(data, tokens.start_byte + 1) and \
                not ts_parser.parse(data[tokens.start_byte + 1:tokens.end_byte - 1]).root_node.has_error:
            spans += [(node.start_byte, tokens.start_byte + 1), (tokens.end_byte - 1, tokens.end_byte)]
    if not spans:
        return None
    out = bytearray(data)
    for start, end in spans:
        out[start:end] = bytes(b if b == 10 else 32 for b in data[start:end])
    return bytes(out)


def source_lines(text: str) -> list[str]:
    """A file's lines as tree-sitter and an editor's line numbers count them: split at "\n" only
    (a "\r\n" ending dropped whole). `str.splitlines` also splits at a form feed, a vertical tab,
    `\x1c`-`\x1e`, `\x85` and U+2028/2029, and every chunk below one (GNU-style C's page breaks)
    took the text of the wrong lines."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def chunk_file(path: str, text: str, language: str, tree=None) -> list[Chunk]:
    """All chunks of one file, in line order. Never raises on odd input."""
    lines = source_lines(text)
    if not lines or not text.strip():
        return []
    segs: list[_Seg] | None = None
    if language in GRAMMAR_LANGUAGES:
        tree = tree if tree is not None else parse(text, language)
        segs = _code_segments(tree, lines, language) if tree is not None else None
    elif language == "markdown":
        segs = _heading_segments(lines, _markdown_heading)
    elif language == "rst":
        segs = _heading_segments(lines, _rst_heading)
    if not segs:
        segs = _windows(0, len(lines) - 1, None, "window", [])
    return [_to_chunk(path, language, lines, s) for s in _merge(segs, lines) if _has_text(lines, s)]


def _has_text(lines: list[str], seg: _Seg) -> bool:
    return any(line.strip() for line in lines[seg.start: seg.end + 1])


def _to_chunk(path: str, language: str, lines: list[str], seg: _Seg) -> Chunk:
    body = "\n".join(lines[seg.start: seg.end + 1])
    header = " · ".join([path, *seg.context])
    return Chunk(path, seg.start + 1, seg.end + 1, seg.symbol, seg.kind, language, header, body)


def _seg_chars(lines: list[str], seg: _Seg) -> int:
    return sum(len(line) + 1 for line in lines[seg.start: seg.end + 1])


def _merge(segs: list[_Seg], lines: list[str]) -> list[_Seg]:
    """Fill gaps between segments, then merge small neighbours of the same container."""
    segs = sorted(segs, key=lambda s: s.start)
    filled: list[_Seg] = []
    cursor = 0
    for seg in segs:
        if seg.start > cursor:  # uncovered lines: imports and statements, or only comments
            gap = [line.strip() for line in lines[cursor: seg.start]]
            lead = _leading_comment(gap) if all(not g or _is_comment(g) for g in gap) else None
            if lead is not None:  # the comment right above a definition belongs to it
                if any(gap[:lead]):
                    filled.extend(_windows(cursor, cursor + lead - 1, None, "module", []))
                seg.start = cursor + lead
            elif any(gap):
                filled.extend(_windows(cursor, seg.start - 1, None, "module", []))
        seg.start = max(seg.start, cursor)
        if seg.end >= seg.start:
            filled.append(seg)
        cursor = max(cursor, seg.end + 1)
    if cursor < len(lines):
        filled.extend(_windows(cursor, len(lines) - 1, None, "module", []))
    merged: list[_Seg] = []
    for seg in filled:
        prev = merged[-1] if merged else None
        if (prev is not None and prev.mergeable and seg.mergeable and prev.context[:-1] == seg.context[:-1]
                and (_seg_chars(lines, prev) < MIN_CHARS and _seg_chars(lines, seg) < MIN_CHARS
                     or _same_definition(prev, seg))
                and _seg_chars(lines, prev) + _seg_chars(lines, seg) <= MAX_CHARS):
            if prev.symbol is None:  # a gap merged into a definition takes the definition's identity
                prev.symbol, prev.kind, prev.context = seg.symbol, seg.kind, seg.context
            prev.end = seg.end
        else:
            merged.append(seg)
    return merged


# `#if` is a C directive, `# if` a comment (Python, shell, Ruby)
_DIRECTIVE = re.compile(r"#(include|define|undef|if|ifdef|ifndef|elif|else|endif|pragma|import|error|line)\b")


def _leading_comment(gap: list[str]) -> int | None:
    """Where, in a gap of comment lines (stripped) above a definition, the definition's own comment
    begins: after any Rust inner doc comment (`//!`, `/*!`: the crate's or module's documentation,
    axum's 550 lines of it), and None when there is none or it is longer than a chunk (a 377-line
    doc comment made ripgrep's `struct JSON` one 16 kB chunk). The rest is the file's own windows."""
    inner = [i for i, line in enumerate(gap) if line.startswith(("//!", "/*!"))]
    own = [i for i in range(inner[-1] + 1 if inner else 0, len(gap)) if gap[i]]
    if not own or sum(len(line) + 1 for line in gap[own[0]:]) > MAX_CHARS:
        return None
    return own[0]


def _is_comment(line: str) -> bool:
    """A comment line (stripped), not a C preprocessor directive (which starts with `#` too)."""
    return line.startswith(_COMMENT_PREFIXES) and not _DIRECTIVE.match(line)


def _same_definition(prev: _Seg, seg: _Seg) -> bool:
    """Neighbours that define one name: a Haskell or Elixir function's equations and clauses, a
    TypeScript overload's signatures and body, C++ overloads. They are read together."""
    return prev.symbol is not None and prev.symbol == seg.symbol and prev.kind == seg.kind


def _windows(start: int, end: int, symbol: str | None, kind: str, context: list[str]) -> list[_Seg]:
    return [_Seg(s, min(s + WINDOW_LINES - 1, end), symbol, kind, list(context))
            for s in range(start, end + 1, WINDOW_LINES)]


# --- code -------------------------------------------------------------------------------

def _code_segments(tree, lines: list[str], language: str) -> list[_Seg]:
    defs = kinds(language)
    segs: list[_Seg] = []
    _walk_container(tree.root_node, defs, lines, None, [], segs, depth=0)
    return segs


def _signature(lines: list[str], node) -> str:
    first = lines[node.start_point[0]].strip() if node.start_point[0] < len(lines) else ""
    return first[:200]


def _walk_container(node, defs, lines, qual, context, segs, depth) -> None:
    for _, found in definitions(node, defs, qual):
        if found is None:
            continue
        definition, kind, symbol = found.definition, found.kind, found.qualname
        start, end = found.start, found.end
        own_context = [*context, _signature(lines, definition)]
        size = sum(len(lines[i]) + 1 for i in range(start, min(end, len(lines) - 1) + 1))
        members = body(definition)
        if size <= MAX_CHARS or depth > 6:
            segs.append(_Seg(start, end, symbol, kind, own_context))
        elif kind == "class" and members is not None and has_definitions(members, defs):
            first_member = first_definition_line(members, defs) or end
            # the header (signature, docs, attributes) before the first member; a long one (an
            # Elixir @moduledoc, test cases before a helper) is cut at its statements like a body
            segs.extend(_split_large(start, max(start, first_member - 1), members, lines, symbol, kind, own_context))
            _walk_container(members, defs, lines, symbol, own_context, segs, depth + 1)
        else:
            segs.extend(_split_large(start, end, members, lines, symbol, kind, own_context))


def _split_large(start, end, body, lines, symbol, kind, context) -> list[_Seg]:
    """Pack a long definition's statements into pieces of at most MAX_CHARS."""
    cuts = [c.start_point[0] for c in body.named_children] if body is not None else []
    cuts = sorted({c for c in cuts if start < c <= end})
    pieces: list[_Seg] = []
    piece_start, size = start, 0
    for line in range(start, end + 1):
        if line in cuts and size > MAX_CHARS * 0.6 and line > piece_start:
            pieces.append(_Seg(piece_start, line - 1, symbol, kind, list(context), mergeable=False))
            piece_start, size = line, 0
        size += len(lines[line]) + 1 if line < len(lines) else 0
        if size > MAX_CHARS * 2:  # one enormous statement: cut anyway
            pieces.append(_Seg(piece_start, line, symbol, kind, list(context), mergeable=False))
            piece_start, size = line + 1, 0
    if piece_start <= end:
        tail = _Seg(piece_start, end, symbol, kind, list(context), mergeable=False)
        if pieces and _seg_chars(lines, tail) < MIN_CHARS:
            # a remainder this small (`return this;` and the closing brace) says nothing of its
            # own, yet its short text under the definition's header ranked first (BENCHMARKS 65a)
            pieces[-1].end = end
        else:
            pieces.append(tail)
    return pieces


# --- prose ------------------------------------------------------------------------------

_ATX = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_RST_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+.:_])\1{2,}\s*$")


def _markdown_heading(lines: list[str], i: int, in_fence: bool) -> tuple[int, str] | None:
    if in_fence:
        return None
    m = _ATX.match(lines[i])
    return (len(m.group(1)), m.group(2)) if m else None


_RST_LEVELS: dict[str, int] = {}


def _rst_heading(lines: list[str], i: int, in_fence: bool) -> tuple[int, str] | None:
    if i + 1 >= len(lines) or not lines[i].strip() or _RST_UNDERLINE.match(lines[i]):
        return None
    m = _RST_UNDERLINE.match(lines[i + 1])
    if m and len(lines[i + 1].strip()) >= len(lines[i].strip()):
        level = _RST_LEVELS.setdefault(m.group(1), len(_RST_LEVELS) + 1)
        return min(level, 6), lines[i].strip()
    return None


def _heading_segments(lines: list[str], heading) -> list[_Seg]:
    starts: list[tuple[int, list[str]]] = []
    trail: list[tuple[int, str]] = []
    in_fence = False
    for i, line in enumerate(lines):
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
        found = heading(lines, i, in_fence)
        if found:
            level, title = found
            trail = [t for t in trail if t[0] < level] + [(level, title[:120])]
            starts.append((i, [t[1] for t in trail]))
    if not starts or starts[0][0] != 0:
        starts.insert(0, (0, []))
    segs: list[_Seg] = []
    for n, (start, titles) in enumerate(starts):
        end = starts[n + 1][0] - 1 if n + 1 < len(starts) else len(lines) - 1
        symbol = " > ".join(titles) or None
        pieces = _windows(start, end, symbol, "section", titles) if end - start >= WINDOW_LINES else \
            [_Seg(start, end, symbol, "section", titles)]
        segs.extend(pieces)
    return segs
