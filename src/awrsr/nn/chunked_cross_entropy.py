"""Softmax cross-entropy over a large catalogue without materialising all the logits.

The naive loss builds an (N, I) logit matrix (300 MB for one ML-1M batch), writes and reads it
several times, and frees it every step; on a CPU that memory traffic, not the arithmetic,
dominates the training step. Here the logits are computed in row chunks that stay in cache, and
each chunk's softmax gradient is formed right away, in the forward pass: the backward pass only
scales the stored gradients. Computing them later would need the logits again, one more
(N x d x I) product and one more exp per logit (the chunks used to be recomputed there).
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable


def _chunk_rows(num_items: int, device: torch.device = torch.device("cpu")) -> int:
    """Rows per chunk. On a CPU about a million logits (4 MB in fp32), which stay in cache. On a
    GPU the cost is the number of kernels, about ten per chunk, not the memory traffic: about 32M
    logits (128 MB), so a Beauty batch is one chunk and an ML-1M batch two."""
    target_elements = 1 << 20 if device.type == "cpu" else 1 << 25
    return max(64, target_elements // max(num_items, 1))


def _chunked_loss_sum(
    hidden: Tensor, weight: Tensor, targets: Tensor, chunk: int, want_hidden: bool, want_weight: bool
) -> tuple[Tensor, Tensor | None, Tensor | None]:
    """Sum over rows of log-sum-exp minus the target logit, and the gradients of that sum that are
    wanted, formed chunk by chunk. Runs under the caller's autocast, so bf16-mixed training gets
    bf16 products here too; the softmax is at least float32."""
    acc = torch.promote_types(hidden.dtype, torch.float32)
    grad_hidden = torch.empty_like(hidden) if want_hidden else None
    grad_weight = torch.zeros_like(weight) if want_weight else None
    total = torch.zeros((), dtype=acc, device=hidden.device)
    for start in range(0, hidden.shape[0], chunk):
        h, t = hidden[start:start + chunk], targets[start:start + chunk]
        rows = torch.arange(h.shape[0], device=h.device)
        logits = (h @ weight.T).to(acc)  # (c, I)
        target_logits = logits[rows, t]  # a copy: taken before the in-place softmax below
        top = logits.amax(dim=1, keepdim=True)
        probs = logits.sub_(top).exp_()  # unnormalised softmax, in place
        sums = probs.sum(dim=1, keepdim=True)
        total += (top + sums.log()).sum() - target_logits.sum()  # sum of log-sum-exp - target logit
        if not (want_hidden or want_weight):
            continue
        probs.div_(sums)
        probs[rows, t] -= 1.0  # d(loss row)/d(logits) = softmax - one-hot
        if grad_hidden is not None:
            grad_hidden[start:start + chunk] = probs @ weight
        if grad_weight is not None:
            grad_weight += probs.T @ h
    return total, grad_hidden, grad_weight


class _LinearCrossEntropy(torch.autograd.Function):
    """Mean cross-entropy whose forward pass also returns (to autograd) the gradients of the sum."""

    @staticmethod
    def forward(ctx, hidden: Tensor, weight: Tensor, targets: Tensor, chunk: int) -> Tensor:
        # hidden (N, d), weight (I, d), targets (N,) in [0, I)
        total, grad_hidden, grad_weight = _chunked_loss_sum(hidden, weight, targets, chunk, *ctx.needs_input_grad[:2])
        ctx.save_for_backward(grad_hidden, grad_weight)
        ctx.n = hidden.shape[0]
        return total / ctx.n

    @staticmethod
    @once_differentiable  # the stored gradients are constants: no second derivative
    def backward(ctx, grad_output: Tensor):
        grad_hidden, grad_weight = ctx.saved_tensors
        scale = grad_output / ctx.n
        return (
            None if grad_hidden is None else grad_hidden * scale.to(grad_hidden.dtype),
            None if grad_weight is None else grad_weight * scale.to(grad_weight.dtype),
            None,
            None,
        )


def linear_cross_entropy(hidden: Tensor, weight: Tensor, targets: Tensor, chunk: int | None = None) -> Tensor:
    """``F.cross_entropy(hidden @ weight.T, targets)`` (mean), computed chunk by chunk.

    >>> h, w, t = torch.randn(5, 3), torch.randn(7, 3), torch.tensor([0, 6, 2, 2, 1])
    >>> torch.allclose(linear_cross_entropy(h, w, t), torch.nn.functional.cross_entropy(h @ w.T, t))
    True
    """
    if hidden.shape[0] == 0:
        return hidden.sum() * 0.0  # no real position in the batch
    chunk = chunk or _chunk_rows(weight.shape[0], hidden.device)
    if not (torch.is_grad_enabled() and (hidden.requires_grad or weight.requires_grad)):
        # No gradient wanted (inside forward, autograd would still report the inputs' flags).
        return _chunked_loss_sum(hidden, weight, targets, chunk, False, False)[0] / hidden.shape[0]
    return _LinearCrossEntropy.apply(hidden, weight, targets, chunk)
