"""training.train_file_ranker: pools with a dense tier are reported apart and, with
--score-dense-only, scored without being trained on."""

import json

from training.train_file_ranker import main


def _pool(answer: str, other: str, dense: bool) -> list[dict]:
    def chunk(path: str, score: float, ranks: dict) -> dict:
        return {"path": path, "start": 1, "end": 9, "symbol": path.split(".")[0], "kind": "function",
                "language": "python", "score": score, "fused": score, "raw": {}, "ranks": ranks, "header": "",
                "text": f"def {path.split('/')[-1][:-3]}(): return {score}", "tokens": 5}
    ranks = {"lexical": 1, **({"dense": 1} if dense else {})}
    return [chunk(other, 1.0, {"lexical": 2}), chunk(answer, 0.9, ranks), chunk("zz/unrelated.py", 0.2, {"lexical": 3})]


def _write(path, dense: bool) -> int:
    rows = [{"id": f"r{r}-{q}", "source": "commits", "repo": f"owner/repo{r}", "query": f"fix parser number {q}",
             "gold_files": [f"pkg/parser{q}.py"], "pool": _pool(f"pkg/parser{q}.py", f"pkg/other{q}.py", dense)}
            for r in range(10) for q in range(2)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return len(rows)


def test_dense_pools_are_reported_apart_and_scored_without_training(tmp_path, capsys):
    lexical, dense, out = tmp_path / "lexical.jsonl", tmp_path / "dense.jsonl", tmp_path / "model.json"
    n = _write(lexical, dense=False)
    _write(dense, dense=True)

    assert main([str(lexical), "--dense-pools", f"static={dense}", "--score-dense-only", "--out", str(out)]) == 0
    model = json.loads(out.read_text())
    assert model["trained_on"]["questions"] == n  # the dense view scored, not learned from
    figures = model["figures"]["learned_cross_validated"]
    assert set(figures) == {"commits", "commits+static"}
    assert figures["commits+static"]["questions"] == n
    assert "commits+static" in capsys.readouterr().err
    by_fold = model["figures"]["by_fold"]  # each fold's own held-out figures, every question in one fold
    assert sum(fold["commits"]["questions"] for fold in by_fold) == n
