"""Weight initialisation shared by the backbones."""

from __future__ import annotations

import torch
from torch import nn


@torch.no_grad()
def xavier_init_(model: nn.Module) -> nn.Module:
    """Xavier-normal for every weight matrix and embedding, zero biases, the padding row at zero.

    This is the initialisation of the widely used PyTorch SASRec port; PyTorch's default
    N(0, 1) embeddings make the initial logits far too large.
    """
    for module in model.modules():
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.xavier_normal_(module.weight)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)
        if isinstance(module, nn.Embedding) and module.padding_idx is not None:
            module.weight[module.padding_idx].zero_()
    return model
