"""The trainable n x n matrices the AWRSR refinements multiply attention weights with."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch
from torch import Tensor, nn

from awrsr.errors import FieldValueError
from awrsr.nn.refine.base import Refinement

if TYPE_CHECKING:  # hints only: the config's package imports the parts
    from awrsr.models.config import ModelConfig


class MatrixRefinement(Refinement):
    """Base of the refinements that map A (B, h, n, n) through n x n matrices.

    One set of matrices per layer, shared by the heads (``per_head=False``, the default) or one per
    head; each initialised to identity + N(0, init_std). Subclasses name their matrices.
    """

    matrix_names: tuple[str, ...] = ()

    def __init__(
        self, *, max_len: int, num_heads: int, head_size: int, per_head: bool = False,
        scale: str = "head", init_std: float = 0.02,
    ) -> None:
        super().__init__()
        if scale not in ("head", "length"):
            raise FieldValueError("model.refine_scale", f"must be 'head' or 'length', got {scale!r}")
        self.max_len = max_len
        copies = num_heads if per_head else 1
        # 1/sqrt(d_h) as the paper writes (its d is the head width); 1/sqrt(n) as an option.
        self.scale = 1.0 / math.sqrt(head_size if scale == "head" else max_len)
        eye = torch.eye(max_len).expand(copies, max_len, max_len)
        for name in self.matrix_names:
            self.register_parameter(name, nn.Parameter(eye + init_std * torch.randn(copies, max_len, max_len)))

    # A window of the last n slots: A's rows and columns for the dropped (padding) slots are zero,
    # so only the matrices' rows for the last n slots can meet A, whose key columns they multiply.
    window_invariant = True

    def bilinear(self, weights: Tensor, left: Tensor, right: Tensor) -> Tensor:
        """(A L)(A R)^T * scale, computed as A (L R^T) A^T: the n x n product L R^T is formed once,
        so the batch pays two n^3 products instead of three."""
        n = self.check_window(weights)
        inner = left[..., -n:, :] @ right[..., -n:, :].transpose(-2, -1)  # (copies, n, n)
        return (weights @ inner) @ weights.transpose(-2, -1) * self.scale

    def project(self, weights: Tensor, matrix: Tensor, columns_are_keys: bool = False) -> Tensor:
        """A W for A (B, h, n, n) and W (1 or h, max_len, max_len): each query row mapped through W.
        The result has one column per column of W (features), or, when ``columns_are_keys``, one
        per key slot of the window."""
        n = self.check_window(weights)
        rows = matrix[..., -n:, :]
        return weights @ (rows[..., -n:] if columns_are_keys else rows)

    def check_window(self, weights: Tensor) -> int:
        n = weights.shape[-1]
        if n > self.max_len:
            raise ValueError(f"refinement got a window of {n} slots, more than max_len={self.max_len}")
        return n


def build_matrix_refinement(cls: type[MatrixRefinement], cfg: ModelConfig, block_index: int, **extra) -> Refinement:
    """Build ``cls`` for block ``block_index`` with the shared matrix options (``model.refine_blocks``
    is applied by the backbone, to every refinement alike)."""
    return cls(
        max_len=cfg.max_len, num_heads=cfg.num_heads, head_size=cfg.hidden_size // cfg.num_heads,
        per_head=cfg.refine_per_head, scale=cfg.refine_scale, init_std=cfg.refine_init_std, **extra,
    )
