"""Full-ranking evaluation over every item, vectorised per batch of users."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Protocol

import numpy as np
import torch
from torch import Tensor

from awrsr.data import EvalCases
from awrsr.eval.metrics import pessimistic_ranks, ranking_metrics


class NextItemScorer(Protocol):
    def score_next(self, input_ids: Tensor) -> Tensor: ...  # (B, n) -> (B, num_items)


@dataclass
class EvalBatch:
    input_ids: Tensor  # (B, n) left-padded item indices, the last n of each history
    target_cols: Tensor  # (B,) score column of each target (item index - 1)
    seen_rows: Tensor  # (S,) batch row of each already-seen item
    seen_cols: Tensor  # (S,) its score column

    def to(self, device: torch.device) -> "EvalBatch":
        return EvalBatch(*(t.to(device) for t in (self.input_ids, self.target_cols, self.seen_rows, self.seen_cols)))


def build_eval_batches(
    cases: EvalCases, max_len: int, batch_size: int, filter_seen: bool
) -> list[EvalBatch]:
    """Cut the evaluation users into batches once, with their seen-item indices, so that every
    later evaluation only runs the model and one scatter per batch."""
    inputs = torch.from_numpy(cases.history.to_padded(max_len))  # (M, n)
    targets = torch.from_numpy(cases.targets - 1)
    lengths = cases.history.lengths
    batches = []
    for start in range(0, len(targets), batch_size):
        stop = min(start + batch_size, len(targets))
        lo, hi = cases.history.offsets[start], cases.history.offsets[stop]
        if filter_seen:
            rows = torch.from_numpy(np.repeat(np.arange(stop - start), lengths[start:stop]))
            cols = torch.from_numpy(cases.history.items[lo:hi] - 1)
        else:
            rows = cols = torch.empty(0, dtype=torch.long)
        batches.append(EvalBatch(inputs[start:stop], targets[start:stop], rows, cols))
    return batches


def mask_items(scores: Tensor, rows: Tensor, cols: Tensor) -> Tensor:
    """A copy of ``scores`` (B, I) with -inf at each (row, col): items that may not be ranked."""
    return scores.index_put((rows, cols), torch.tensor(float("-inf"), device=scores.device, dtype=scores.dtype))


@torch.no_grad()
def rank_batch(model: NextItemScorer, batch: EvalBatch) -> Tensor:
    """Pessimistic rank (B,) of each target among all items, seen items filtered when the batch
    carries them. The target itself is never filtered, even if it was seen before."""
    scores = model.score_next(batch.input_ids).float()  # (B, I)
    if batch.seen_rows.numel():
        target_scores = scores.gather(1, batch.target_cols[:, None])
        scores = mask_items(scores, batch.seen_rows, batch.seen_cols)
        scores.scatter_(1, batch.target_cols[:, None], target_scores)
    return pessimistic_ranks(scores, batch.target_cols)


class FullRankingEvaluator:
    """Ranks each case's target against every item and reports HR/NDCG@k and MRR.

    >>> evaluator = FullRankingEvaluator(split.test, max_len=50)  # doctest: +SKIP
    >>> evaluator.evaluate(model)["ndcg@10"]  # doctest: +SKIP
    """

    def __init__(
        self, cases: EvalCases, max_len: int, ks: list[int] = (1, 5, 10, 20),
        filter_seen: bool = True, batch_size: int = 256,
    ) -> None:
        self.ks = list(ks)
        self.filter_seen = filter_seen
        self.num_cases = len(cases.targets)
        self.batches = build_eval_batches(cases, max_len, batch_size, filter_seen)

    def __iter__(self) -> Iterator[EvalBatch]:
        return iter(self.batches)

    def __len__(self) -> int:
        return len(self.batches)

    @torch.no_grad()
    def ranks(self, model: NextItemScorer, device: torch.device | str = "cpu") -> Tensor:
        was_training = getattr(model, "training", False)
        if hasattr(model, "eval"):
            model.eval()
        try:
            return torch.cat([rank_batch(model, b.to(device)).cpu() for b in self.batches])
        finally:
            if was_training:
                model.train()

    def evaluate(self, model: NextItemScorer, device: torch.device | str = "cpu") -> dict[str, float]:
        return ranking_metrics(self.ranks(model, device), self.ks)
