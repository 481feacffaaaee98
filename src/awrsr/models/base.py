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


def history_width(input_ids: Tensor) -> int:
    """Slots from the first one that is real in any row to the end (at least 1) of left-padded
    ``input_ids`` (B, n).

    >>> history_width(torch.tensor([[0, 0, 0, 4, 5], [0, 0, 0, 0, 6]])), history_width(torch.zeros(1, 4, dtype=torch.long))
    (2, 1)
    """
    n = input_ids.shape[1]
    # A True sentinel after the last slot: an all-padding batch finds its first real slot at n.
    sentinel = torch.ones(1, dtype=torch.bool, device=input_ids.device)
    real_slots = torch.cat([(input_ids != 0).any(dim=0), sentinel])  # (n + 1,)
    return max(n - int(real_slots.int().argmax()), 1)  # argmax finds the first True; one host sync


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
        """The blocks' output (..., k) made into the hidden state that scores items, slot by slot
        (``next_hidden`` finalises the last slot alone)."""
        raise NotImplementedError

    @property
    def window_invariant(self) -> bool:
        """Whether every attention part and its refinement accept a window of the last n slots and
        give what the full max_len window would; then ``encode`` drops the slots that are padding
        in every row. A part that does not say so is taken not to."""
        return all(
            getattr(block.attention, "window_invariant", False)
            and getattr(getattr(block.attention, "refinement", None), "window_invariant", False)
            for block in self.blocks
        )

    def encode(self, input_ids: Tensor, need_weights: bool = False) -> tuple[Tensor, list[AttentionWeights]]:
        """Hidden states (B, n, k) for left-padded ``input_ids`` (B, n), and per-layer weights
        (B, h, max_len, max_len) when ``need_weights``.

        The blocks run on the narrowest window that holds every row's history when the parts
        allow it (``window_invariant``): a batch of short histories then costs what its longest
        history costs, not max_len. The dropped slots are padding, whose outputs are zero anyway.
        Asking for the weights runs the full max_len window, so that they always have one shape.
        """
        n = input_ids.shape[1]
        x, real, weights = self._run_blocks(input_ids, need_weights)
        width = x.shape[1]
        out = self.finalize(x) * real.unsqueeze(-1)  # padded positions output exactly zero
        return (out[:, -n:] if width >= n else F.pad(out, (0, 0, n - width, 0))), weights

    def _run_blocks(self, input_ids: Tensor, need_weights: bool) -> tuple[Tensor, Tensor, list[AttentionWeights]]:
        """The blocks' output (B, width, k) before ``finalize``, the window's real slots (B, width)
        and the per-layer weights, for left-padded ``input_ids`` (B, n); see ``encode``."""
        n = input_ids.shape[1]
        if n > self.max_len:
            raise ValueError(f"input window {n} is longer than the model's max_len {self.max_len}")
        width = self.max_len if need_weights or not self.window_invariant else history_width(input_ids)
        window = F.pad(input_ids, (width - n, 0)) if width >= n else input_ids[:, n - width:]
        mask = AttentionMask.build(window, causal=self.causal)
        x = self.embedding(window) * mask.real.unsqueeze(-1)  # (B, width, k)
        weights = []
        for block in self.blocks:
            x, w = block(x, mask, need_weights=need_weights)
            if w is not None:
                weights.append(w)
        return x, mask.real, weights

    def forward(self, input_ids: Tensor) -> Tensor:
        return self.encode(input_ids)[0]

    def training_example(self, sequences: Tensor) -> tuple[Tensor, Tensor]:
        """What one training step feeds the model and scores, from windows of the last n + 1
        training items (B, n + 1): by default next-item prediction, inputs seq[:-1] and targets
        seq[1:] (B, n). Other objectives (Cloze) override."""
        return next_item_example(sequences)

    def next_inputs(self, input_ids: Tensor) -> Tensor:
        """What the model reads to predict the item after each history (B, n): the history itself
        by default; BERT4Rec appends its [mask]."""
        return input_ids

    def next_hidden(self, input_ids: Tensor) -> Tensor:
        """The hidden state (B, k) that scores the item following each history (B, n): the last
        slot's, finalised alone (``finalize`` works slot by slot, so this is ``forward(...)[:, -1]``
        without finalising, and padding back, every other slot)."""
        x, real, _ = self._run_blocks(self.next_inputs(input_ids), need_weights=False)
        return self.finalize(x[:, -1]) * real[:, -1:]

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
        device = next(model.parameters()).device
        histories = torch.randint(1, num_items + 1, (2, max_len), device=device)
        histories[0, : max_len // 2] = 0  # a padded history too
        model.score_next(histories).sum().backward()
        used = sum(p.numel() for p in model.parameters() if p.grad is not None)
        model.zero_grad(set_to_none=True)
        return used
    finally:
        model.train(was_training)
