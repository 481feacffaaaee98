"""What every transformer backbone shares: the order embed -> mask -> blocks -> finalise, and
scoring of the next item from the last position."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from awrsr.nn.attention import AttentionWeights
from awrsr.nn.masks import AttentionMask


def next_item_example(sequences: Tensor) -> tuple[Tensor, Tensor]:
    """Inputs seq[:-1] and targets seq[1:] (B, n) from windows of n + 1 items; a target whose
    input is padding (the first item of a short sequence) is not an example and becomes 0.

    >>> next_item_example(torch.tensor([[0, 0, 7, 8, 9]]))
    (tensor([[0, 0, 7, 8]]), tensor([[0, 0, 8, 9]]))
    """
    inputs, targets = sequences[:, :-1], sequences[:, 1:]
    return inputs, targets * (inputs > 0)


class SequenceBackbone(nn.Module):
    """Subclasses provide ``embedding``, ``blocks``, ``finalize`` and the scoring functions
    ``score_all(hidden (N, k)) -> (N, num_items)`` and ``score_items(hidden (..., k), items (..., m))``."""

    causal: bool = True

    def __init__(self, *, num_items: int, max_len: int, embedding: nn.Module, blocks: list[nn.Module]) -> None:
        super().__init__()
        self.num_items = num_items
        self.max_len = max_len
        self.embedding = embedding
        self.blocks = nn.ModuleList(blocks)

    def finalize(self, x: Tensor) -> Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def encode(self, input_ids: Tensor, need_weights: bool = False) -> tuple[Tensor, list[AttentionWeights]]:
        """Hidden states (B, n, k) for left-padded ``input_ids`` (B, n), and per-layer weights
        when ``need_weights``."""
        n = input_ids.shape[1]
        if n > self.max_len:
            raise ValueError(f"input window {n} is longer than the model's max_len {self.max_len}")
        # Always run the full window: refinement matrices are indexed by position.
        input_ids = F.pad(input_ids, (self.max_len - n, 0))
        mask = AttentionMask.build(input_ids, causal=self.causal)
        x = self.embedding(input_ids) * mask.real.unsqueeze(-1)  # (B, max_len, k)
        weights = []
        for block in self.blocks:
            x, w = block(x, mask, need_weights=need_weights)
            if w is not None:
                weights.append(w)
        out = self.finalize(x) * mask.real.unsqueeze(-1)  # padded positions output exactly zero
        return out[:, -n:], weights

    def forward(self, input_ids: Tensor) -> Tensor:
        return self.encode(input_ids)[0]

    def training_example(self, sequences: Tensor) -> tuple[Tensor, Tensor]:
        """What one training step feeds the model and scores, from windows of the last n + 1
        training items (B, n + 1): by default next-item prediction, inputs seq[:-1] and targets
        seq[1:] (B, n). Other objectives (Cloze) override."""
        return next_item_example(sequences)

    def next_hidden(self, input_ids: Tensor) -> Tensor:
        """The hidden state (B, k) that scores the item following each history (B, n)."""
        return self.forward(input_ids)[:, -1]

    def score_next(self, input_ids: Tensor) -> Tensor:
        """Scores (B, num_items) of the next item after each history in ``input_ids`` (B, n)."""
        return self.score_all(self.next_hidden(input_ids))


def served_parameters(model: nn.Module, max_len: int, num_items: int) -> int:
    """How many parameters recommending touches: those an eval-mode ``score_next`` reaches. It
    differs from the trained count where training-only parts exist (AC-TSR-lite's calibrators,
    which the served model skips)."""
    was_training = model.training
    model.eval()
    try:
        model.zero_grad(set_to_none=True)
        histories = torch.randint(1, num_items + 1, (2, max_len))
        histories[0, : max_len // 2] = 0  # a padded history too
        model.score_next(histories).sum().backward()
        used = sum(p.numel() for p in model.parameters() if p.grad is not None)
        model.zero_grad(set_to_none=True)
        return used
    finally:
        model.train(was_training)
