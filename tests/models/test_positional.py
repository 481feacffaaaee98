"""PARec / FPARec positional attention and the fixed patterns, against hand-worked weights."""

import math

import pytest
import torch
from rich.console import Console

from awrsr.errors import ConfigError
from awrsr.models import ModelConfig, build_model
from awrsr.nn.attention.fixed import FixedPatternAttention
from awrsr.nn.masks import AttentionMask
from awrsr.nn.refine.none import NoRefinement


def _weights(attention, mask):
    """The attention weights of a position-only attention for ``mask``'s window, as its forward forms them."""
    return attention.normalise(attention.logits(mask), mask)


def _tiny(attention: str, **overrides):
    values = dict(attention=attention, max_len=6, hidden_size=8, num_heads=1, num_blocks=2, dropout=0.0)
    values.update(overrides)
    torch.manual_seed(0)
    return build_model(ModelConfig(**values), num_items=10).eval()


def test_parec_weights_are_the_masked_softmax_of_its_matrix():
    model = _tiny("positional")
    attention = model.blocks[0].attention
    ids = torch.tensor([[0, 0, 0, 4, 5, 6]])
    _, weights = model.encode(ids, need_weights=True)
    R = attention.relation[0].detach() / math.sqrt(8)
    row = torch.softmax(R[5, 3:], dim=0)  # the last query sees the three real keys
    assert torch.allclose(weights[0].base[0, 0, 5, 3:], row, atol=1e-6)
    assert torch.equal(weights[0].base[0, 0, 5, :3], torch.zeros(3))


def test_parec_scales_each_heads_matrix_by_the_model_width_not_the_head_width():
    """The paper's softmax(R / sqrt(d)): with 2 heads of d_h = 4, d = 8 still (sqrt(4) would differ)."""
    model = _tiny("positional", num_heads=2)
    relation = model.blocks[0].attention.relation.detach()
    _, weights = model.encode(torch.tensor([[0, 0, 0, 4, 5, 6]]), need_weights=True)
    for head in range(2):
        row = torch.softmax(relation[head, 5, 3:] / math.sqrt(8), dim=0)
        assert torch.allclose(weights[0].base[0, head, 5, 3:], row, atol=1e-6)


def test_fparec_weights_are_the_masked_softmax_of_r1_r2t():
    model = _tiny("positional", positional_rank=2)
    attention = model.blocks[0].attention
    _, weights = model.encode(torch.tensor([[0, 0, 0, 4, 5, 6]]), need_weights=True)
    product = (attention.left[0] @ attention.right[0].T).detach()  # R1 R2^T, 6 x 6
    assert torch.allclose(weights[0].base[0, 0, 5, 3:], torch.softmax(product[5, 3:] / math.sqrt(8), dim=0), atol=1e-6)


def test_fparec_factorises_the_matrix_with_2kn_parameters_per_layer():
    parec, fparec = _tiny("positional"), _tiny("positional", positional_rank=2)
    attention = fparec.blocks[0].attention
    assert attention.left.shape == attention.right.shape == (1, 6, 2)
    count = lambda m: sum(p.numel() for p in m.parameters())
    assert count(parec) - count(fparec) == 2 * (6 * 6 - 2 * 6 * 2)
    assert torch.allclose(attention.position_logits(), attention.left @ attention.right.transpose(-2, -1))


@pytest.mark.parametrize("rank", [None, 2])
def test_a_narrow_window_uses_the_last_rows_and_columns_of_r(rank):
    """Short histories run on a narrow window (tests/models/test_invariants.py checks the outputs);
    R's block for the last n slots is what such a window multiplies, for PARec and FPARec."""
    attention = _tiny("positional", positional_rank=rank).blocks[0].attention
    full = attention.position_logits()
    assert torch.allclose(attention.position_logits(3), full[:, -3:, -3:])
    model = _tiny("positional", positional_rank=rank, refine="simp")
    ids = torch.tensor([[0, 0, 0, 0, 5, 6]])
    with torch.no_grad():
        assert torch.allclose(model.encode(ids)[0], model.encode(ids, need_weights=True)[0], atol=1e-5)


def test_position_embedding_is_left_out_for_positional_attention_unless_asked():
    assert _tiny("positional").embedding.positions is None
    assert _tiny("linear").embedding.positions is None
    assert _tiny("dot").embedding.positions is not None
    assert _tiny("positional", position_embedding=True).embedding.positions is not None
    assert _tiny("dot", position_embedding=False).embedding.positions is None


