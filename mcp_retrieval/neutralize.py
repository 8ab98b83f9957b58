"""Control-tag neutralisation: no text the server did not write can spell our `<mcp-retrieval`
markup, in any form a model would read as ours.

Detection runs on a *skeleton* of the text (Unicode TR39's idea): HTML entities decoded until
they stop changing (any depth, any number of leading zeros), compatibility-decomposed (NFKD:
fullwidth `＜`, mathematical letters, precomposed accents), each character mapped to the
prototype of its confusable class from Unicode's confusables table (shipped by the maintained
`confusable-homoglyphs` package: Cyrillic `с`, `˂`, `ᐸ`, `꞉`, `∶`, `⁃`, `˗` ...), case-folded,
and stripped of every default-ignorable code point, control, format, separator and combining
mark (the `regex` package's Unicode properties, not a hand list). The pattern allows short runs
of any non-alphanumeric filler between its letters (a braille blank, a stray dash) and any three
characters between `mcp` and `retrieval`, so unknown fillers and dash look-alikes are caught too.

Each hit's opening unit (a character or an HTML entity) is replaced by `[` — not a bracket any
confusables table folds to `<`. The index keeps the text verbatim; this runs on the way out
(`scrub` applies it to every string field of a result).
"""

from __future__ import annotations

import functools
import html
import re
import unicodedata
from typing import Any

import regex
from confusable_homoglyphs import confusables

SAFE_OPENER = "["
WITHHELD = "[text withheld: it spells a control tag that could not be defused]"
# Default-ignorables, controls, format, private use, unassigned, separators, combining marks.
_IGNORABLE = regex.compile(r"[\p{Default_Ignorable_Code_Point}\p{Cc}\p{Cf}\p{Co}\p{Cn}\p{Cs}\p{Z}\p{Mn}\p{Me}\s]+")
_ENTITY = re.compile(r"&(?:#[0-9]+|#[xX][0-9a-fA-F]+|[A-Za-z][A-Za-z0-9]{1,31});?")
_MAX_ENTITY_DEPTH = 32


@functools.cache
def _prototypes() -> dict[int, str]:
    """Character -> the prototype of its confusable class (ASCII where the class has one). Classes
    are the connected groups of Unicode's single-character confusable pairs."""
    parent: dict[str, str] = {}

    def find(c: str) -> str:
        while parent.setdefault(c, c) != c:
            parent[c] = parent[parent[c]]
            c = parent[c]
        return c

    for char, entries in confusables.confusables_data.items():
        if len(char) != 1:
            continue
        for entry in entries:
            other = entry["c"].strip("\u200e\u200f")
            if len(other) == 1:
                a, b = find(char), find(other)
                if a != b:
                    parent[a] = b
    classes: dict[str, list[str]] = {}
    for c in list(parent):
        classes.setdefault(find(c), []).append(c)
    table: dict[int, str] = {}
    for members in classes.values():
        ascii_members = sorted(m for m in members if m.isascii())
        proto = ascii_members[0] if ascii_members else min(members)
        table.update({ord(m): proto for m in members if m != proto})
    return table


def _decode_entities(text: str) -> str:
    for _ in range(_MAX_ENTITY_DEPTH):  # &amp;amp;lt; -> &amp;lt; -> &lt; -> <
        if "&" not in text:
            break
        decoded = html.unescape(text)
        if decoded == text:
            break
        text = decoded
    return text


def skeleton(text: str) -> str:
    """The form detection compares: entities decoded, NFKD, confusables folded, case folded and
    folded again (so `М` -> `M` -> `m`), ignorables removed. ASCII text without an entity (most
    code: `&&` is no entity) takes it byte by byte from a table of each ASCII character's skeleton
    — the same string (every step maps such a text one character at a time) at a fiftieth of the
    cost: the ignorables' regular expression took 28 of a code chunk's 40 µs, on every chunk sent."""
    if _table_path(text) and (tables := _ascii_tables()) is not None:
        table, dropped = tables
        return text.encode("ascii").translate(table, dropped).decode("ascii")
    return _skeleton(text)


@functools.cache
def _ascii_tables() -> tuple[bytes, bytes] | None:
    """Each ASCII character's skeleton as a byte table (and the bytes it drops), or None should one
    ever be longer than a character (then every text takes the whole way)."""
    forms = [_skeleton(chr(c)) for c in range(128)]
    if any(len(f) > 1 or not f.isascii() for f in forms):
        return None
    table = bytes(ord(f) if f else c for c, f in enumerate(forms)) + bytes(range(128, 256))
    return table, bytes(c for c, f in enumerate(forms) if not f)


def _skeleton(text: str) -> str:
    table = _prototypes()
    text = _decode_entities(text).translate(table)  # before NFKD, which can move a glyph to another class
    text = unicodedata.normalize("NFKD", text).translate(table).casefold()
    text = unicodedata.normalize("NFKD", text).translate(table)
    return _IGNORABLE.sub("", text)


