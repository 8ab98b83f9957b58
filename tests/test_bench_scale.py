"""`bench scale`'s restarted phase: a process started on a finished index reports its memory."""

import json

from mcp_retrieval.bench.scale import main
from mcp_retrieval.config import Config
from mcp_retrieval.engine import Engine


def test_the_restarted_phase_answers_on_the_built_index_and_reports_its_memory(workspace, tmp_path, capsys):
    work = tmp_path / "work"
    config = Config.resolve(workspace, work / "index", persist_sessions=False, embedder="none")
    config.cache_dir = work / "cache"
    engine = Engine(config)
    engine.reindex()
    engine.close()
    queries = tmp_path / "questions.txt"
    queries.write_text("where is the discount applied\nCart.subtotal\n")
    assert main(["--root", str(workspace), "--work", str(work), "--no-dense", "--queries", str(queries),
                 "--restarted"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["questions"] == 2 and 0 < report["idle_rss_mib"] <= report["peak_rss_mib"]