@pytest.mark.parametrize(
    "pattern,expected",
    [
        ("average", [1 / 3, 1 / 3, 1 / 3]),
        ("linear", [1 / 6, 2 / 6, 3 / 6]),
        ("exponential", [math.exp(-2) / (math.exp(-2) + math.exp(-1) + 1), math.exp(-1) / (math.exp(-2) + math.exp(-1) + 1), 1 / (math.exp(-2) + math.exp(-1) + 1)]),
    ],
)
def test_fixed_patterns_by_hand_whatever_the_padding(pattern, expected):
    attention = FixedPatternAttention(pattern=pattern, hidden_size=4, num_heads=1, attn_dropout=0.0, refinement=NoRefinement())
    for ids in (torch.tensor([[7, 8, 9]]), torch.tensor([[0, 0, 7, 8, 9]])):
        weights = _weights(attention, AttentionMask.build(ids, causal=True))[0, 0]
        assert torch.allclose(weights[-1, -3:], torch.tensor(expected), atol=1e-6)
        # one query earlier: the same pattern over its two keys
        assert torch.allclose(weights[-2, -3:-1], torch.tensor(expected[:2]) / sum(expected[:2]), atol=1e-6)
        assert weights[:-3].abs().sum() == 0  # padded queries attend to nothing


@pytest.mark.parametrize("pattern", ["average", "linear", "exponential"])
def test_fixed_patterns_of_an_empty_history_are_zero_not_nan(pattern):
    # A row with no item at all (an empty history next to a real one): every weight 0 and finite;
    # positions along the history start at 1, so log(a_ij) is never log(0) for any slot.
    attention = FixedPatternAttention(pattern=pattern, hidden_size=4, num_heads=1, attn_dropout=0.0, refinement=NoRefinement())
    weights = _weights(attention, AttentionMask.build(torch.tensor([[0, 0, 0], [0, 7, 8]]), causal=True))
    assert torch.equal(weights[0], torch.zeros_like(weights[0]))
    assert torch.isfinite(weights).all() and torch.allclose(weights[1, 0, 1:].sum(-1), torch.ones(2))


def test_linear_by_window_slot_by_hand_whatever_the_padding():
    """The slot reading of a_ij = j (docs/neighbours.md): an 8-item history in a 50-slot window sits
    in slots 43..50, so its newest item gets 50 / (43 + ... + 50) = 0.134, not 8 / 36 = 0.222."""
    attention = FixedPatternAttention(
        pattern="linear", positions="window", max_len=50, hidden_size=4, num_heads=1, attn_dropout=0.0,
        refinement=NoRefinement(),
    )
    history = torch.arange(1, 9)[None]
    expected = torch.arange(43, 51, dtype=torch.float32) / sum(range(43, 51))
    # the whole window, a window trimmed to the history (as the backbone does), and one in between
    for width in (50, 8, 11):
        ids = torch.cat([torch.zeros(1, width - 8, dtype=torch.long), history], dim=1)
        weights = _weights(attention, AttentionMask.build(ids, causal=True))[0, 0]
        assert torch.allclose(weights[-1, -8:], expected, atol=1e-6)
        # one query earlier (slot 49): the same numbering over its seven keys
        assert torch.allclose(weights[-2, -8:-1], torch.arange(43, 50) / sum(range(43, 50)), atol=1e-6)
        assert weights[-1, :-8].abs().sum() == 0
    history_reading = FixedPatternAttention(pattern="linear", hidden_size=4, num_heads=1, attn_dropout=0.0, refinement=NoRefinement())
    newest = _weights(history_reading, AttentionMask.build(history, causal=True))[0, 0, -1, -1]
    assert newest == pytest.approx(8 / 36)


def test_a_window_wider_than_max_len_is_refused_by_window_positions():
    attention = FixedPatternAttention(
        pattern="linear", positions="window", max_len=4, hidden_size=4, num_heads=1, attn_dropout=0.0,
        refinement=NoRefinement(),
    )
    assert _weights(attention, AttentionMask.build(torch.tensor([[0, 1, 2, 3]]), causal=True)).shape[-1] == 4
    with pytest.raises(ValueError, match="window of 5 slots, more than max_len=4"):
        _weights(attention, AttentionMask.build(torch.tensor([[0, 1, 2, 3, 4]]), causal=True))


def test_a_window_wider_than_max_len_is_refused_by_positional_attention():
    attention = _tiny("positional", max_len=4).blocks[0].attention
    assert _weights(attention, AttentionMask.build(torch.tensor([[0, 1, 2, 3]]), causal=True)).shape[-1] == 4
    with pytest.raises(ValueError, match="window of 5 slots, more than max_len=4"):
        _weights(attention, AttentionMask.build(torch.tensor([[0, 1, 2, 3, 4]]), causal=True))


@pytest.mark.parametrize("attention", ["positional", "average"])
def test_position_only_attentions_drop_attention_weights_in_training_only(attention):
    """attn_dropout reaches the weights of PARec and the fixed patterns (every other dropout is 0)."""
    ids = torch.tensor([[0, 2, 3, 4, 5, 6]])
    outputs = {}
    for rate in (0.0, 0.5):
        model = _tiny(attention, attn_dropout=rate)
        evaluated = model.eval()(ids)
        for seed in (0, 1):
            torch.manual_seed(seed)
            outputs[rate, seed] = model.train()(ids)
        assert torch.equal(model.eval()(ids), evaluated)
        if rate == 0.0:
            assert torch.allclose(outputs[rate, 0], evaluated, atol=1e-6)
    assert not torch.allclose(outputs[0.5, 0], outputs[0.5, 1])


