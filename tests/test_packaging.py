"""mcp-retrieval claims no top-level module but its own: another distribution named `prompts`
or `indexers` can neither shadow ours nor be overwritten by ours."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # servers, subprocesses or builds: left out of `-m 'not slow'`

ROOT = Path(__file__).resolve().parent.parent


def test_a_foreign_prompts_and_indexers_package_first_on_the_path_changes_nothing(tmp_path):
    for name in ("prompts", "indexers"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text("raise ImportError('the foreign package was imported')\n")
    code = ("from mcp_retrieval.server import build_server; from mcp_retrieval.prompts import load; "
            "from mcp_retrieval.indexers.walk import walk; print(len(load('context')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                         env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"}, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert int(out.stdout.strip()) > 100


@pytest.mark.timeout(300)
def test_the_wheel_installs_only_the_mcp_retrieval_package(tmp_path):
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                            str(tmp_path), str(ROOT)], capture_output=True, text=True, timeout=300)
    if built.returncode != 0:
        pytest.skip(f"could not build a wheel here: {built.stderr.strip()[-300:]}")
    wheel = next(tmp_path.glob("mcp_retrieval-*.whl"))
    tops = {name.split("/", 1)[0] for name in zipfile.ZipFile(wheel).namelist()}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"mcp_retrieval"}
    names = zipfile.ZipFile(wheel).namelist()
    assert "mcp_retrieval/prompts/context.txt" in names and "mcp_retrieval/indexers/queries/python.scm" in names
    assert "mcp_retrieval/weights/file_ranker.json" in names  # the learned file ranker ships with the code
    assert "mcp_retrieval/weights/lead_chunk.json" in names  # and the learned chunk order
    assert not any(n.startswith("mcp_retrieval/bench/") for n in names)  # development scripts stay in the clone
