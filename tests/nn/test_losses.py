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

    def linear_scores(self, hidden):
        return hidden, self.table[1:]

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


@pytest.mark.parametrize("loss", LOSSES.names())
@pytest.mark.parametrize("linear", [True, False])
def test_a_batch_without_real_positions_gives_zero_and_a_zero_gradient(loss, linear):
    model, (hidden, _) = (DotModel(6) if linear else DistanceModel(6)), _batch()
    hidden.requires_grad_(True)
    value = LOSSES.get(loss)(model, hidden, torch.zeros(2, 5, dtype=torch.long), num_negatives=3, pvn_weight=0.5)
    value.backward()  # nothing to learn: 0, not the NaN of a mean over no rows
    assert value.item() == 0.0 and torch.equal(hidden.grad, torch.zeros_like(hidden))


class DistanceModel(DotModel):
    """Scores by every item (``score_all``) and no linear form: ce's path for other models."""

    linear_scores = None


@pytest.mark.parametrize("model_type", [DotModel, DistanceModel])
def test_full_cross_entropy_matches_reference_on_real_positions(model_type):
    model, (hidden, targets) = model_type(6), _batch()
    real = targets > 0
    expected = F.cross_entropy(hidden[real] @ model.table[1:].T, targets[real] - 1)  # column j is item j + 1
    assert torch.allclose(LOSSES.get("ce")(model, hidden, targets), expected)


def _loss_and_its_negatives(loss: str, num_negatives: int):
    """``loss`` on a DotModel over 6 items, and what a hand computation needs: the positive's and
    the negatives' scores at each real position, with the negatives the loss drew (same seed)."""
    model, (hidden, targets) = DotModel(6), _batch()
    torch.manual_seed(5)
    got = LOSSES.get(loss)(model, hidden, targets, num_negatives=num_negatives)
    torch.manual_seed(5)
    real = targets > 0
    h, pos = hidden[real], targets[real]
    neg = torch.randint(1, 7, (pos.shape[0], num_negatives))
    collision = neg == pos[:, None]
    assert collision.any() and not collision.all()  # the seed exercises the masking
    return got, (model.table[pos] * h).sum(-1), (model.table[neg] * h[:, None]).sum(-1), collision


def test_bce_by_hand_with_the_same_negatives():
    got, s_pos, s_neg, collision = _loss_and_its_negatives("bce", 2)
    per_position = -torch.log(torch.sigmoid(s_pos)) - (torch.log(1 - torch.sigmoid(s_neg)) * ~collision).sum(1)
    assert torch.allclose(got, per_position.mean())


def test_sampled_softmax_by_hand_with_the_same_negatives():
    got, s_pos, s_neg, collision = _loss_and_its_negatives("sampled_softmax", 3)
    per_position = -s_pos + torch.log(torch.exp(s_pos) + (torch.exp(s_neg) * ~collision).sum(1))
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


def test_chunks_are_cache_sized_on_a_cpu_and_few_on_a_gpu():
    from awrsr.nn.chunked_cross_entropy import _chunk_rows

    # ML-1M's 3,416 items: about a million logits per chunk on the CPU; on a GPU one ML-1M batch
    # (128 windows x about 107 scored positions) fits in two chunks, one Beauty batch in one.
    assert _chunk_rows(3416) == (1 << 20) // 3416 == 306
    assert _chunk_rows(3416, torch.device("cuda")) == (1 << 25) // 3416 >= 128 * 107 / 2
    assert _chunk_rows(12101, torch.device("cuda")) >= 128 * 10
    assert _chunk_rows(10**7) == 64  # a catalogue past a million logits a row: the floor of 64 rows


def test_chunked_cross_entropy_scales_its_stored_gradients_by_the_upstream_gradient():
    """The gradients are formed in the forward pass; backward must still apply d(outer)/d(loss),
    also when the graph is walked twice (AC-TSR's two backward passes)."""
    torch.manual_seed(3)
    h = torch.randn(20, 6, dtype=torch.float64, requires_grad=True)
    w = torch.randn(11, 6, dtype=torch.float64, requires_grad=True)
    t = torch.randint(0, 11, (20,))
    dh, dw = torch.autograd.grad(2.5 * F.cross_entropy(h @ w.T, t) ** 2, (h, w))
    loss = linear_cross_entropy(h, w, t, chunk=6)
    outer = 2.5 * loss**2
    first = torch.autograd.grad(outer, (h, w), retain_graph=True)
    second = torch.autograd.grad(outer, (h, w))
    for got in (first, second):
        assert torch.allclose(got[0], dh) and torch.allclose(got[1], dw)


