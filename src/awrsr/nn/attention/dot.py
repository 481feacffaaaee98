"""Scaled dot-product multi-head self-attention (SASRec, BERT4Rec)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch.nn.functional as F
from torch import Tensor, nn

from awrsr.nn.attention.base import ATTENTIONS, AttentionWeights, head_size
from awrsr.nn.dropout import dropout
from awrsr.nn.masks import AttentionMask, masked_softmax
from awrsr.nn.refine.base import Refinement

if TYPE_CHECKING:  # hints only: the config's package imports the parts
    from awrsr.models.config import ModelConfig


class DotProductAttention(nn.Module):
    """softmax(Q K^T / sqrt(d_h)) V per head, with an optional refinement of the weights.

    Two paths compute the same outputs: a fused one (``F.scaled_dot_product_attention``) used when
    the weights are neither refined nor requested (and, on CPU, not dropped out), and an explicit
    one that materialises them.
    """

    # Nothing here is indexed by slot (the calibrated subclass uses slot differences only).
    window_invariant = True
    # It reads model.fused_attention (run_config asks the part: a mechanism that can take a fused
    # kernel says so, and the option is noted as having no effect on the others).
    reads_fused_attention = True
    # A refinement may act on the scaled logits, the paper's A (model.refine_input: logits).
    refines_logits = True

    def __init__(
        self, *, hidden_size: int, num_heads: int, attn_dropout: float, refinement: Refinement,
        fused: bool = True,
    ) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.head_size = head_size(hidden_size, num_heads)
        self.qkv = nn.Linear(hidden_size, 3 * hidden_size)
        self.output = nn.Linear(hidden_size, hidden_size)
        self.attn_dropout = attn_dropout
        self.refinement = refinement
        self.fused = fused

    @classmethod
    def from_config(cls, cfg: ModelConfig, refinement: Refinement, **extra):
        """Built from a model config's sizes and options (subclasses add their own ``extra``)."""
        return cls(
            hidden_size=cfg.hidden_size, num_heads=cfg.num_heads, attn_dropout=cfg.effective_attn_dropout,
            refinement=refinement, fused=cfg.fused_attention, **extra,
        )

    def forward(
        self, x: Tensor, mask: AttentionMask, need_weights: bool = False
    ) -> tuple[Tensor, AttentionWeights | None]:
        B, n, d = x.shape
        qkv = self.qkv(x).view(B, n, 3, self.num_heads, self.head_size)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)  # each (B, h, n, d_h)
        p_drop = self.attn_dropout if self.training else 0.0

        weights = None
        # The fused kernel draws its dropout mask with the slow CPU sampler (see nn/dropout.py), so
        # on CPU it is taken only when no mask is needed.
        fusable = p_drop == 0.0 or q.device.type != "cpu"
        if self.fused and fusable and self.refinement.is_identity and not need_weights:
            out = F.scaled_dot_product_attention(
                q, k, v, attn_mask=mask.fused_bias(q.dtype), dropout_p=p_drop
            )  # (B, h, n, d_h)
        else:
            logits = (q / math.sqrt(self.head_size)) @ k.transpose(-2, -1)  # scaled on (n, d_h), not (n, n)
            # Padded queries' rows are read by a refinement or by whoever asked for the weights;
            # else only by the values' product, whose rows the block zeroes (3.9% of a CPU SASRec
            # step with attention dropout, which always comes here; docs/benchmarks.md, session 49)
            read = need_weights or not self.refinement.is_identity
            # a refinement on the logits does not read the weights: formed only when asked for
            formed = need_weights or not self.refinement.reads_logits
            base = masked_softmax(logits, mask, zero_padded_rows=read) if formed else None
            refined = self.refinement.refine(base, logits, mask)
            out = dropout(refined, p_drop) @ v  # (B, h, n, d_h)
            if need_weights:
                weights = AttentionWeights(base=base, refined=refined)
        out = out.transpose(1, 2).reshape(B, n, d)
        return self.output(out), weights


@ATTENTIONS.register("dot")
def build_dot_attention(cfg: ModelConfig, block_index: int, refinement: Refinement) -> DotProductAttention:
    return DotProductAttention.from_config(cfg, refinement)
