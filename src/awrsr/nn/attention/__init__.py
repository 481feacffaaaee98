"""Attention mechanisms, one file each; importing this package registers them all."""

from awrsr.nn.attention import calibrated, dot, fixed, positional, wasserstein  # noqa: F401  (each registers its name)
from awrsr.nn.attention.base import ATTENTIONS, AttentionWeights

__all__ = ["ATTENTIONS", "AttentionWeights"]
