"""Jupyter notebooks are indexed as the script their cells make: code found by its names, outputs
(tracebacks, base64 images) never in the index and not counted against the file size limit, a
broken notebook skipped with its reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp_retrieval.config import Config
from mcp_retrieval.engine import Engine
from mcp_retrieval.indexers.embed import HashEmbedder
from mcp_retrieval.indexers.notebooks import notebook_text
from mcp_retrieval.workspace import Workspace

IMAGE = "iVBORw0KGgo" + "QUFB" * 3000  # a plotted figure, as a notebook stores it

NOTEBOOK = {
    "nbformat": 4, "nbformat_minor": 5, "metadata": {"kernelspec": {"name": "python3", "language": "python"}},
    "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Churn model\n", "Feature engineering first."]},
        {"cell_type": "code", "metadata": {}, "execution_count": 1, "outputs": [],
         "source": ["%matplotlib inline\n", "import pandas as pd\n"]},
        {"cell_type": "code", "metadata": {}, "execution_count": 2,
         "source": ["def tenure_buckets(frame):\n", "    \"\"\"Bucket customer tenure into quarters.\"\"\"\n",
                    "    return pd.cut(frame.tenure_months, bins=[0, 3, 6, 9, 12])\n"],
         "outputs": [{"output_type": "display_data", "data": {"image/png": IMAGE, "text/plain": ["<Figure>"]}},
                     {"output_type": "error", "ename": "KeyError", "evalue": "'zebra_stripes'",
                      "traceback": ["KeyError: 'zebra_stripes' raised in the output only"]}]},
    ],
}


def test_cells_become_a_percent_script_without_outputs():
    text = notebook_text(json.dumps(NOTEBOOK).encode())
    assert text.splitlines()[:4] == ["# %% [1] markdown", "# # Churn model", "# Feature engineering first.", ""]
    assert "# %% [3]" in text and "def tenure_buckets(frame):" in text
    assert "# %matplotlib inline" in text  # magics commented out: the cell still parses as Python
    assert "QUFB" not in text and "zebra_stripes" not in text
    assert notebook_text(b"{not json") is None and notebook_text(b"[1, 2]") is None
    odd = {"cells": [{"cell_type": "code", "source": ["x = 1\n", 7, None]}, None, {"cell_type": ["code"]},
                     {"cell_type": "code", "source": None}]}
    assert notebook_text(json.dumps(odd).encode()).splitlines() == ["# %% [1]", "x = 1", "", "# %% [4]"]
    v3 = {"nbformat": 3, "worksheets": [{"cells": [{"cell_type": "code", "input": ["x = 1\n"]}]}]}
    assert notebook_text(json.dumps(v3).encode()).splitlines()[:2] == ["# %% [1]", "x = 1"]


@pytest.fixture
def notebook_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    root = tmp_path / "ws"
    (root / "notebooks").mkdir(parents=True)
    (root / "notebooks" / "churn.ipynb").write_text(json.dumps(NOTEBOOK, indent=1))
    (root / "notebooks" / "broken.ipynb").write_text('{"cells": [')
    plotted = json.loads(json.dumps(NOTEBOOK))  # 1.5 MB of figures: over the file limit, under a notebook's
    plotted["cells"][2]["source"] = ["def plot_retention(frame):\n", "    return frame.plot()\n"]
    plotted["cells"][2]["outputs"][0]["data"]["image/png"] = "QUFB" * 375_000
    (root / "notebooks" / "plots.ipynb").write_text(json.dumps(plotted))
    (root / "huge.txt").write_text("retention " * 150_000)  # other files keep the 1 MB limit
    (root / "model.py").write_text("def train(frame):\n    return frame.fit()\n")
    monkeypatch.setenv("MCP_RETRIEVAL_CACHE_DIR", str(tmp_path / "cache"))
    config = Config.resolve(root, tmp_path / "index", persist_sessions=False)
    config.cache_dir = tmp_path / "cache"
    eng = Engine(config, embedder=HashEmbedder())
    result = eng.reindex()
    yield eng, result
    eng.close()


def test_a_notebooks_code_is_found_by_name_and_its_outputs_are_not(notebook_engine):
    eng, result = notebook_engine
    assert result.skipped.get("unreadable_notebook") == 1 and result.skipped.get("too_large") == 1
    assert "notebooks/plots.ipynb::plot_retention" in {
        n.id for n in eng.query_graph("notebooks/plots.ipynb", relation="defines").nodes}
    r = Workspace.single(eng).context("where are tenure_buckets computed for the churn model", budget_tokens=800)
    assert r.chunks and r.chunks[0].path == "notebooks/churn.ipynb", [c.path for c in r.chunks]
    assert "def tenure_buckets(frame):" in r.window and "QUFB" not in r.window
    defined = {n.id for n in eng.query_graph("notebooks/churn.ipynb", relation="defines").nodes}
    assert "notebooks/churn.ipynb::tenure_buckets" in defined
    assert not Workspace.single(eng).context("zebra_stripes", budget_tokens=400).chunks  # an output's text is not indexed