@functools.cache
def _pattern() -> regex.Pattern:
    gap = r"[^\p{L}\p{N}]{0,2}"
    lead = r"[^\p{L}\p{N}=<>]{0,2}"  # `a <= mcp_retrieval.x` is an expression, not a tag

    def letter(ch: str) -> str:  # `I` folds with `l` and `1`, `i` with `ı` and `і`: accept either case's fold
        forms = {skeleton(ch), skeleton(ch.upper())}
        return "(?:" + "|".join(regex.escape(f) for f in sorted(forms)) + ")"

    def spelled(word: str) -> str:
        return gap.join(letter(ch) for ch in word)

    return regex.compile(letter("<") + lead + spelled("mcp") + r".{0,3}" + spelled("retrieval"))


def _units(text: str) -> list[tuple[int, int]]:
    """Spans of the raw text that are one character or one HTML entity."""
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(text):
        if text[i] == "&" and (m := _ENTITY.match(text, i)):
            spans.append((i, m.end()))
            i = m.end()
            continue
        spans.append((i, i + 1))
        i += 1
    return spans


def _opener_spans(text: str) -> list[tuple[int, int]]:
    """Raw spans of every tag opener, mapped back from the skeleton (slow path: only runs on text
    whose whole skeleton already matched). Entities are decoded first, across units too (`&amp;`
    + `lt;` -> `<`), then each decoded character is folded as `skeleton` folds it."""
    units = _units(text)
    flat_parts: list[str] = []
    owner: list[int] = []  # decoded position -> unit index
    for n, (start, end) in enumerate(units):
        decoded = _decode_entities(text[start:end])
        flat_parts.append(decoded)
        owner.extend([n] * len(decoded))
    flat = "".join(flat_parts)
    for _ in range(_MAX_ENTITY_DEPTH):
        if "&" not in flat:
            break
        new_parts, new_owner, i = [], [], 0
        for m in _ENTITY.finditer(flat):
            decoded = html.unescape(m.group(0))
            new_parts += [flat[i:m.start()], decoded]
            new_owner += owner[i:m.start()] + [owner[m.start()]] * len(decoded)
            i = m.end()
        new_parts.append(flat[i:])
        new_owner += owner[i:]
        joined = "".join(new_parts)
        if joined == flat:
            break
        flat, owner = joined, new_owner
    skel_parts: list[str] = []
    skel_owner: list[int] = []
    for ch, n in zip(flat, owner):
        folded = skeleton(ch)
        skel_parts.append(folded)
        skel_owner.extend([n] * len(folded))
    skel = "".join(skel_parts)
    return sorted({units[skel_owner[m.start()]] for m in _pattern().finditer(skel, overlapped=True)})


def contains_tag(text: str) -> bool:
    """True when `text` spells our tag opener in any disguise (C-speed: one skeleton, one search)."""
    return bool(_pattern().search(skeleton(text)))


def neutralize(text: str) -> str:
    """`text` with every spelling of our tag opener defused; idempotent; unchanged when clean."""
    for _ in range(8):
        if not contains_tag(text):
            return text
        spans = _opener_spans(text)
        if not spans:  # matched as a whole but not unit by unit: defuse every bracket and entity
            text = "".join(SAFE_OPENER if skeleton(ch) == "<" else "(amp)" if ch == "&" else ch for ch in text)
            continue
        parts, cursor = [], 0
        for start, end in spans:
            parts.append(text[cursor:start])
            parts.append(SAFE_OPENER)
            cursor = end
        parts.append(text[cursor:])
        text = "".join(parts)
    return text if not contains_tag(text) else WITHHELD


def scrub(value: Any, keep: frozenset[str] = frozenset()) -> Any:
    """Every string in a JSON-like value neutralised (dict keys too); keys in `keep` pass as they
    are (the server-written window, already built from neutralised parts). A value none of whose
    strings spells a tag comes back as it is. Its plain strings (ASCII, no entity: `skeleton`'s
    byte table) are checked at once, joined by newlines: that skeleton maps byte by byte, so a tag
    in any one of them is a match in the whole; the others one by one, each the whole way (joined
    to the plain ones, one accented docstring sent all of a `context` result the whole way: 4 ms
    a call on sympy). Checking each of a `packet` result's ~250 strings alone cost ~0.3 ms."""
    plain, other = [], []
    for text in _strings(value, keep):
        (plain if _table_path(text) else other).append(text)
    if not contains_tag("\n".join(plain)) and not any(map(contains_tag, other)):
        return value
    return _scrub(value, keep)


def _table_path(text: str) -> bool:
    """`skeleton` reads `text` from its byte table (ASCII without an HTML entity)."""
    return text.isascii() and ("&" not in text or not _ENTITY.search(text))


def _strings(value: Any, keep: frozenset[str]):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            if isinstance(k, str):
                yield k
            if k not in keep:
                yield from _strings(v, keep)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v, keep)


def _scrub(value: Any, keep: frozenset[str]) -> Any:
    if isinstance(value, str):
        return neutralize(value)
    if isinstance(value, dict):
        return {neutralize(k) if isinstance(k, str) else k: (v if k in keep else _scrub(v, keep))
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_scrub(v, keep) for v in value]
    return value
