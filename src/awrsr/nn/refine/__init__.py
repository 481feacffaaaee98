"""Attention-weight refinements, one file each; importing this package registers them all."""

from awrsr.nn.refine import none  # noqa: F401  (registers "none")
from awrsr.nn.refine.base import REFINEMENTS, Refinement

__all__ = ["REFINEMENTS", "Refinement"]
