"""The fixed attention patterns of the FPARec ablation (Appendix B of
papers/parec-fparec-positional-attention.txt): weights that are not learned at all, row-normalised
over the allowed keys. For query i and key j <= i:

- average:     a_ij = 1                (every earlier item counts the same)
- linear:      a_ij = j                (linear annealing: recent items count more)
- exponential: a_ij = exp(j - i)       (exponential annealing)

Positions are counted along the user's own history by default (1 = the oldest item in the
max_len window, the first item when the whole history fits). The paper's j can also be read
as the slot of a right-aligned window of max_len slots (``positions="window"``, 1 = the oldest
slot, max_len = the newest item); the two differ on ``linear`` only, since for ``exponential``
only differences j - i matter and ``average`` ignores j. Both numberings are independent of left
padding (docs/neighbours.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Literal

import torch
from torch import Tensor

from awrsr.nn.attention.base import ATTENTIONS
from awrsr.nn.attention.positional import PositionWeightedValues
from awrsr.nn.masks import AttentionMask, masked_softmax
from awrsr.nn.refine.base import Refinement

if TYPE_CHECKING:  # hints only: the config's package imports the parts
    from awrsr.models.config import ModelConfig

# Pattern logits log(a_ij) from the history positions of queries (.., n, 1) and keys (.., 1, n).
PATTERNS: dict[str, Callable[[Tensor, Tensor], Tensor]] = {
    "average": lambda query, key: torch.zeros_like(query * key),
    "linear": lambda query, key: torch.log(key).expand_as(query * key),
    "exponential": lambda query, key: key - query,
}


class FixedPatternAttention(PositionWeightedValues):
    needs_causal = True  # the patterns are defined for keys j <= i only

    def __init__(
        self, *, pattern: str, positions: Literal["history", "window"] = "history", max_len: int | None = None, **kwargs
    ) -> None:
        super().__init__(**kwargs)
        if positions == "window" and max_len is None:
            raise ValueError("window positions need max_len")
        self.pattern = pattern
        self.positions = positions
        self.max_len = max_len

    def slot_positions(self, mask: AttentionMask) -> Tensor:
        """(B, n) 1-based position of each slot; padded slots get values that the mask hides anyway."""
        if self.positions == "history":  # along the user's own history: the oldest item in the window is 1
            return mask.real.cumsum(dim=1).clamp(min=1)
        n = mask.real.shape[1]  # a window of the last n of max_len slots (the backbone may trim padding)
        if n > self.max_len:
            raise ValueError(f"fixed pattern got a window of {n} slots, more than max_len={self.max_len}")
        slots = torch.arange(self.max_len - n + 1, self.max_len + 1, device=mask.real.device)
        return slots.expand_as(mask.real)

    def logits(self, mask: AttentionMask) -> Tensor:
        """log(a_ij) (B, 1, n, n), whose softmax over the allowed keys is the row normalisation
        a_ij / sum_j a_ij."""
        def build() -> Tensor:
            position = self.slot_positions(mask).to(self._dtype())  # (B, n)
            return PATTERNS[self.pattern](position[:, :, None], position[:, None, :]).unsqueeze(1)

        return mask.cached(("fixed pattern logits", *self._key()), build)

    @property
    def refines_logits(self) -> bool:
        """Average's logits are log(1) = 0 throughout: a refinement on them would read nothing."""
        return self.pattern != "average"

    def normalise(self, logits: Tensor, mask: AttentionMask) -> Tensor:
        # No parameters, so every block of a forward pass has the same logits and weights: the
        # weights are built once per mask, from the first block's logits.
        return mask.cached(("fixed pattern", *self._key()), lambda: masked_softmax(logits, mask))

    def _dtype(self) -> torch.dtype:
        # At least float32 (bf16 counts positions exactly only up to 256), and float64 in a float64 model.
        return torch.promote_types(torch.float32, self.value.weight.dtype)

    def _key(self) -> tuple:
        return self.pattern, self.positions, self.max_len, self._dtype()


def _register(pattern: str) -> None:
    @ATTENTIONS.register(pattern)
    def build(cfg: ModelConfig, block_index: int, refinement: Refinement) -> FixedPatternAttention:
        return FixedPatternAttention(
            pattern=pattern, positions=cfg.pattern_positions, max_len=cfg.max_len, hidden_size=cfg.hidden_size, num_heads=cfg.num_heads,
            attn_dropout=cfg.effective_attn_dropout, refinement=refinement,
        )


for _pattern in PATTERNS:
    _register(_pattern)
