"""Next-item losses, computed on real (non-padding) positions only.

Every loss takes the model (for its scoring functions), the hidden states (B, n, d) and the
targets (B, n) with 0 at padded positions, plus the shared options (``num_negatives``,
``pvn_weight``; each loss ignores the ones it does not use), and returns a scalar.
"""

from __future__ import annotations

from typing import Callable, Protocol

import torch
import torch.nn.functional as F
from torch import Tensor

from awrsr.nn.chunked_cross_entropy import linear_cross_entropy
from awrsr.nn.precision import at_least_float32
from awrsr.registry import Registry


class ScoresItems(Protocol):
    num_items: int

    def score_all(self, hidden: Tensor) -> Tensor: ...  # (N, d) -> (N, num_items)

    def score_items(self, hidden: Tensor, items: Tensor) -> Tensor: ...  # (N, d), (N, m) -> (N, m)


Loss = Callable[..., Tensor]
LOSSES: Registry[Loss] = Registry("loss")


def _real_positions(hidden: Tensor, targets: Tensor) -> tuple[Tensor, Tensor]:
    real = targets > 0
    return hidden[real], targets[real]  # (N, d), (N,)


def _nothing_to_learn(hidden: Tensor) -> Tensor:
    """The loss of a batch without a real position: 0, still part of the graph so that backward
    runs, rather than the NaN of a mean over no rows (as the chunked cross-entropy does). Callers
    test the row count their boolean indexing already knows: no second pass, no extra sync."""
    return hidden.sum() * 0.0


def _uniform_negatives(num_items: int, shape: tuple[int, ...], device: torch.device) -> Tensor:
    # Uniform over real items 1..I. A negative may equal the positive with probability 1/I;
    # the losses below mask such collisions where they would distort the objective.
    return torch.randint(1, num_items + 1, shape, device=device)


def _sampled_scores(model: ScoresItems, hidden: Tensor, targets: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """Scores (N, 1 + k) of each real position's positive (column 0) and k uniform negatives, and
    a mask (N, 1 + k) of the negatives that collide with the positive."""
    h, pos = _real_positions(hidden, targets)
    neg = _uniform_negatives(model.num_items, (pos.shape[0], k), h.device)
    scores = model.score_items(h, torch.cat([pos[:, None], neg], dim=1))
    collision = torch.cat([torch.zeros_like(pos[:, None], dtype=torch.bool), neg == pos[:, None]], dim=1)
    return scores, collision


@LOSSES.register("bce")
def binary_cross_entropy(
    model: ScoresItems, hidden: Tensor, targets: Tensor, num_negatives: int = 1, **_: float
) -> Tensor:
    """SASRec's loss: -log sigmoid(r_pos) - sum_j log(1 - sigmoid(r_neg_j)), k uniform negatives."""
    scores, collision = _sampled_scores(model, hidden, targets, num_negatives)  # (N, 1 + k)
    if not len(scores):
        return _nothing_to_learn(hidden)
    pos_loss = F.softplus(-scores[:, 0])  # = -log sigmoid(r_pos)
    neg_loss = F.softplus(scores[:, 1:]).masked_fill(collision[:, 1:], 0.0).sum(dim=1)
    return (pos_loss + neg_loss).mean()


@LOSSES.register("ce")
def full_cross_entropy(
    model: ScoresItems, hidden: Tensor, targets: Tensor, num_negatives: int = 0, **_: float
) -> Tensor:
    """Softmax cross-entropy over every item (the "SASRec+" setting).

    A model whose scores are a matrix product up to a constant per row (which softmax ignores)
    exposes ``linear_scores(hidden)`` -> (queries (N, e), items (I, e)), and the loss is then
    computed in chunks without materialising every logit (SASRec's dot products; STOSA's negative
    squared distances, in float32 under autocast: ``scores_in_float32``); other models give their
    full ``score_all``.
    """
    h, pos = _real_positions(hidden, targets)
    if not len(h):
        return _nothing_to_learn(hidden)
    linear_scores = getattr(model, "linear_scores", None)
    if linear_scores is not None:
        queries, items = linear_scores(h)
        if getattr(model, "scores_in_float32", False):  # distances: differences of large norms, lost in bf16
            with torch.autocast(h.device.type, enabled=False):
                return linear_cross_entropy(at_least_float32(queries), at_least_float32(items), pos - 1)
        return linear_cross_entropy(queries, items, pos - 1)
    return F.cross_entropy(model.score_all(h), pos - 1)  # score_all column j is item j + 1


@LOSSES.register("sampled_softmax")
def sampled_softmax(
    model: ScoresItems, hidden: Tensor, targets: Tensor, num_negatives: int = 100, **_: float
) -> Tensor:
    """Softmax over the positive and k uniform negatives per position (collisions masked)."""
    scores, collision = _sampled_scores(model, hidden, targets, num_negatives)  # (N, 1 + k)
    if not len(scores):
        return _nothing_to_learn(hidden)
    scores = scores.masked_fill(collision, float("-inf"))
    return F.cross_entropy(scores, torch.zeros(scores.shape[0], dtype=torch.long, device=scores.device))


@LOSSES.register("stosa")
def stosa_loss(
    model: ScoresItems, hidden: Tensor, targets: Tensor, num_negatives: int = 1, pvn_weight: float = 0.0,
    **_: float,
) -> Tensor:
    """STOSA's loss: BPR on Wasserstein distances, -log sigmoid(d(s, neg) - d(s, pos)), plus
    ``pvn_weight`` times the positive-vs-negative hinge max(0, d(s, pos) - d(pos, neg)), which asks
    the sequence to be closer to its positive item than that item is to the negative.

    Needs a model whose scores are negative distances and that exposes ``item_vectors`` (STOSA).
    """
    h, pos = _real_positions(hidden, targets)
    if not len(h):
        return _nothing_to_learn(hidden)
    neg = _uniform_negatives(model.num_items, (pos.shape[0], num_negatives), h.device)
    distances = -model.score_items(h, torch.cat([pos[:, None], neg], dim=1))  # (N, 1 + k)
    valid = neg != pos[:, None]
    bpr = (F.softplus(distances[:, :1] - distances[:, 1:]) * valid).sum(1)
    loss = bpr.mean()
    if pvn_weight:
        pos_vs_neg = ((model.item_vectors(pos)[:, None] - model.item_vectors(neg)) ** 2).sum(-1)  # (N, k)
        loss = loss + pvn_weight * ((distances[:, :1] - pos_vs_neg).clamp_min(0) * valid).sum(1).mean()
    return loss
