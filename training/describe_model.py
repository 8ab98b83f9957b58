"""Write the file ranker's feature table into docs/RANKING.md (between its markers).

    python -m training.describe_model [--model mcp_retrieval/weights/file_ranker.json] [--doc docs/RANKING.md]

Each feature's meaning is its comment in `mcp_retrieval/file_features.py`; its weight is the
shipped model's (per standard deviation of the feature: comparable across features), and the
cross-validated figures are the model file's own.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from mcp_retrieval import file_features



def meanings() -> dict[str, str]:
    source = Path(file_features.__file__).read_text()
    out = {}
    for name, comment in re.findall(r'^\s*"(\w+)",\s*#\s*(.+)$', source, re.M):
        out[name] = comment.strip()
    for tier in file_features.TIERS:
        out.setdefault(f"tier_{tier}", f"1 / the best rank the {tier} tier gave any of the file's chunks (0: none)")
    for name in file_features.CROSSED:
        out[f"{name}*q_short"] = f"{name}, for a question of at most six words"
        out[f"{name}*q_long"] = f"{name}, for a question of over forty words (a pasted issue)"
    return out


def table(model: dict) -> str:
    means = meanings()
    rows = sorted(zip(model["features"], model["weights"]), key=lambda t: -abs(t[1]))
    lines = [f"Model version {model['version']}, temperature {model.get('temperature', 1)}, trained on "
             f"{model['trained_on']['questions']} questions from {model['trained_on']['repositories']} repositories "
             f"({', '.join(model['trained_on']['sources'])}).", "",
             "| feature | weight | meaning |", "|---|---|---|"]
    lines += [f"| `{name}` | {weight:+.3f} | {means.get(name, '')} |" for name, weight in rows]
    lines += ["", "Cross-validated (five folds grouped by repository) against the hand-set file score on the same pools:",
              "", "```json", json.dumps(model.get("figures", {}), indent=1), "```"]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m training.describe_model")
    ap.add_argument("--model", default="mcp_retrieval/weights/file_ranker.json")
    ap.add_argument("--doc", default="docs/RANKING.md")
    ap.add_argument("--marker", default="file-ranker", help="the doc's <!-- MARKER:begin/end --> pair to write between")
    args = ap.parse_args(argv)
    begin, end = f"<!-- {args.marker}:begin -->", f"<!-- {args.marker}:end -->"
    model = json.loads(Path(args.model).read_text())
    doc = Path(args.doc)
    text = doc.read_text()
    if begin not in text or end not in text:
        print(f"{doc} has no {begin} ... {end} markers", file=sys.stderr)
        return 1
    head, rest = text.split(begin, 1)
    tail = rest.split(end, 1)[1]
    doc.write_text(f"{head}{begin}\n{table(model)}\n{end}{tail}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
