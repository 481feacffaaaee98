"""Recommendations for new histories of original item ids, from a saved artifact."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Literal, NamedTuple, Sequence

import numpy as np
import torch
from torch import nn

from awrsr.data import Sequences, Vocabulary
from awrsr.errors import ConfigError, UnknownItemError
from awrsr.eval import mask_items
from awrsr.infer.artifact import LoadedArtifact, load_artifact


def resolve_device(device: str | torch.device) -> torch.device:
    """``auto`` is the first CUDA device if torch sees one, else the CPU; a device this machine
    does not have is a ConfigError, not a failure at the first request."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        resolved = torch.device(device)
    except (RuntimeError, TypeError):
        resolved = None
    if resolved is None or resolved.type not in ("cpu", "cuda", "mps"):
        raise ConfigError(f"device must be cpu, cuda, cuda:N, mps or auto, got {device!r}")
    if resolved.type == "cuda" and (resolved.index or 0) >= torch.cuda.device_count():
        raise ConfigError(f"device {device!r}: torch sees {torch.cuda.device_count()} CUDA device(s) on this machine")
    if resolved.type == "mps" and not torch.backends.mps.is_available():
        raise ConfigError(f"device {device!r}: MPS is not available on this machine")
    return resolved


class Recommendation(NamedTuple):
    item: int | str  # original item id
    score: float


class Recommender:
    """Top-k next items for histories given in the user's own item ids.

    >>> rec = Recommender.load("runs/sasrec-ml-1m")  # doctest: +SKIP
    >>> rec.recommend([1193, 661, 914], k=3)  # doctest: +SKIP
    [Recommendation(item=2355, score=7.1), ...]
    """

    def __init__(self, model: nn.Module, vocab: Vocabulary, max_len: int, device: str | torch.device = "cpu") -> None:
        self.device = resolve_device(device)
        self.model = model.to(self.device).eval()
        self.vocab = vocab
        self.max_len = max_len

    @classmethod
    def load(cls, path: str | Path, device: str | torch.device = "cpu") -> "Recommender":
        """The artifact written by ``awrsr fit`` in ``path``, scoring on ``device`` (cpu, cuda,
        cuda:N, mps, or auto for the first GPU if there is one)."""
        return cls.from_artifact(load_artifact(path), device=device)

    @classmethod
    def from_artifact(cls, artifact: LoadedArtifact, device: str | torch.device = "cpu") -> "Recommender":
        """The recommender of an artifact already loaded (``awrsr.infer.load_artifact``)."""
        return cls(artifact.model, artifact.vocab, artifact.model_config.max_len, device=device)

    def recommend(
        self, history: Sequence[int | str], k: int = 10, exclude_seen: bool = True,
        unknown: Literal["error", "ignore"] = "error", exclude: Iterable[int | str] = (),
    ) -> list[Recommendation]:
        """The k best next items after ``history`` (oldest first), best first."""
        return self.recommend_many([history], k=k, exclude_seen=exclude_seen, unknown=unknown, exclude=exclude)[0]

    @torch.no_grad()
    def recommend_many(
        self, histories: Sequence[Sequence[int | str]], k: int = 10, exclude_seen: bool = True,
        unknown: Literal["error", "ignore"] = "error", exclude: Iterable[int | str] = (),
    ) -> list[list[Recommendation]]:
        """Top-k for each history, scored in one batch. An error names the history it is about
        (``histories[i]: ...``) when there are several.

        ``exclude`` lists item ids never to recommend (sold out, blocked) to any of the histories;
        ids the model does not know are skipped, since it cannot recommend them anyway."""
        if isinstance(exclude, (str, bytes)):
            raise ConfigError("exclude takes a list of item ids, not a single string")
        if k < 1:
            raise ConfigError(f"k must be >= 1, got {k}")
        encoded = []
        for i, history in enumerate(histories):
            where = f"histories[{i}]: " if len(histories) > 1 else ""
            if not len(history):
                raise ConfigError(f"{where}a history needs at least one item id")
            encoded.append(self._encode(history, unknown, where))
        lengths = np.array([len(e) for e in encoded], dtype=np.int64)
        rows = Sequences(np.concatenate([[0], np.cumsum(lengths)]), np.concatenate(encoded))
        scores = self.model.score_next(torch.from_numpy(rows.to_padded(self.max_len)).to(self.device))  # (B, I)
        if exclude_seen:
            seen_rows = torch.from_numpy(np.repeat(np.arange(len(encoded)), lengths)).to(self.device)
            scores = mask_items(scores, seen_rows, torch.from_numpy(rows.items - 1).to(self.device))
        excluded = [x for x in exclude if x in self.vocab]
        if excluded:
            scores[:, torch.from_numpy(self.vocab.encode(excluded) - 1).to(self.device)] = float("-inf")
        k = min(k, scores.shape[1])
        top_scores, top_cols = scores.topk(k, dim=1)
        if torch.isnan(top_scores).any() or torch.isposinf(top_scores).any():  # (-inf: filtered items)
            raise FloatingPointError("the model produced non-finite scores; its recommendations are meaningless")
        results = []
        for row_scores, row_cols in zip(top_scores.tolist(), top_cols.tolist()):
            valid = [(c, s) for c, s in zip(row_cols, row_scores) if s != float("-inf")]
            items = self.vocab.decode([c + 1 for c, _ in valid]) if valid else []
            results.append([Recommendation(i, s) for i, (_, s) in zip(items, valid)])
        return results

    def _encode(self, history: Sequence[int | str], unknown: str, where: str = "") -> np.ndarray:
        try:
            return self.vocab.encode(history)
        except UnknownItemError as err:
            if unknown == "error":
                raise UnknownItemError(err.unknown, where=where) from None
            if len(err.unknown) == len(history):
                raise ConfigError(f"{where}no known item id to recommend from ({err})") from None
            missing = {str(x) for x in err.unknown}
            return self.vocab.encode([x for x in history if str(x) not in missing])
