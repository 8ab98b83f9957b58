"""The source files of a checked-out repository, as the training scripts sample them."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

MAX_CHARS = 200_000  # what is read of one file


def source_files(repo: Path, rng: random.Random) -> Iterator[tuple[str, str]]:
    """(path in the repository, text) of its parsed-language source files, tests left out, in an
    order shuffled by `rng`; files that are not UTF-8 or cannot be read are skipped."""
    from mcp_retrieval.indexers.languages import GRAMMAR_LANGUAGES, is_test_path, language_for

    files = sorted(p for p in repo.rglob("*") if p.is_file() and language_for(p.name) in GRAMMAR_LANGUAGES
                   and not is_test_path(str(p.relative_to(repo))))
    rng.shuffle(files)
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        yield str(path.relative_to(repo)), text[:MAX_CHARS]
