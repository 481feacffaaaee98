import pytest
import torch
import torch.nn.functional as F

from awrsr.nn.chunked_cross_entropy import linear_cross_entropy
from awrsr.nn.losses import LOSSES


class DotModel:
    """The minimal scoring interface the losses use: dot products with an item table."""

    def __init__(self, num_items: int, d: int = 4) -> None:
        torch.manual_seed(1)
        self.num_items = num_items
        self.table = torch.randn(num_items + 1, d, dtype=torch.float64)

    def item_weights(self):
        return self.table[1:]

    def score_all(self, hidden):
        return hidden @ self.table[1:].T

    def score_items(self, hidden, items):
        return (self.table[items] * hidden.unsqueeze(-2)).sum(-1)

    def item_vectors(self, items):
        return self.table[items]


def _batch():
    torch.manual_seed(2)
    hidden = torch.randn(2, 5, 4, dtype=torch.float64)
    targets = torch.tensor([[0, 0, 3, 1, 2], [0, 4, 4, 1, 5]])
    return hidden, targets


@pytest.mark.parametrize("loss", LOSSES.names())
def test_losses_ignore_padded_positions(loss):
    model, (hidden, targets) = DotModel(6), _batch()
    changed = hidden.clone()
    changed[targets == 0] = 100.0  # garbage at padded positions
    torch.manual_seed(0)
    a = LOSSES.get(loss)(model, hidden, targets, num_negatives=3, pvn_weight=0.5)
    torch.manual_seed(0)
    b = LOSSES.get(loss)(model, changed, targets, num_negatives=3, pvn_weight=0.5)
    assert torch.allclose(a, b)


def test_full_cross_entropy_matches_reference_on_real_positions():
    model, (hidden, targets) = DotModel(6), _batch()
    real = targets > 0
    expected = F.cross_entropy(hidden[real] @ model.table[1:].T, targets[real] - 1)
    assert torch.allclose(LOSSES.get("ce")(model, hidden, targets), expected)


def test_bce_by_hand_with_the_same_negatives():
    model, (hidden, targets) = DotModel(6), _batch()
    torch.manual_seed(5)
    got = LOSSES.get("bce")(model, hidden, targets, num_negatives=2)
    torch.manual_seed(5)
    real = targets > 0
    h, pos = hidden[real], targets[real]
    neg = torch.randint(1, 7, (pos.shape[0], 2))
    s_pos = (model.table[pos] * h).sum(-1)
    s_neg = (model.table[neg] * h[:, None]).sum(-1)
    per_position = -torch.log(torch.sigmoid(s_pos)) - (torch.log(1 - torch.sigmoid(s_neg)) * (neg != pos[:, None])).sum(1)
    assert torch.allclose(got, per_position.mean())


def test_sampled_softmax_masks_negatives_equal_to_the_positive():
    # One item: every negative is the positive, so the softmax has one candidate and the loss is 0.
    model = DotModel(1)
    hidden = torch.randn(1, 3, 4, dtype=torch.float64)
    targets = torch.tensor([[0, 1, 1]])
    assert LOSSES.get("sampled_softmax")(model, hidden, targets, num_negatives=5).item() == pytest.approx(0.0)


@pytest.mark.parametrize("chunk", [1, 7, 64])
def test_chunked_cross_entropy_equals_the_dense_loss_and_gradients(chunk):
    torch.manual_seed(0)
    h = torch.randn(50, 8, dtype=torch.float64, requires_grad=True)
    w = torch.randn(13, 8, dtype=torch.float64, requires_grad=True)
    t = torch.randint(0, 13, (50,))
    dense = F.cross_entropy(h @ w.T, t)
    dh, dw = torch.autograd.grad(dense, (h, w))
    chunked = linear_cross_entropy(h, w, t, chunk=chunk)
    ch, cw = torch.autograd.grad(chunked, (h, w))
    assert torch.allclose(dense, chunked) and torch.allclose(dh, ch) and torch.allclose(dw, cw)


def test_chunked_cross_entropy_passes_gradcheck_and_handles_no_rows():
    h = torch.randn(9, 3, dtype=torch.float64, requires_grad=True)
    w = torch.randn(5, 3, dtype=torch.float64, requires_grad=True)
    t = torch.randint(0, 5, (9,))
    assert torch.autograd.gradcheck(lambda a, b: linear_cross_entropy(a, b, t, chunk=4), (h, w))
    empty = linear_cross_entropy(h[:0], w, t[:0])
    assert empty.item() == 0.0
