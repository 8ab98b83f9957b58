"""The learned file ranker: one linear score per candidate file from `file_features`.

The weights live in `weights/file_ranker.json` (features, standardisation, weights, the recipe's
version and cross-validated figures), trained by `training/train_file_ranker.py` on mined commit
history of repositories outside the evaluation list plus the dev files, folds grouped by
repository (training/README.md). One model serves questions with and without vectors: retrained
on pools collected with the static dense tier on, it did no better on them than these weights
(docs/BENCHMARKS-history.md 40c). A file's score is the weighted sum of its standardised features;
`contributions` says which features made it (shown with `debug`). The file is read once; a
missing or malformed file leaves the hand-set file score in charge, with one warning.
"""

from __future__ import annotations

import functools
import json
import logging
from dataclasses import dataclass
from importlib import resources

import numpy as np

from mcp_retrieval.file_features import FEATURES, file_features

log = logging.getLogger(__name__)
MODEL_FILE = "file_ranker.json"


SHOW_EVERY_CONTRIBUTION = False  # `bench losses` reads every feature's, not `debug`'s strongest few


@dataclass(frozen=True)
class FileRanker:
    version: str
    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    temperature: float = 1.0
    features: tuple[str, ...] = FEATURES  # the columns' names (`lead_chunk` reuses this class for its own)

    def scores(self, rows: list[list[float]]) -> np.ndarray:
        if not rows:
            return np.zeros(0)
        return ((np.asarray(rows, dtype=np.float64) - self.mean) / self.scale) @ self.weights

    def contributions(self, row: list[float], top: int = 6) -> dict[str, float]:
        """The features that moved this file's score most, by signed contribution (every one
        with SHOW_EVERY_CONTRIBUTION)."""
        parts = (np.asarray(row) - self.mean) / self.scale * self.weights
        best = np.argsort(-np.abs(parts))[:None if SHOW_EVERY_CONTRIBUTION else top]
        return {self.features[i]: round(float(parts[i]), 3) for i in best if parts[i]}

    @classmethod
    def from_dict(cls, data: dict, features: tuple[str, ...] = FEATURES) -> "FileRanker":
        if list(data["features"]) != list(features):
            raise ValueError("its features are not this version's (retrain: training/README.md)")
        arrays = [np.asarray(data[k], dtype=np.float64) for k in ("mean", "scale", "weights")]
        if any(a.shape != (len(features),) for a in arrays):
            raise ValueError("its arrays do not match its feature list")
        temperature = float(data.get("temperature", 1.0))
        if not temperature > 0:
            raise ValueError("its temperature is not positive")
        return cls(str(data.get("version", "")), *arrays, temperature, tuple(features))


def load(model_file: str, features: tuple[str, ...], fallback: str) -> FileRanker | None:
    """A linear model shipped in `mcp_retrieval.weights`, or None (one warning naming `fallback`,
    what takes its place) when it cannot be read."""
    try:
        text = resources.files("mcp_retrieval.weights").joinpath(model_file).read_text(encoding="utf-8")
        return FileRanker.from_dict(json.loads(text), features)
    except (OSError, ValueError, KeyError, TypeError, ModuleNotFoundError) as exc:
        log.warning("%s not loaded (%s); %s", model_file, exc, fallback)
        return None


@functools.lru_cache(maxsize=1)
def shipped() -> FileRanker | None:
    """The model that ships with the package, or None (with a warning) when it cannot be read."""
    return load(MODEL_FILE, FEATURES, "files ranked by the hand-set file score")


def file_scores(model: FileRanker, query: str, candidates,
                explained: dict | None = None) -> dict[tuple[str, str], float]:
    """Each candidate file's learned score as a share of the best file's: exp((s - best) / T), 1 for
    the best file. That is the scale `file_rank`'s shares are read on (a file's further chunk waits
    behind files over half its file's score); the temperature T
    is chosen with the weights, by the same grouped folds (training/train_file_ranker.py).
    `explained`, when given, receives each file's strongest feature contributions (for `debug`),
    from the very rows that were scored."""
    keys, rows = file_features(query, candidates)
    if not keys:
        return {}
    raw = model.scores(rows)
    if explained is not None:
        explained.update((key, model.contributions(row)) for key, row in zip(keys, rows))
    return dict(zip(keys, np.exp((raw - raw.max()) / model.temperature).tolist()))
