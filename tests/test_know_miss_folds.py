"""training.know_miss_folds: every question is scored by a model that saw neither its repository
nor its quarter of the off-topic questions; a question without candidates is a miss."""

import random

from training.know_miss_folds import QUARTERS, folds


def _rows(off_topic_like_answerable: bool) -> list[dict]:
    rng = random.Random(0)
    rows = []
    for repo in ("a", "b", "c", "d"):
        rows += [{"repo": repo, "answerable": True, "quarter": None, "x": [1.0]} for _ in range(20)]
        rows += [{"repo": repo, "answerable": False, "quarter": i % QUARTERS,
                  "x": [1.0 if off_topic_like_answerable else rng.random() * 0.1]} for i in range(8)]
    return rows


def test_separable_evidence_misses_nothing_and_answers_no_off_topic_question():
    rows = _rows(off_topic_like_answerable=False)
    rows.append({"repo": "a", "answerable": True, "quarter": None, "x": None})  # no candidates
    assert folds(rows, [0], quantile=0.0) == (1, 0)


def test_off_topic_questions_that_look_answerable_are_answered():
    missed, answered = folds(_rows(off_topic_like_answerable=True), [0], quantile=0.0)
    assert (missed, answered) == (0, 32)  # each of them passes a threshold set on answerable ones
