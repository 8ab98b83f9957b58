"""The learned chunk order: which chunk of a file `packet` shows first. The shipped model loads and
beats the order by score on its own folds; it moves a long chunk holding the question's words ahead
of a tiny higher-scored one without touching the order of files; the training script learns from
a real commit in a real git directory."""

from __future__ import annotations

import json
import subprocess
from importlib import resources

from mcp_retrieval import file_rank, lead_chunk
from mcp_retrieval.file_scorer import FileRanker
from mcp_retrieval.indexers.store import StoredChunk
from mcp_retrieval.retrieve import Candidate
from training import train_lead_chunk


def _candidate(path: str, start: int, end: int, symbol: str, text: str, score: float) -> Candidate:
    chunk = StoredChunk(id=f"{path}:{start}", path=path, start_line=start, end_line=end, symbol=symbol,
                        kind="method", language="python", header=f"{path} · def {symbol}", text=text, sha256="",
                        tokens=len(text) // 4, embedded=False)
    return Candidate(chunk=chunk, score=score, ranks={"lexical": 1})


def test_the_shipped_model_matches_its_features_and_beat_the_score_order_out_of_fold():
    model = lead_chunk.shipped()
    assert model is not None and model.features == lead_chunk.FEATURES
    data = json.loads(resources.files("mcp_retrieval.weights").joinpath(lead_chunk.MODEL_FILE).read_text())
    figures = data["figures"]
    assert figures["repositories"] >= 50 and figures["learned_out_of_fold"] > figures["by_score"]


def test_a_long_chunk_holding_the_question_goes_ahead_of_a_tiny_one_and_files_keep_their_order():
    query = "session close does not release the pooled connection"
    body = "\n".join(["    def close(self):", "        # release the pooled connection of this session",
                      *(f"        self._connector.release(conn{i})" for i in range(30))])
    tiny = _candidate("client.py", 10, 12, "ClientSession.__aexit__", "    async def __aexit__(self):\n"
                      "        await self.close()", 1.0)
    long = _candidate("client.py", 40, 72, "ClientSession.close", body, 0.8)
    other = _candidate("connector.py", 1, 20, "Connector.release", "def release(self, conn): ...", 0.9)
    pool = [tiny, other, long]
    by_score = file_rank.rank_files(pool, per_file=2)
    learned = file_rank.rank_files(pool, per_file=2, within=lead_chunk.within_files(lead_chunk.shipped(), query))
    assert [c.chunk.path for c in by_score] == [c.chunk.path for c in learned]  # files keep their places
    assert by_score[0] is tiny and learned[0] is long
    assert "first in its file by the learned chunk order" in long.why


def _git(cwd, *args) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


def test_training_learns_from_a_commits_changed_lines(tmp_path):
    """Ten repositories' worth of one real commit: the fix changes the long method, never the tiny
    one that scored higher. Trained and scored by folds grouped by repository, the learned order
    puts the changed chunk first where the score did not."""
    work = tmp_path / "work"
    work.mkdir()
    _git(work, "init", "-q")
    lines = [f"line {n}" for n in range(1, 61)]
    (work / "mod.py").write_text("\n".join(lines) + "\n")
    _git(work, "add", "mod.py")
    _git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first")
    lines[44] = "fixed line 45"
    (work / "mod.py").write_text("\n".join(lines) + "\n")
    _git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "fix the parser's connection handling")
    sha = _git(work, "rev-parse", "HEAD")
    records = []
    for r in range(10):
        mirror = tmp_path / "mirrors" / f"owner+repo{r}"
        mirror.mkdir(parents=True)
        (mirror / "repo").symlink_to(work / ".git")
        query = f"fix the parser connection handling {r}"

        def chunk(start, end, symbol, text, score):
            return {"path": "mod.py", "start": start, "end": end, "symbol": symbol, "kind": "method",
                    "language": "python", "score": score, "fused": score, "raw": {}, "ranks": {"lexical": 1},
                    "header": f"mod.py · def {symbol}", "text": text, "tokens": 9}
        records.append({"id": f"owner/repo{r}@{sha}", "source": "commits", "repo": f"owner/repo{r}", "query": query,
                        "gold_files": ["mod.py"],
                        "pool": [chunk(1, 3, "handle", "def handle(): pass", 1.0),
                                 chunk(30, 60, "parse_connection", "def parse_connection():\n" + "    parser\n" * 30,
                                       0.7)]})
    pools, out = tmp_path / "pools.jsonl", tmp_path / "lead.json"
    pools.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert train_lead_chunk.main([str(pools), "--mirrors", str(tmp_path / "mirrors"), "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["figures"]["files"] == 10 and data["figures"]["by_score"] == 0.0
    assert data["figures"]["learned_out_of_fold"] == 1.0
    assert FileRanker.from_dict(data, lead_chunk.FEATURES).features == lead_chunk.FEATURES


def test_a_question_that_is_one_identifier_keeps_the_score_order():
    """The model learned from commit messages; asked `Axios`, the class's own definition (first by
    score, from the symbol tier) must lead its file, not a long method that says "axios" often."""
    assert lead_chunk.within_files(lead_chunk.shipped(), "Axios") is None
    assert lead_chunk.within_files(lead_chunk.shipped(), "how does Axios dispatch a request") is not None


def test_a_mirrors_diff_driver_never_runs_when_training_reads_a_commit(tmp_path):
    """The training script reads a mined commit through the project's neutralised git: a mirror
    whose config and attributes name a textconv filter (which `git show` runs) or an external diff
    program gets its plain diff read, and neither program runs."""
    work = tmp_path / "work"
    work.mkdir()
    _git(work, "init", "-q")
    (work / "mod.py").write_text("a\nb\nc\n")
    _git(work, "add", "mod.py")
    _git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first")
    (work / "mod.py").write_text("a\nB\nc\n")
    _git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "second")
    marker = tmp_path / "ran"
    (tmp_path / "driver.sh").write_text(f"#!/bin/sh\ntouch {marker}\n")
    (tmp_path / "driver.sh").chmod(0o755)
    _git(work, "config", "diff.external", str(tmp_path / "driver.sh"))
    _git(work, "config", "diff.hostile.textconv", f"{tmp_path / 'driver.sh'}; cat")
    (work / ".git" / "info").mkdir(exist_ok=True)
    (work / ".git" / "info" / "attributes").write_text("*.py diff=hostile\n")
    lines = train_lead_chunk.changed_lines(work / ".git", _git(work, "rev-parse", "HEAD"))
    assert lines == {"mod.py": {2}} and not marker.exists()
