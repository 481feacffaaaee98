import torch

from awrsr.nn.masks import AttentionMask, masked_softmax


def test_masked_softmax_hand_values_and_empty_rows():
    logits = torch.tensor([[0.0, 0.0, 5.0], [1.0, 2.0, 3.0]])
    allowed = torch.tensor([[True, True, False], [False, False, False]])
    out = masked_softmax(logits, allowed)
    assert torch.allclose(out[0], torch.tensor([0.5, 0.5, 0.0]))
    assert torch.equal(out[1], torch.zeros(3))  # all-masked row: zeros, not NaN


def test_mask_is_causal_and_hides_padding():
    ids = torch.tensor([[0, 0, 3, 4]])
    mask = AttentionMask.build(ids, causal=True).allowed[0, 0]
    expected = torch.tensor(
        [[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 1, 0], [0, 0, 1, 1]], dtype=torch.bool
    )
    assert torch.equal(mask, expected)
    bidirectional = AttentionMask.build(ids, causal=False).allowed[0, 0]
    assert bidirectional[2, 3] and not bidirectional[2, 1]


def test_fused_kernel_mask_has_no_empty_row():
    ids = torch.tensor([[0, 0, 3, 4]])
    fused = AttentionMask.build(ids, causal=True).for_fused_kernel
    assert fused.any(-1).all()
