"""Question-like text paired with the code it describes, from the mined repositories' own
documentation: training data for the static token table (`training.train_static`).

    python -m training.doc_code_pairs --trees /tmp/train-trees --out /work/static-pairs/pairs.jsonl

A definition's leading documentation (a docstring, a `///` or `/** */` block, `--` comments) says
in words what its code does, as an agent's question does. For every definition chunk of the
repositories of training/repos.txt (none in ../shared/eval/evaluation_repos.txt; checked out as
one folder each, e.g. `git archive HEAD`) whose documentation holds at least MIN_WORDS words, the
pair is (the documentation's first sentences, comment marks stripped; the chunk as the index
embeds it, `embed_text(header, code)`, with the documentation lines removed so the model cannot
match the words themselves). Test files and generated files are skipped; at most `--per-repo`
pairs a repository (seed 0), so large repositories do not dominate. One JSON line a pair:
{"repo", "language", "query", "code"}. The file holds the repositories' text and stays outside
this repository.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from pathlib import Path

SEED = 0
MIN_WORDS = 5
MAX_QUERY_CHARS = 240
_DASH_COMMENTS = {"lua", "haskell"}  # `--` comments, which doc_lines does not read
_MARKS = re.compile(r'^\s*(?:/\*\*?|\*/|\*|///?|//!|--+\|?|#+|"""|\'\'\'|@doc\s+"""|@moduledoc\s+""")\s?')
_TAGS = re.compile(r"^\s*[@:](param|return|returns|throws|raises|arg|args|see|since|type|rtype)\b.*$", re.I)


def doc_and_code(text: str, language: str) -> tuple[str, str] | None:
    """(the documentation's words, the code without it) of a chunk, or None without documentation."""
    from mcp_retrieval.doc_lines import documentation_lines

    lines = text.split("\n")
    if language in _DASH_COMMENTS:
        doc = {i for i, line in enumerate(lines) if line.strip().startswith("--")}
    else:
        doc = documentation_lines(lines, language)
    if not doc:
        return None
    words = []
    for i in sorted(doc):
        line = _MARKS.sub("", lines[i]).strip().strip('"').strip("'").strip("*/").strip()
        if not line or _TAGS.match(line):
            continue
        words.append(line)
    query = re.sub(r"\s+", " ", " ".join(words)).strip()
    # the first sentences: an agent's question is short
    cut = [m.end() for m in re.finditer(r"[.!?](\s|$)", query) if m.end() >= 40]
    query = query[: cut[0] if cut else MAX_QUERY_CHARS][:MAX_QUERY_CHARS].strip()
    if len(re.findall(r"[A-Za-z]{2,}", query)) < MIN_WORDS:
        return None
    code = "\n".join(line for i, line in enumerate(lines) if i not in doc).strip()
    if len(code.split("\n")) < 2:
        return None
    return query, code


def pairs_of(repo: Path, per_repo: int, rng: random.Random) -> list[dict]:
    from mcp_retrieval.indexers.chunk import chunk_file
    from mcp_retrieval.indexers.embed import embed_text
    from mcp_retrieval.indexers.languages import language_of
    from training.trees import source_files

    out: list[dict] = []
    for rel, text in source_files(repo, rng):
        if len(out) >= per_repo:
            break
        for chunk in chunk_file(rel, text, language_of(rel, text)):
            if chunk.generated or chunk.kind not in ("function", "method", "class"):
                continue
            found = doc_and_code(chunk.text, chunk.language)
            if found:
                out.append({"repo": repo.name, "language": chunk.language, "query": found[0],
                            "code": embed_text(chunk.header, found[1])})
    return out[:per_repo]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m training.doc_code_pairs")
    ap.add_argument("--trees", action="append", required=True, help="folder of checked-out repositories (repeatable)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--per-repo", type=int, default=1500)
    ap.add_argument("--evaluation-repos", default="../shared/eval/evaluation_repos.txt")
    args = ap.parse_args(argv)
    from training.collect import refused_repos

    rng = random.Random(SEED)
    banned = refused_repos(Path(args.evaluation_repos))
    repos = []
    for repo in sorted(p for t in args.trees for p in Path(t).iterdir() if p.is_dir()):
        if repo.name.replace("+", "/").lower() in banned:  # folders named owner+name
            print(f"{repo.name}: refused, it is an evaluation or held-out repository", file=sys.stderr)
        else:
            repos.append(repo)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    total = 0
    with open(args.out, "w", encoding="utf-8") as fh:
        for repo in repos:
            found = pairs_of(repo, args.per_repo, rng)
            total += len(found)
            fh.writelines(json.dumps(p) + "\n" for p in found)
            print(f"{repo.name}: {len(found)} pairs", file=sys.stderr)
    print(f"{total} pairs from {len(repos)} repositories", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
