"""Attention masks and the masked softmax every attention path shares."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Callable, Hashable

import torch
from torch import Tensor


@dataclass
class AttentionMask:
    """Which key positions each query position may attend to, built once per forward pass.

    ``allowed`` is (B, 1, n, n) bool: True where query i may attend key j. Padded queries have
    all-False rows (for left-padded windows, which the models build); their outputs are zeroed by
    the block, so they never reach a real position. ``row_factor`` zeroes their weights.
    """

    allowed: Tensor  # (B, 1, n, n) bool
    real: Tensor  # (B, n) bool, True at real (non-padding) positions

    @classmethod
    def build(cls, input_ids: Tensor, causal: bool) -> "AttentionMask":
        """Padding mask (and the causal mask when ``causal``) for left-padded ``input_ids`` (B, n)."""
        real = input_ids != 0  # (B, n)
        if causal:
            # One pass over (B, 1, n, n): in a left-padded row a real key j <= i makes query i
            # real too, so real_i & real_j & (j <= i) is real_j & (j <= i). (Another padding
            # would give padded queries keys; row_factor, taken from ``real``, still zeroes them.)
            n = input_ids.shape[1]
            lower = torch.ones(n, n, dtype=torch.bool, device=input_ids.device).tril()
            return cls(allowed=real[:, None, None, :] & lower, real=real)
        return cls(allowed=real[:, None, :, None] & real[:, None, None, :], real=real)

    @cached_property
    def logit_bias(self) -> Tensor:
        """0 where allowed, the most negative float32 elsewhere (B, 1, n, n): masked_softmax's mask.
        An all-masked row gets 0 throughout: its finite logits then softmax to finite numbers that
        ``row_factor`` zeroes, where logits below about -2e31 plus the bias would overflow to an
        all -inf row, whose softmax is NaN (and NaN * 0 stays NaN)."""
        lowest = torch.tensor(torch.finfo(torch.float32).min, device=self.allowed.device)
        masked = torch.where(self.real_rows, lowest, 0.0)  # (.., n, 1): 0 on empty rows
        return torch.where(self.allowed, 0.0, masked)  # one pass over (B, 1, n, n), as without them

    @cached_property
    def real_rows(self) -> Tensor:
        """True for the rows of real queries (..., n, 1). A real query always has a key, itself,
        so these are the rows with an allowed key, found without a pass over ``allowed``."""
        return self.real.reshape(*self.allowed.shape[:-1], 1)

    @cached_property
    def row_factor(self) -> Tensor:
        """1.0 for the rows of real queries, 0.0 for padded ones (..., n, 1)."""
        return self.real_rows.float()

    @cached_property
    def allowed_to_real_queries(self) -> Tensor:
        """``allowed`` with every padded query's row empty on any padding (as it is on left-padded
        windows already), for code that reads the mask itself rather than through masked_softmax."""
        return self.allowed & self.real_rows

    @cached_property
    def for_fused_kernel(self) -> Tensor:
        """``allowed`` plus the diagonal, so no row is empty.

        Fused kernels return NaN for an all-masked row, and that NaN would reach real positions
        through 0 * NaN in the next layer. A padded query attending to itself is harmless: its
        output is zeroed by the block, and no real query attends to a padded key.
        """
        n = self.allowed.shape[-1]
        eye = torch.eye(n, dtype=torch.bool, device=self.allowed.device)
        return self.allowed | eye

    def cached(self, key: Hashable, build: Callable[[], Tensor]) -> Tensor:
        """``build()``, computed once per mask (so once per forward pass) for each ``key``: for
        tensors that depend on the mask alone and would otherwise be rebuilt in every block."""
        cache = self.__dict__.setdefault("_cache", {})
        if key not in cache:
            cache[key] = build()
        return cache[key]

    def fused_bias(self, dtype: torch.dtype) -> Tensor:
        """``for_fused_kernel`` as an additive float mask (0 or -inf) of ``dtype``: given a bool
        mask, the fused kernel would convert it again in every block."""
        return self.cached(("fused_bias", dtype), lambda: _additive(self.for_fused_kernel, float("-inf"), dtype))


def zero_masked(logits: Tensor, mask: AttentionMask) -> Tensor:
    """``logits`` (.., n, n) broadcast to the mask's batch, with every entry the mask forbids
    exactly 0: later and padded keys, and padded queries' whole rows.

    >>> mask = AttentionMask.build(torch.tensor([[0, 3, 4]]), causal=True)
    >>> zero_masked(torch.full((1, 1, 3, 3), 2.0), mask)[0, 0]
    tensor([[0., 0., 0.],
            [0., 2., 0.],
            [0., 2., 2.]])
    """
    return torch.where(mask.allowed_to_real_queries, logits, torch.zeros((), dtype=logits.dtype, device=logits.device))


def _additive(allowed: Tensor, masked: float, dtype: torch.dtype) -> Tensor:
    """0 where ``allowed``, ``masked`` elsewhere, in one pass (zeros then masked_fill_ took two)."""
    zero = torch.zeros((), dtype=dtype, device=allowed.device)
    return torch.where(allowed, zero, torch.full((), masked, dtype=dtype, device=allowed.device))


def masked_softmax(logits: Tensor, mask: AttentionMask | Tensor, zero_padded_rows: bool = True) -> Tensor:
    """Softmax over the last dim restricted to the allowed keys (an ``AttentionMask``, or a bool
    tensor of allowed entries); masked entries are exactly 0, and an all-masked row gives zeros
    instead of NaN. The logits must be finite, masked ones included (they are here: padded slots
    carry zero vectors), and come back in float32 at least.

    ``zero_padded_rows=False`` leaves an all-masked row uniform (finite), for a caller that lets
    nothing read it: the block zeroes a padded query's output, so its row reaches no real position
    and gets no gradient. Real rows are the same bit for bit, one (B, h, n, n) pass less each way.

    >>> masked_softmax(torch.zeros(1, 3), torch.tensor([[True, True, False]]))
    tensor([[0.5000, 0.5000, 0.0000]])
    """
    if not isinstance(mask, AttentionMask):
        mask = AttentionMask(allowed=mask, real=mask.any(-1))
    # Adding a very negative bias is exact for allowed keys (+0) and sends masked ones to exactly
    # 0 after the exp; bool-mask kernels (masked_fill, multiplying by a bool) are several times
    # slower than these float ones on CPU. An all-masked row comes out uniform here and is zeroed
    # by the row factor (where the caller reads it).
    weights = (logits + mask.logit_bias).softmax(dim=-1)
    return weights * mask.row_factor if zero_padded_rows else weights
