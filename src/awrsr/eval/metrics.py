"""Ranking metrics from the rank of each user's single held-out item."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor


RANK_BLOCK_SCORES = 2**22  # scores compared per pass: its temporaries (4 MB of bools, 16 MB of int32) stay reusable


def pessimistic_ranks(scores: Tensor, targets: Tensor, excluded: tuple[Tensor, Tensor] | None = None) -> Tensor:
    """1-based rank of each target column: 1 + #{other candidate items with score >= the target's}.

    Ties count against the target, so a constant-score model ranks every target last and can never
    look better than chance. ``excluded`` = (rows, cols), each pair at most once and never a row's
    target, removes items from the candidates (seen items): they are counted and subtracted, which
    leaves ``scores`` untouched and costs no copy of it.

    >>> scores = torch.tensor([[0.1, 0.5, 0.5, 0.9]])
    >>> pessimistic_ranks(scores, torch.tensor([1])), pessimistic_ranks(scores, torch.tensor([1]), (torch.tensor([0]), torch.tensor([3])))
    (tensor([3]), tensor([2]))
    """
    refuse_nan(scores)
    target_scores = scores.gather(1, targets[:, None])  # (B, 1)
    # Counts the target itself, hence 1-based. A few column blocks at a time: the comparison and
    # its int32 sum are temporaries the size of the block, which the allocator reuses; over a
    # large catalogue, whole-matrix ones were fresh memory each batch, and the kernel's zeroing of
    # it took most of the time (3-4x slower at 100k items; one block up to 16k items at 256 rows).
    block = max(1, RANK_BLOCK_SCORES // max(len(scores), 1))
    ranks = torch.zeros(len(scores), dtype=torch.int32, device=scores.device)
    for start in range(0, scores.shape[1], block):
        ranks += (scores[:, start:start + block] >= target_scores).sum(dim=1, dtype=torch.int32)
    ranks = ranks.long()
    if excluded is not None and excluded[0].numel():
        rows, cols = excluded
        uncount_excluded_(ranks, rows, scores[rows, cols], target_scores[rows, 0])
    return ranks


def pessimistic_ranks_of_shared_scores(
    scores: Tensor, sorted_scores: Tensor, targets: Tensor, excluded: tuple[Tensor, Tensor] | None = None,
) -> Tensor:
    """``pessimistic_ranks`` for one score vector (I,) shared by every row (a popularity baseline),
    from its sorted copy: the items scoring at least the target's, found by a binary search, less
    the excluded ones among them. O(B log I + S) instead of O(B I); the caller checks for NaN once.

    >>> scores = torch.tensor([0.1, 0.5, 0.5, 0.9])
    >>> pessimistic_ranks_of_shared_scores(scores, scores.sort().values, torch.tensor([1, 1]), (torch.tensor([1]), torch.tensor([3])))
    tensor([3, 2])
    """
    target_scores = scores[targets]  # (B,)
    # items >= the target's score, the target included: its 1-based rank
    ranks = len(scores) - torch.searchsorted(sorted_scores, target_scores, side="left")
    if excluded is not None and excluded[0].numel():
        rows, cols = excluded
        uncount_excluded_(ranks, rows, scores[cols], target_scores[rows])
    return ranks


def refuse_nan(scores: Tensor) -> None:
    """A NaN compares false and would silently improve ranks. amax passes NaN on: one reduction,
    not a pass that writes a bool matrix."""
    if scores.amax().isnan():
        raise FloatingPointError("the model produced NaN scores")


def uncount_excluded_(ranks: Tensor, rows: Tensor, excluded_scores: Tensor, row_target_scores: Tensor) -> None:
    """Subtract, in place, the excluded items (each pair once, never a row's target) that scored
    at least their row's target: they were counted but are no candidates."""
    beats = excluded_scores >= row_target_scores  # (S,)
    ranks.index_add_(0, rows, beats.long(), alpha=-1)  # no boolean indexing: no host sync on a GPU


def per_user_metric(ranks: Tensor | Sequence[float], metric: str) -> Tensor:
    """Each user's hr@k, ndcg@k or mrr (float64) from the 1-based rank of their held-out item: the
    one definition that every average, bucket and curve of these metrics is taken over.

    >>> per_user_metric([1, 3, 20], "ndcg@5").tolist()
    [1.0, 0.5, 0.0]
    """
    # a copy of other input: torch cannot view a reversed, read-only or big-endian numpy array
    ranks = ranks.double() if isinstance(ranks, Tensor) else torch.from_numpy(np.array(ranks, dtype=np.float64))
    if metric == "mrr":
        return 1.0 / ranks
    name, _, k = metric.partition("@")
    if name not in ("hr", "ndcg") or not k.isdigit():
        raise ValueError(f"metric must be hr@k, ndcg@k or mrr, got {metric!r}")
    hit = ranks <= int(k)
    return hit.double() if name == "hr" else torch.where(hit, 1.0 / torch.log2(ranks + 1.0), 0.0)


def ranking_metrics(ranks: Tensor, ks: list[int]) -> dict[str, float]:
    """HR@k (= Recall@k with one target), NDCG@k for each k, and MRR, averaged over users.

    >>> ranking_metrics(torch.tensor([1, 3]), [1, 5])["ndcg@5"]
    0.75
    """
    # k by k (hr@1, ndcg@1, hr@5, ...): the order metrics.json has always kept
    names = [f"{name}@{k}" for k in ks for name in ("hr", "ndcg")] + ["mrr"]
    return {name: per_user_metric(ranks, name).mean().item() for name in names}
