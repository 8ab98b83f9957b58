"""What a path is: file extension -> language, test file or not; and tree-sitter grammars from
their per-language wheels.

Grammars come compiled inside `tree-sitter-<lang>` wheels, so nothing is fetched at run time.
A grammar that fails to load degrades that language to line windows (reported once on stderr).
"""

from __future__ import annotations

import functools
import importlib
import logging
import re
from pathlib import PurePosixPath

from tree_sitter import Language, Parser

log = logging.getLogger(__name__)

_TEST_PATH = re.compile(r"(^|/)(tests?|testing|__tests__|spec)(/|$)|(^|/)(test_[^/]*|[^/]*_tests?\.\w+|conftest\.py|"
                        r"[^/]*\.(test|spec)\.\w+)$")


def is_test_path(path: str) -> bool:
    """Tests are embedded after code and ranked after it unless the question is about tests."""
    return bool(_TEST_PATH.search(path))

EXTENSIONS: dict[str, str] = {
    ".py": "python", ".pyi": "python",
    ".js": "javascript", ".jsx": "javascript", ".mjs": "javascript", ".cjs": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp", ".hxx": "cpp",
    ".md": "markdown", ".markdown": "markdown",
    ".rst": "rst", ".txt": "text",
}

# module name in its wheel, and the function that returns the language pointer
_GRAMMARS: dict[str, tuple[str, str]] = {
    "python": ("tree_sitter_python", "language"),
    "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "go": ("tree_sitter_go", "language"),
    "rust": ("tree_sitter_rust", "language"),
    "java": ("tree_sitter_java", "language"),
    "c": ("tree_sitter_c", "language"),
    "cpp": ("tree_sitter_cpp", "language"),
}

CODE_LANGUAGES = frozenset(_GRAMMARS)


def language_for(path: str) -> str:
    """The language of a workspace-relative path ('text' when unknown)."""
    return EXTENSIONS.get(PurePosixPath(path).suffix.lower(), "text")


@functools.cache
def grammar(language: str) -> Language | None:
    """The tree-sitter Language for `language`, or None when its wheel is missing or broken."""
    spec = _GRAMMARS.get(language)
    if spec is None:
        return None
    module_name, attr = spec
    try:
        module = importlib.import_module(module_name)
        return Language(getattr(module, attr)())
    except Exception as exc:  # a broken grammar wheel degrades to line windows
        log.warning("tree-sitter grammar for %s unavailable (%s); using line windows", language, exc)
        return None


def parser(language: str) -> Parser | None:
    lang = grammar(language)
    return Parser(lang) if lang is not None else None
