"""The position-wise feed-forward network of a transformer block."""

from __future__ import annotations

from torch import Tensor, nn

from awrsr.nn.dropout import Dropout


class PointWiseFeedForward(nn.Module):
    """FFN(x) = act(x W1 + b1) W2 + b2, with dropout after the activation: ReLU in SASRec, GELU in
    BERT4Rec."""

    def __init__(self, *, hidden_size: int, inner_size: int, dropout: float, activation: str = "relu") -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(hidden_size, inner_size),
            {"relu": nn.ReLU, "gelu": nn.GELU}[activation](),
            Dropout(dropout),
            nn.Linear(inner_size, hidden_size),
        )

    def forward(self, x: Tensor) -> Tensor:
        return self.net(x)
