"""2-Wasserstein distances between diagonal Gaussians, as Euclidean distances.

For N(mu_a, diag(s_a)) and N(mu_b, diag(s_b)):
    W2^2 = ||mu_a - mu_b||^2 + ||sqrt(s_a) - sqrt(s_b)||^2 = ||z_a - z_b||^2,  z = [mu, sqrt(s)],
so every pairwise distance matrix is one matrix product plus squared norms.
"""

from __future__ import annotations

import torch
from torch import Tensor

from awrsr.nn.precision import at_least_float32


def positive(x: Tensor) -> Tensor:
    """ELU(x) + 1 > 0, STOSA's map to covariances, computed as exp(x) for x <= 0: ELU's
    e^x - 1 plus 1 cancels, so in bfloat16 covariances below 2^-8 came out in steps of 2^-8 or as
    0 (and below about 1e-7 in float32)."""
    return _Positive.apply(x)


class _Positive(torch.autograd.Function):
    """exp(min(x, 0)) + max(x, 0): 1 + x for x > 0 and exp(x) for x <= 0, exactly the values (and
    gradients) of ``where(x > 0, x + 1, exp(min(x, 0)))``, in two passes where that took five, and
    a backward of one product, min(y, 1) being the derivative. It ran on every covariance of every
    STOSA block and was a quarter of a STOSA training step (docs/benchmarks.md, session 49)."""

    @staticmethod
    def forward(ctx, x: Tensor) -> Tensor:
        y = torch.exp(x.clamp(max=0.0)).add_(x.clamp(min=0.0))
        ctx.save_for_backward(y)
        return y

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad: Tensor) -> Tensor:
        (y,) = ctx.saved_tensors
        return grad * y.clamp(max=1.0)


def gaussian_vectors(mean: Tensor, cov: Tensor) -> Tensor:
    """z = [mu, sqrt(diag cov)] (..., 2d) for means and positive diagonal covariances (..., d)."""
    return torch.cat([mean, cov.clamp_min(1e-12).sqrt()], dim=-1)


def squared_w2(mean_a: Tensor, cov_a: Tensor, mean_b: Tensor, cov_b: Tensor) -> Tensor:
    """Elementwise W2^2 between matching Gaussians (..., d) -> (...), by the definition.

    >>> float(squared_w2(torch.zeros(2), torch.ones(2), torch.ones(2), 4 * torch.ones(2)))
    4.0
    """
    return ((mean_a - mean_b) ** 2).sum(-1) + ((cov_a.sqrt() - cov_b.sqrt()) ** 2).sum(-1)


def pairwise_squared_distances(a: Tensor, b: Tensor) -> Tensor:
    """||a_i - b_j||^2 for a (..., m, k) and b (..., p, k) -> (..., m, p), via one matmul.

    Always in at least float32, autocast or not: the expansion subtracts nearly equal large
    numbers, and in bfloat16 the small differences that rank items would be lost.
    """
    with torch.autocast(a.device.type, enabled=False):
        a, b = at_least_float32(a), at_least_float32(b)
        norms = (a * a).sum(-1, keepdim=True) + (b * b).sum(-1).unsqueeze(-2)  # (..., m, p)
        # The product accumulates into the norms (one pass over the (m, p) result instead of three).
        if a.dim() == 2 and b.dim() == 2:
            return torch.addmm(norms, a, b.T, alpha=-2.0)
        if a.shape[:-2] == b.shape[:-2]:
            (m, k), p = a.shape[-2:], b.shape[-2]
            products = torch.baddbmm(
                norms.reshape(-1, m, p), a.reshape(-1, m, k), b.reshape(-1, p, k).transpose(1, 2), alpha=-2.0
            )
            return products.view(norms.shape)
        return norms - 2 * a @ b.transpose(-2, -1)  # batch dimensions that broadcast


def pairwise_distances(a: Tensor, b: Tensor) -> Tensor:
    """||a_i - b_j|| for a (..., m, k) and b (..., p, k) -> (..., m, p), from the differences.

    Not the square root of ``pairwise_squared_distances``: that expansion's rounding (about 1e-5
    of the norms in float32) is small beside a squared distance but not beside a distance near 0,
    where a vector's distance to itself came out as 0.01. At least float32, autocast or not; zero
    distances get a zero gradient.
    """
    with torch.autocast(a.device.type, enabled=False):
        return torch.cdist(at_least_float32(a), at_least_float32(b), compute_mode="donot_use_mm_for_euclid_dist")
