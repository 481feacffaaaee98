import torch

from awrsr.nn.masks import AttentionMask, masked_softmax


def test_masked_softmax_hand_values_and_empty_rows():
    logits = torch.tensor([[0.0, 0.0, 5.0], [1.0, 2.0, 3.0]])
    allowed = torch.tensor([[True, True, False], [False, False, False]])
    out = masked_softmax(logits, allowed)
    assert torch.allclose(out[0], torch.tensor([0.5, 0.5, 0.0]))
    assert torch.equal(out[1], torch.zeros(3))  # all-masked row: zeros, not NaN


def test_an_all_masked_row_of_very_negative_logits_gives_zeros_not_nan():
    # -1e32 plus the float32 bias overflows to -inf: a row all -inf would softmax to NaN.
    for value in (-1e32, -3e38):
        out = masked_softmax(torch.full((2, 2), value), torch.tensor([[True, False], [False, False]]))
        assert torch.equal(out, torch.tensor([[1.0, 0.0], [0.0, 0.0]])), value


def test_mask_is_causal_and_hides_padding():
    ids = torch.tensor([[0, 0, 3, 4]])
    mask = AttentionMask.build(ids, causal=True).allowed[0, 0]
    expected = torch.tensor(
        [[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 1, 0], [0, 0, 1, 1]], dtype=torch.bool
    )
    assert torch.equal(mask, expected)
    bidirectional = AttentionMask.build(ids, causal=False).allowed[0, 0]
    assert bidirectional[2, 3] and not bidirectional[2, 1]


def test_fused_kernel_mask_is_the_allowed_mask_plus_the_diagonal():
    ids = torch.tensor([[0, 0, 3, 4]])
    mask = AttentionMask.build(ids, causal=True)
    fused = mask.for_fused_kernel
    assert fused.any(-1).all()  # no empty row: fused kernels give NaN for one (on CUDA)
    assert torch.equal(fused, mask.allowed | torch.eye(4, dtype=torch.bool))


def test_the_fused_kernel_is_given_the_mask_without_empty_rows(monkeypatch):
    # On CPU the kernel returns zeros for an empty row, so only the mask it is given can show this.
    import awrsr.nn.attention.dot as dot
    from conftest import build_tiny

    given = []
    real = dot.F.scaled_dot_product_attention

    def recording(q, k, v, attn_mask=None, **kwargs):
        given.append(attn_mask)
        return real(q, k, v, attn_mask=attn_mask, **kwargs)

    monkeypatch.setattr(dot.F, "scaled_dot_product_attention", recording)
    model = build_tiny("sasrec", "dot", "none", max_len=4).eval()
    # the batch runs on a window of 2 slots, whose first is padding in the second row: an empty row
    model(torch.tensor([[0, 0, 3, 4], [0, 0, 0, 5]]))
    assert given, "the fused kernel was not used"
    assert all(m.isfinite().any(-1).all() for m in given)  # a float mask: 0 where allowed, -inf elsewhere


def test_masked_keys_get_exactly_zero_even_against_a_much_larger_logit():
    # The masked logit is finite and far above the allowed ones (padded slots carry zero vectors,
    # real ones need not score above them): masked entries are still exactly 0, not a tiny share.
    logits = torch.tensor([[1000.0, 0.0, 0.0], [0.0, -1000.0, 1000.0]])
    allowed = torch.tensor([[False, True, True], [True, True, False]])
    out = masked_softmax(logits, allowed)
    assert torch.equal(out, torch.tensor([[0.0, 0.5, 0.5], [1.0, 0.0, 0.0]]))


def test_padded_queries_attend_to_nothing_in_either_direction():
    ids = torch.tensor([[0, 0, 3, 4], [0, 5, 6, 7]])
    for causal in (True, False):
        mask = AttentionMask.build(ids, causal=causal)
        allowed = mask.allowed[:, 0]  # (B, n, n)
        assert not allowed[~mask.real].any()  # rows of padded queries are empty
        assert not allowed.transpose(1, 2)[~mask.real].any()  # and no query sees a padded key
        assert torch.equal(mask.row_factor[:, 0, :, 0], mask.real.float())


def test_the_mask_is_the_definition_on_left_padded_windows_and_softmax_on_any_padding():
    """``build`` takes the causal mask in one pass as real_j & (j <= i), which is real_i & real_j &
    (j <= i) for left-padded rows; ``row_factor`` comes from ``real``. On any other padding only
    padded queries' rows differ, and masked_softmax still gives the definition's weights."""
    torch.manual_seed(0)
    n = 7
    lower = torch.ones(n, n, dtype=torch.bool).tril()
    lengths = torch.tensor([0, 1, 3, 7, 5])
    left_padded = (torch.arange(n) >= n - lengths[:, None]).long() * torch.randint(1, 9, (5, n))
    holes = torch.randint(0, 3, (5, n))  # padding anywhere, and rows of padding only
    for ids in (left_padded, holes):
        real = ids != 0
        for causal in (True, False):
            definition = real[:, None, :, None] & real[:, None, None, :] & (lower if causal else True)
            mask = AttentionMask.build(ids, causal=causal)
            if ids is left_padded:
                assert torch.equal(mask.allowed, definition)
            assert torch.equal(mask.row_factor, definition.any(-1, keepdim=True).float())
            logits = torch.randn(5, 2, n, n)
            assert torch.equal(masked_softmax(logits, mask), masked_softmax(logits, definition))
