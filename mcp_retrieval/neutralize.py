"""Control-tag neutralisation: indexed text can never emit our `<mcp-retrieval:` markup.

Detection runs on a canonical skeleton of the text — HTML entities decoded (repeatedly, so
`&amp;lt;` counts), NFKC-normalised (fullwidth `＜`, `：`), lowercased, dash look-alikes folded,
whitespace and invisible format characters (zero-width space/joiner, BOM, soft hyphen)
removed — so `< MCP-Retrieval:`, `&lt;mcp-retrieval:`, `<\u200bmcp-retrieval:` and `</mcp-retrieval:`
are all caught. Each hit's opening bracket (in whatever form it was written) is replaced by
`‹` in the output; the index itself keeps the text verbatim.
"""

from __future__ import annotations

import html
import re
import unicodedata

TAG = "mcp-retrieval:"
SAFE_OPENER = "\u2039"  # ‹ : visibly a bracket, never parsed as markup
_ENTITY = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});?")
_DASHES = dict.fromkeys(map(ord, "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d"), "-")
_PATTERNS = ("<" + TAG, "</" + TAG)


def _canonical(unit: str) -> str:
    for _ in range(4):  # entities nested in entities: &amp;lt; -> &lt; -> <
        decoded = html.unescape(unit)
        if decoded == unit:
            break
        unit = decoded
    out = []
    for ch in unicodedata.normalize("NFKC", unit):
        if ch.isspace() or unicodedata.category(ch) == "Cf":
            continue
        out.append(ch)
    return "".join(out).lower().translate(_DASHES)


def _units(text: str) -> list[tuple[int, int]]:
    """Spans of the raw text that are one character or one HTML entity."""
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(text):
        if text[i] == "&":
            m = _ENTITY.match(text, i)
            if m:
                spans.append((i, m.end()))
                i = m.end()
                continue
        spans.append((i, i + 1))
        i += 1
    return spans


_INVISIBLE = re.compile(r"[\s\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff]+")


def _could_spell_tag(text: str) -> bool:
    """Cheap screen (C-speed string work): can this text spell `mcp` in any disguise at all?"""
    quick = text if text.isascii() else unicodedata.normalize("NFKC", text)
    if "&" in quick:
        quick = html.unescape(html.unescape(html.unescape(quick)))
    quick = _INVISIBLE.sub("", quick).lower()
    if quick.isascii():
        return "mcp" in quick
    return "mcp" in "".join(ch for ch in quick if unicodedata.category(ch) != "Cf")


def _opener_spans(text: str) -> list[tuple[int, int]]:
    if not _could_spell_tag(text):
        return []
    units = _units(text)
    chars: list[str] = []
    owner: list[int] = []  # skeleton position -> unit index
    for n, (start, end) in enumerate(units):
        canon = _canonical(text[start:end])
        chars.extend(canon)
        owner.extend([n] * len(canon))
    flat = "".join(chars)
    for _ in range(3):  # entities spelled across units, e.g. `&amp;` + `lt;` -> `&lt;` -> `<`
        if "&" not in flat:
            break
        new_chars, new_owner, i = [], [], 0
        for m in _ENTITY.finditer(flat):
            new_chars.extend(flat[i:m.start()])
            new_owner.extend(owner[i:m.start()])
            canon = _canonical(m.group(0))
            new_chars.extend(canon)
            new_owner.extend([owner[m.start()]] * len(canon))
            i = m.end()
        new_chars.extend(flat[i:])
        new_owner.extend(owner[i:])
        if "".join(new_chars) == flat:
            break
        flat, owner = "".join(new_chars), new_owner
    hits: list[tuple[int, int]] = []
    for pattern in _PATTERNS:
        for m in re.finditer(re.escape(pattern), flat):
            hits.append(units[owner[m.start()]])
    return sorted(set(hits))


def neutralize(text: str) -> str:
    """`text` with every spelling of our tag prefix defused; idempotent."""
    for _ in range(8):  # replacing one opener can never create another, but stay bounded anyway
        spans = _opener_spans(text)
        if not spans:
            return text
        parts, cursor = [], 0
        for start, end in spans:
            parts.append(text[cursor:start])
            parts.append(SAFE_OPENER)
            cursor = end
        parts.append(text[cursor:])
        text = "".join(parts)
    return text


def contains_tag(text: str) -> bool:
    """True when `text` spells our tag prefix in any disguise (used by tests and as a guard)."""
    return bool(_opener_spans(text))
