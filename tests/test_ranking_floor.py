"""The ranking check CI runs: known-answer questions over the fixture workspace, with floors on
Acc@1, Acc@3 and semble's NDCG@10 (`bench.semble.ndcg10`). A ranking change that drops below a
floor fails here in seconds; the real measurements are `python -m mcp_retrieval.bench …`
(docs/BENCHMARKS.md). Lexical only, so the check is deterministic and fast."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from mcp_retrieval import Config, Engine
from mcp_retrieval.bench.semble import ndcg10
from mcp_retrieval.workspace import Workspace

QUESTIONS = Path(__file__).resolve().parent.parent / "fixtures" / "ranking_questions.jsonl"
# Measured 2026-12-04: Acc@1 0.7, Acc@3 0.9, NDCG@10 0.85, know 1.0 (the learned file ranker; the
# hand-set score gave 0.9 / 1.0 / 0.96: it does not demote documentation as hard, and the one
# documentation question here, "how do I install the shop", loses its guide). "discount codes"
# lost `pricing.py` to `cart.py`, which imports its `apply_discount`, when the Python import lift
# went: on swebench_dev the lift cost three first files (docs/BENCHMARKS-history.md 42d). "adding tax to
# an amount" lost `pricing.py` to `cart.py`, whose code calls its `add_tax`, when the file ranker read
# 1,000 characters of each chunk (model 6: mined commits +24 -14 at Acc@5 out of fold, docs/BENCHMARKS-history.md
# 53g). Floors sit at the measured values: a change that loses a question here must say why there.
FLOORS = {"acc1": 0.6, "acc3": 0.9, "ndcg10": 0.8, "know": 1.0}


def test_known_answer_questions_stay_above_their_floors(workspace, tmp_path):
    config = Config.resolve(workspace, tmp_path / "index", persist_sessions=False, embedder="none")
    config.cache_dir = tmp_path / "cache"
    engine = Engine(config)
    engine.reindex()
    ws = Workspace.single(engine)
    scores = {k: [] for k in FLOORS}
    try:
        for line in QUESTIONS.read_text().splitlines():
            q = json.loads(line)
            result = ws.packet(q["query"], max_items=10)
            files = list(dict.fromkeys(i.path for i in result.items))
            scores["acc1"].append(files[:1] == q["relevant"][:1])
            scores["acc3"].append(q["relevant"][0] in files[:3])
            scores["ndcg10"].append(ndcg10([(i.path, i.start_line, i.end_line) for i in result.items],
                                           [(p, None, None) for p in q["relevant"]]))
            scores["know"].append(result.know is not None)
    finally:
        engine.close()
    means = {k: statistics.mean(v) for k, v in scores.items()}
    assert all(means[k] >= floor for k, floor in FLOORS.items()), means
