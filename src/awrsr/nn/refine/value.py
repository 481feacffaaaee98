"""M_value (AWRSR eq. 3): the refined weights are themselves values, weighted by an attention
over attention rows.

The paper's matrix form B = W_RV A softmax((W_RK A)^T W_RQ A) mixes all rows of A, so in a causal
model a position would see later items. The default ``causal`` form keeps the idea and the
causality: B = masked-softmax((A W_RQ)(A W_RK)^T / sqrt(d_h)) (A W_RV). The ``literal`` form is
the paper's equation and is allowed only on bidirectional backbones.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from torch import Tensor

from awrsr.errors import FieldValueError
from awrsr.nn.masks import AttentionMask, masked_softmax
from awrsr.nn.refine.base import REFINEMENTS, Refinement
from awrsr.nn.refine.matrices import MatrixRefinement, build_matrix_refinement

if TYPE_CHECKING:  # hints only: the config's package imports the parts
    from awrsr.models.config import ModelConfig


class ValueRefinement(MatrixRefinement):
    matrix_names = ("query", "key", "value")

    def __init__(self, *, form: str = "causal", **kwargs) -> None:
        super().__init__(**kwargs)
        if form not in ("causal", "literal"):
            raise FieldValueError("model.refine_value_form", f"must be 'causal' or 'literal', got {form!r}")
        self.form = form
        self.needs_bidirectional = form == "literal"
        # The literal form's inner softmax runs over every slot, padding included, so it is only
        # defined on the full window.
        self.window_invariant = form == "causal"

    def forward(self, weights: Tensor, mask: AttentionMask) -> Tensor:
        if self.form == "causal":
            inner = masked_softmax(self.bilinear(weights, self.query, self.key), mask)  # (B, h, n, n)
            logits = inner @ self.project(weights, self.value, columns_are_keys=True)  # (B, h, n, n)
        else:
            # The paper's eq. 3 as printed: B = W_RV A softmax((W_RK A)^T W_RQ A), the matrices
            # multiplying A from the left (mixing its rows, i.e. query positions).
            if self.check_window(weights) != self.max_len:
                raise ValueError(f"the literal M_value needs windows of exactly max_len={self.max_len}")
            inner = ((self.key @ weights).transpose(-2, -1) @ (self.query @ weights)).softmax(dim=-1)
            logits = (self.value @ weights) @ inner
        return masked_softmax(logits, mask)


@REFINEMENTS.register("value")
def build_value_refinement(cfg: ModelConfig, block_index: int) -> Refinement:
    return build_matrix_refinement(ValueRefinement, cfg, block_index, form=cfg.refine_value_form)
