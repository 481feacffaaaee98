"""Attention-weight refinements, one file each; importing this package registers them all."""

from awrsr.nn.refine import add, none, simp, stoc, value  # noqa: F401  (each registers its name)
from awrsr.nn.refine.base import REFINEMENTS, Refinement

__all__ = ["REFINEMENTS", "Refinement"]
