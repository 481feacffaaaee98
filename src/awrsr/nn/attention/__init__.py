"""Attention mechanisms, one file each; importing this package registers them all."""

from awrsr.nn.attention import dot  # noqa: F401  (registers "dot")
from awrsr.nn.attention.base import ATTENTIONS, AttentionWeights

__all__ = ["ATTENTIONS", "AttentionWeights"]
