"""Jupyter notebooks as the script their cells make.

An `.ipynb` file is JSON: its code sits in string lists beside outputs (tracebacks, tables, base64
images) that are never the answer and would flood the index. A notebook is indexed as the script
`jupytext --to py:percent` would write: each cell opens with a `# %% [n]` marker (n counts cells
from 1, as Jupyter shows them; markdown cells are `# %% [n] markdown` with their lines commented),
outputs and metadata are dropped, IPython magics and shell escapes (`%time`, `!pip`) are commented
out so the cell still parses as Python. Line numbers of a notebook's chunks are lines of that script,
and the marker above a line names its cell. The nbformat 4 layout (`cells`) and the older 3
(`worksheets[].cells`, code in `input`) are read; anything else is not a notebook we can read.
"""

from __future__ import annotations

import json

NOTEBOOK_SUFFIX = ".ipynb"


def is_notebook(path: str) -> bool:
    return path.lower().endswith(NOTEBOOK_SUFFIX)


def _lines(source) -> list[str]:
    """A cell's source lines (a string or a list of strings; anything else in it is no text)."""
    if isinstance(source, list):
        source = "".join(part for part in source if isinstance(part, str))
    return source.splitlines() if isinstance(source, str) else []


def notebook_text(data: bytes) -> str | None:
    """The notebook's cells as a percent-format script, or None when the bytes are not a notebook."""
    try:
        doc = json.loads(data.decode("utf-8", errors="replace"))
    except ValueError:
        return None
    if not isinstance(doc, dict):
        return None
    cells = doc.get("cells")
    if cells is None and isinstance(doc.get("worksheets"), list):  # nbformat 3
        cells = [c for ws in doc["worksheets"] if isinstance(ws, dict) and isinstance(ws.get("cells"), list)
                 for c in ws["cells"]]
    if not isinstance(cells, list):
        return None
    out: list[str] = []
    for n, cell in enumerate(cells, start=1):
        if not isinstance(cell, dict):
            continue
        kind = cell.get("cell_type")
        source = cell.get("source", cell.get("input", ""))
        if kind == "code":
            out += [f"# %% [{n}]", *(f"# {line}" if line.lstrip().startswith(("%", "!")) else line
                                      for line in _lines(source)), ""]
        elif kind in ("markdown", "raw", "heading"):
            out += [f"# %% [{n}] {kind}", *(f"# {line}".rstrip() for line in _lines(source)), ""]
    return "\n".join(out)
