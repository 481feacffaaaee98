"""SASRec's forward pass against its equations, part by part, with values worked by hand: the
invariant tests (causality, padding, windows) hold whatever the scale, the norms' places or the
activation, so these pin them down."""

import torch

from awrsr.models import ModelConfig, build_model
from awrsr.nn.block import TransformerBlock
from awrsr.nn.masks import AttentionMask


def _sasrec(**overrides):
    torch.manual_seed(0)
    values = dict(max_len=4, hidden_size=4, num_heads=1, num_blocks=1, dropout=0.0)
    return build_model(ModelConfig(**{**values, **overrides}), num_items=3).eval()


def test_items_are_scaled_by_sqrt_d_and_positions_count_back_from_the_last_slot():
    embedding = _sasrec().embedding
    with torch.no_grad():
        embedding.items.weight[1] = torch.tensor([1.0, 0.0, 0.0, 0.0])
        embedding.positions.weight.copy_(torch.arange(16.0).view(4, 4))
        x = embedding(torch.tensor([[0, 0, 1, 1]]))
    assert torch.equal(x[0, -1], torch.tensor([2.0, 1.0, 2.0, 3.0]))  # sqrt(4) * e_1 + position 0
    assert torch.equal(x[0, -2], torch.tensor([6.0, 5.0, 6.0, 7.0]))  # sqrt(4) * e_1 + position 1


class Identity(torch.nn.Module):
    def forward(self, x, mask, need_weights=False):
        return x, None


class Zero(torch.nn.Module):
    def forward(self, x):
        return torch.zeros_like(x)


def test_the_block_normalises_before_each_part_and_adds_the_residual():
    """Attention returning its input, a feed-forward returning 0: x + LN(x) (pre-norm), where
    post-norm would give LN(2x) = [-1.3416, -0.4472, 0.4472, 1.3416]."""
    block = TransformerBlock(attention=Identity(), feed_forward=Zero(), hidden_size=4, dropout=0.0).eval()
    out, _ = block(torch.tensor([[[1.0, 2.0, 3.0, 4.0]]]), AttentionMask.build(torch.tensor([[5]]), causal=True))
    assert torch.allclose(out[0, 0], torch.tensor([-0.3416, 1.5528, 3.4472, 5.3416]), atol=1e-4)
    # A feed-forward returning its input: x1 + LN(x1) for x1 = x + LN(x) above, whose LN is LN(x)'s
    # (an evenly spaced row); without the second norm it would be 2 x1 = [-0.6832, 3.1056, ...].
    block = TransformerBlock(attention=Identity(), feed_forward=torch.nn.Identity(), hidden_size=4, dropout=0.0).eval()
    out, _ = block(torch.tensor([[[1.0, 2.0, 3.0, 4.0]]]), AttentionMask.build(torch.tensor([[5]]), causal=True))
    assert torch.allclose(out[0, 0], torch.tensor([-1.6832, 1.1056, 3.8944, 6.6832]), atol=1e-4)


def test_sasrecs_feed_forward_is_relu_and_bert4recs_gelu():
    for name, expected in (("sasrec", [0.0, 2.0]), ("bert4rec", [-0.1587, 1.9545])):
        ffn = _sasrec(name=name, hidden_size=2, max_len=4).blocks[0].feed_forward.net
        with torch.no_grad():
            for linear in (ffn[0], ffn[3]):
                linear.weight.copy_(torch.eye(2))
                linear.bias.zero_()
            assert torch.allclose(ffn(torch.tensor([-1.0, 2.0])), torch.tensor(expected), atol=1e-4), name


def test_the_fused_and_the_explicit_attention_paths_agree_and_drop_nothing_in_eval():
    """The explicit path (taken for dropout on CPU, refinements, or weights asked for) scales by
    sqrt(d_h) as the fused kernel does, and neither drops attention weights in eval mode."""
    ids = torch.tensor([[0, 0, 1, 2], [3, 1, 2, 3]])
    fused = _sasrec(hidden_size=8, num_heads=2, num_blocks=2)(ids)
    explicit = _sasrec(hidden_size=8, num_heads=2, num_blocks=2, fused_attention=False)(ids)
    assert torch.allclose(fused, explicit, atol=1e-5) and not torch.allclose(fused, torch.zeros_like(fused))
    dropping = _sasrec(hidden_size=8, num_heads=2, num_blocks=2, dropout=0.5)  # in eval mode
    outputs = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        outputs.append(dropping(ids))
    assert torch.equal(outputs[0], outputs[1]) and torch.allclose(outputs[0], fused, atol=1e-5)


def test_dropout_falls_after_the_embedding_after_each_part_of_a_block_and_inside_the_ffn():
    """E = Dropout(...), x + Dropout(MHA(LN(x))), x + Dropout(FFN(LN(x))) with the FFN's own
    dropout after its activation, all at model.dropout (0.3); the attention weights' at
    attn_dropout (0.1). Eval-mode tests cannot see a dropout dropped or given the wrong rate."""
    from conftest import dropout_calls

    model = _sasrec(num_blocks=2, dropout=0.3, attn_dropout=0.1)
    block = [("dropout", 0.3), ("feed_forward.net.2", 0.3), ("dropout", 0.3)]  # after attention, in the FFN, after it
    expected = [("embedding.dropout", 0.3)] + [(f"blocks.{i}.{name}", p) for i in range(2) for name, p in block]
    assert dropout_calls(model, torch.tensor([[0, 1, 2, 3]])) == expected
    assert [b.attention.attn_dropout for b in model.blocks] == [0.1, 0.1]


def test_padded_slots_are_zero_on_entering_and_leaving_every_block():
    """The embedding's output and each block's output are zeroed at padded slots, so that padding
    carries nothing to later layers and every logit masked_softmax masks is finite (STOSA's
    padded covariance embedding, ELU + 1 > 0, and the blocks' biases would otherwise fill them)."""
    from conftest import build_tiny

    ids = torch.tensor([[0, 0, 0, 5, 6, 7, 8, 9], [0, 0, 0, 0, 0, 0, 0, 4]])
    for name, attention in (("sasrec", "dot"), ("bert4rec", "dot"), ("stosa", "wasserstein")):
        model = build_tiny(name, attention, "none", parameters="random").eval()
        seen = []
        for block in model.blocks:
            block.register_forward_pre_hook(lambda module, args: seen.append(args[0]))
            block.register_forward_hook(lambda module, args, out: seen.append(out[0]))
        with torch.no_grad():
            model.encode(ids, need_weights=True)  # the full window: the padded slots are there
        assert len(seen) == 2 * len(model.blocks)
        for x in seen:
            assert torch.equal(x[ids == 0], torch.zeros_like(x[ids == 0])), name
            assert x[ids != 0].abs().sum(-1).gt(0).all(), name