def test_refined_positional_attention_reports_its_base_weights_and_the_refined_ones():
    model = _tiny("positional", refine="simp")
    relation = model.blocks[0].attention.relation[0].detach()
    _, weights = model.encode(torch.tensor([[0, 0, 0, 4, 5, 6]]), need_weights=True)
    base, refined = weights[0].base[0, 0], weights[0].refined[0, 0]
    assert torch.allclose(base[5, 3:], torch.softmax(relation[5, 3:] / math.sqrt(8), dim=0), atol=1e-6)
    assert torch.allclose(refined[5].sum(), torch.tensor(1.0)) and not torch.allclose(refined[5], base[5], atol=1e-3)


@pytest.mark.parametrize("pattern", ["average", "exponential"])
def test_window_positions_change_only_the_linear_pattern(pattern):
    ids = torch.tensor([[0, 0, 3, 4, 5, 6]])
    by_history, by_window = _tiny(pattern)(ids), _tiny(pattern, pattern_positions="window")(ids)
    assert torch.allclose(by_history, by_window, atol=1e-6)
    linear = _tiny("linear")(ids), _tiny("linear", pattern_positions="window")(ids)
    assert not torch.allclose(*linear, atol=1e-3)
    # and the window numbering is padding-invariant in the whole model too
    assert torch.allclose(_tiny("linear", pattern_positions="window")(ids[:, 2:]), linear[1][:, 2:], atol=1e-6)


def test_window_positions_are_refused_outside_the_fixed_patterns():
    with pytest.raises(ConfigError, match="model.pattern_positions only applies to the fixed patterns"):
        ModelConfig(attention="positional", pattern_positions="window")
    with pytest.raises(ConfigError, match="model.pattern_positions must be one of 'history', 'window', got 'slot'"):
        ModelConfig(attention="linear", pattern_positions="slot")


@pytest.mark.parametrize("pattern", ["average", "linear", "exponential"])
def test_fixed_patterns_follow_the_models_dtype(pattern):
    """Their weights are built in the values' dtype: a float64 model (the reference of
    benchmarks/device_check.py) stays float64 instead of failing in the weights-values product."""
    model = _tiny(pattern).double()
    out = model(torch.tensor([[0, 0, 3, 4, 5, 6]]))
    assert out.dtype == torch.float64
    assert torch.allclose(out.float(), _tiny(pattern)(torch.tensor([[0, 0, 3, 4, 5, 6]])), atol=1e-5)


def test_fixed_patterns_are_refused_on_a_bidirectional_backbone():
    with pytest.raises(ConfigError, match="causal backbones only"):
        build_model(ModelConfig(name="bert4rec", attention="linear"), num_items=5)


def test_positional_rank_must_be_positive():
    with pytest.raises(ConfigError, match="model.positional_rank"):
        ModelConfig(attention="positional", positional_rank=0)
    with pytest.raises(ConfigError, match="only applies to model.attention: positional"):
        ModelConfig(attention="dot", positional_rank=20)  # would silently train SASRec, not FPARec


def test_fparec_fits_beats_popularity_and_recommends(tmp_path):
    from awrsr.infer import Recommender
    from awrsr.workflows import fit

    from conftest import tiny_run_config

    cfg = tiny_run_config(tmp_path / "fparec")
    cfg["model"] = ModelConfig(attention="positional", positional_rank=4, max_len=20, hidden_size=32, num_blocks=2, dropout=0.1)
    result = fit(**cfg, console=Console(quiet=True))
    assert result.metrics["test"]["ndcg@10"] > result.metrics["popularity"]["test"]["ndcg@10"] + 0.1
    top = Recommender.load(result.run_dir).recommend([1, 2, 3], k=4)
    assert len(top) == 4 and not {r.item for r in top} & {1, 2, 3}


def test_fixed_pattern_weights_are_built_once_per_forward_and_shared_by_the_blocks():
    from conftest import build_tiny

    model = build_tiny("sasrec", "linear", "none", num_blocks=3).eval()
    _, weights = model.encode(torch.tensor([[0, 0, 3, 4, 5, 6, 7, 8], [0, 0, 0, 0, 0, 2, 9, 4]]), need_weights=True)
    assert len({w.base.data_ptr() for w in weights}) == 1  # one tensor, not one per block
    again = build_tiny("sasrec", "linear", "none", num_blocks=3).eval()
    _, other = again.encode(torch.tensor([[0, 0, 0, 0, 0, 2, 9, 4]]), need_weights=True)
    assert torch.equal(weights[2].base[1], other[0].base[0])  # a row's weights, as computed alone