def test_chunked_cross_entropy_without_gradients_gives_the_same_loss():
    torch.manual_seed(4)
    h = torch.randn(30, 5, requires_grad=True)
    w = torch.randn(9, 5, requires_grad=True)
    t = torch.randint(0, 9, (30,))
    with_grad = linear_cross_entropy(h, w, t, chunk=8)
    with torch.no_grad():
        without = linear_cross_entropy(h, w, t, chunk=8)
    assert torch.allclose(with_grad.detach(), without)
    assert torch.allclose(linear_cross_entropy(h.detach(), w.detach(), t, chunk=8), without)
    # only the hidden states trainable: the item table gets no gradient, the states the right one
    frozen = linear_cross_entropy(h, w.detach(), t, chunk=8)
    (dh,) = torch.autograd.grad(frozen, (h,))
    assert torch.allclose(dh, torch.autograd.grad(F.cross_entropy(h @ w.detach().T, t), (h,))[0], atol=1e-6)


def test_chunked_cross_entropy_under_bf16_autocast_is_close_to_fp32():
    torch.manual_seed(5)
    h = torch.randn(40, 16, requires_grad=True)
    w = torch.randn(25, 16, requires_grad=True)
    t = torch.randint(0, 25, (40,))
    dh, dw = torch.autograd.grad(F.cross_entropy(h @ w.T, t), (h, w))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = linear_cross_entropy(h, w, t, chunk=16)
    bh, bw = torch.autograd.grad(loss, (h, w))
    assert loss.dtype == torch.float32 and bh.dtype == torch.float32 and bw.dtype == torch.float32
    assert torch.allclose(loss, F.cross_entropy(h @ w.T, t), rtol=0.02)
    assert torch.allclose(bh, dh, atol=0.01) and torch.allclose(bw, dw, atol=0.01)


def test_chunked_cross_entropy_passes_gradcheck_and_handles_no_rows():
    h = torch.randn(9, 3, dtype=torch.float64, requires_grad=True)
    w = torch.randn(5, 3, dtype=torch.float64, requires_grad=True)
    t = torch.randint(0, 5, (9,))
    assert torch.autograd.gradcheck(lambda a, b: linear_cross_entropy(a, b, t, chunk=4), (h, w))
    empty = linear_cross_entropy(h[:0], w, t[:0])
    assert empty.item() == 0.0


def test_chunked_cross_entropy_is_exact_for_logits_past_exps_range():
    """Logits in the thousands (exp overflows float32 past 88): the log-sum-exp subtracts each
    row's maximum first, so loss and gradients stay finite and equal the dense loss's."""
    torch.manual_seed(6)
    h = (100 * torch.randn(12, 4)).requires_grad_()
    w = (10 * torch.randn(9, 4)).requires_grad_()
    t = torch.randint(0, 9, (12,))
    dense = F.cross_entropy(h @ w.T, t)
    chunked = linear_cross_entropy(h, w, t, chunk=5)
    assert (h @ w.T).abs().max() > 1000 and torch.isfinite(chunked)
    assert torch.allclose(chunked, dense, rtol=1e-4)
    for mine, reference in zip(torch.autograd.grad(chunked, (h, w)), torch.autograd.grad(dense, (h, w))):
        assert torch.allclose(mine, reference, atol=1e-4)
    with torch.no_grad():
        assert torch.allclose(linear_cross_entropy(h, w, t, chunk=5), dense, rtol=1e-4)


def test_chunked_cross_entropy_of_bf16_inputs_takes_its_softmax_in_float32():
    """bf16 hidden states and weights: the products may be bf16, the softmax and the sum are
    float32 (bf16's 8-bit mantissa would lose the loss's small differences)."""
    torch.manual_seed(7)
    h, w = torch.randn(30, 8).bfloat16(), torch.randn(11, 8).bfloat16()
    t = torch.randint(0, 11, (30,))
    loss = linear_cross_entropy(h, w, t, chunk=8)
    assert loss.dtype == torch.float32
    assert torch.allclose(loss, F.cross_entropy(h.float() @ w.float().T, t), rtol=1e-3)
