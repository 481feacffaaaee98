"""Softmax cross-entropy over a large catalogue without materialising all the logits.

The naive loss builds an (N, I) logit matrix (300 MB for one ML-1M batch), writes and reads it
several times, and frees it every step; on a CPU that memory traffic, not the arithmetic,
dominates the training step. Here the logits are computed in row chunks that stay in cache:
the forward pass keeps only each row's log-sum-exp, and the backward pass recomputes a chunk's
logits to form its softmax gradient.
"""

from __future__ import annotations

import torch
from torch import Tensor


def _chunk_rows(num_items: int, target_elements: int = 1 << 20) -> int:
    # About a million logits (4 MB in fp32) per chunk.
    return max(64, target_elements // max(num_items, 1))


class _LinearCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, hidden: Tensor, weight: Tensor, targets: Tensor, chunk: int) -> Tensor:
        # hidden (N, d), weight (I, d), targets (N,) in [0, I)
        n = hidden.shape[0]
        acc = torch.promote_types(hidden.dtype, torch.float32)  # at least fp32 for the softmax
        lse = torch.empty(n, dtype=acc, device=hidden.device)
        for start in range(0, n, chunk):
            logits = hidden[start:start + chunk] @ weight.T  # (c, I)
            lse[start:start + chunk] = torch.logsumexp(logits.to(acc), dim=1)
        target_logits = (hidden * weight[targets]).sum(dim=1).to(acc)  # (N,)
        ctx.save_for_backward(hidden, weight, targets, lse)
        ctx.chunk = chunk
        # Backward runs outside the autocast region; remember it so the recomputed logits and the
        # gradient products use the same precision as the forward pass (bf16-mixed training).
        device = hidden.device.type
        ctx.autocast = (device, torch.is_autocast_enabled(device), torch.get_autocast_dtype(device))
        return (lse - target_logits).mean()

    @staticmethod
    def backward(ctx, grad_output: Tensor):
        device, enabled, dtype = ctx.autocast
        with torch.autocast(device, dtype=dtype, enabled=enabled):
            return _LinearCrossEntropy._backward(ctx, grad_output)

    @staticmethod
    def _backward(ctx, grad_output: Tensor):
        hidden, weight, targets, lse = ctx.saved_tensors
        n, chunk = hidden.shape[0], ctx.chunk
        scale = grad_output / n
        grad_hidden = torch.empty_like(hidden) if ctx.needs_input_grad[0] else None
        grad_weight = torch.zeros_like(weight) if ctx.needs_input_grad[1] else None
        for start in range(0, n, chunk):
            h = hidden[start:start + chunk]
            probs = (h @ weight.T).to(lse.dtype).sub_(lse[start:start + chunk, None]).exp_()  # softmax (c, I)
            rows = torch.arange(h.shape[0], device=h.device)
            probs[rows, targets[start:start + chunk]] -= 1.0
            probs.mul_(scale)
            if grad_hidden is not None:
                grad_hidden[start:start + chunk] = probs @ weight
            if grad_weight is not None:
                grad_weight += probs.T @ h
        return grad_hidden, grad_weight, None, None


def linear_cross_entropy(hidden: Tensor, weight: Tensor, targets: Tensor, chunk: int | None = None) -> Tensor:
    """``F.cross_entropy(hidden @ weight.T, targets)`` (mean), computed chunk by chunk.

    >>> h, w, t = torch.randn(5, 3), torch.randn(7, 3), torch.tensor([0, 6, 2, 2, 1])
    >>> torch.allclose(linear_cross_entropy(h, w, t), torch.nn.functional.cross_entropy(h @ w.T, t))
    True
    """
    if hidden.shape[0] == 0:
        return hidden.sum() * 0.0  # no real position in the batch
    return _LinearCrossEntropy.apply(hidden, weight, targets, chunk or _chunk_rows(weight.shape[0]))
