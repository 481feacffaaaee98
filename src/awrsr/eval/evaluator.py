"""Full-ranking evaluation over every item, vectorised per batch of users."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Protocol

import numpy as np
import torch
from torch import Tensor

from awrsr.data import EvalCases
from awrsr.errors import AwrsrError
from awrsr.eval.metrics import pessimistic_ranks, pessimistic_ranks_of_shared_scores, ranking_metrics, refuse_nan
from awrsr.nn.precision import at_least_float32


class NextItemScorer(Protocol):
    def score_next(self, input_ids: Tensor) -> Tensor: ...  # (B, n) -> (B, num_items)
    # Optional: ``shared_scores() -> (num_items,)`` for a model that scores every history alike
    # (the popularity baseline); the evaluator then ranks by a sorted search.


@dataclass
class EvalBatch:
    input_ids: Tensor  # (B, n) left-padded item indices, the last n of each history
    target_cols: Tensor  # (B,) score column of each target (item index - 1)
    seen_rows: Tensor  # (S,) batch row of each already-seen item (each once, never the row's target)
    seen_cols: Tensor  # (S,) its score column

    def to(self, device: torch.device) -> "EvalBatch":
        return EvalBatch(*(t.to(device) for t in (self.input_ids, self.target_cols, self.seen_rows, self.seen_cols)))


def build_eval_batches(
    cases: EvalCases, max_len: int, batch_size: int, filter_seen: bool
) -> list[EvalBatch]:
    """Cut the evaluation users into batches once, with their seen-item indices, so that every
    later evaluation only runs the model and one comparison per batch.

    Users are batched in order of history length (``eval_order``), so that each batch's histories
    are about as long as each other and the model runs on the narrowest window that holds them;
    ``FullRankingEvaluator.ranks`` restores the users' order."""
    order = eval_order(cases)
    history = cases.history.select(order)
    inputs = torch.from_numpy(history.to_padded(max_len))  # (M, n)
    targets = cases.targets[order]
    lengths = history.lengths
    batches = []
    for start in range(0, len(targets), batch_size):
        stop = min(start + batch_size, len(targets))
        if filter_seen:
            rows, cols = seen_other_than_target(
                history.items[history.offsets[start]:history.offsets[stop]], lengths[start:stop], targets[start:stop]
            )
        else:
            rows = cols = torch.empty(0, dtype=torch.long)
        batches.append(EvalBatch(inputs[start:stop], torch.from_numpy(targets[start:stop] - 1), rows, cols))
    return batches


def seen_other_than_target(items: np.ndarray, lengths: np.ndarray, targets: np.ndarray) -> tuple[Tensor, Tensor]:
    """(row, score column) of each distinct item a batch's rows have seen, except each row's target.

    >>> seen_other_than_target(np.array([4, 2, 4, 7, 3]), np.array([3, 2]), np.array([2, 9]))
    (tensor([0, 1, 1]), tensor([3, 2, 6]))
    """
    rows = np.repeat(np.arange(len(lengths)), lengths)
    keep = items != targets[rows]  # the target is ranked even when it was seen before
    cols = items[keep].astype(np.int64) - 1
    width = int(cols.max()) + 1 if cols.size else 1
    # (row, col) as one number, in the pairs' order: a 1-D unique is 3x faster than one over row pairs
    pairs = np.unique(rows[keep] * width + cols)  # repeats once
    return torch.from_numpy(pairs // width), torch.from_numpy(pairs % width)


def eval_order(cases: EvalCases) -> np.ndarray:
    """The cases by history length, shortest first (stable): the order of ``build_eval_batches``."""
    return np.argsort(cases.history.lengths, kind="stable")


def mask_items_(scores: Tensor, rows: Tensor, cols: Tensor) -> Tensor:
    """``scores`` (B, I) with -inf written at each (row, col), in place: items that may not be
    ranked. The caller must own ``scores`` (recommend masks its copy of the model's scores)."""
    return scores.index_put_((rows, cols), torch.tensor(float("-inf"), device=scores.device, dtype=scores.dtype))


@torch.no_grad()
def rank_batch(model: NextItemScorer, batch: EvalBatch) -> Tensor:
    """Pessimistic rank (B,) of each target among all items, seen items filtered when the batch
    carries them. The target itself is never filtered, even if it was seen before."""
    # bf16 scores would tie many items, and ties count against the target
    scores = at_least_float32(model.score_next(batch.input_ids))  # (B, I)
    return pessimistic_ranks(scores, batch.target_cols, (batch.seen_rows, batch.seen_cols))


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
        self._filter_seen = filter_seen
        self.num_cases = len(cases.targets)
        if not self.num_cases:  # the metrics would be means over nothing
            raise AwrsrError(
                "nothing to evaluate: no case has a target (leave-one-out gives a user a test case "
                "only from 3 interactions)"
            )
        self.batches = build_eval_batches(cases, max_len, batch_size, filter_seen)
        self._restore = torch.from_numpy(np.argsort(eval_order(cases)))  # batch order -> case order

    @property
    def filter_seen(self) -> bool:
        """Whether seen items are scored -inf: read-only, as the batches were built with it."""
        return self._filter_seen

    def __iter__(self) -> Iterator[EvalBatch]:
        return iter(self.batches)

    def __len__(self) -> int:
        return len(self.batches)

    @torch.no_grad()
    def ranks(self, model: NextItemScorer, device: torch.device | str = "cpu") -> Tensor:
        """Rank (M,) of each case's target, in the cases' order."""
        shared = getattr(model, "shared_scores", None)
        if callable(shared):  # one score vector for every user: a sorted search, not a (users x items) count
            scores = at_least_float32(shared()).to(device)
            refuse_nan(scores)
            sorted_scores = scores.sort().values
            ranks = [
                pessimistic_ranks_of_shared_scores(scores, sorted_scores, b.target_cols, (b.seen_rows, b.seen_cols))
                for b in (batch.to(device) for batch in self.batches)
            ]
            return torch.cat(ranks).cpu()[self._restore]
        was_training = getattr(model, "training", False)
        if hasattr(model, "eval"):
            model.eval()
        try:
            # One transfer back at the end: a .cpu() per batch would wait for each batch on a GPU.
            return torch.cat([rank_batch(model, b.to(device)) for b in self.batches]).cpu()[self._restore]
        finally:
            if was_training:
                model.train()

    def evaluate(self, model: NextItemScorer, device: torch.device | str = "cpu") -> dict[str, float]:
        return ranking_metrics(self.ranks(model, device), self.ks)
