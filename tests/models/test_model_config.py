"""ModelConfig's own checks: an impossible value is a ConfigError naming the field, the edge values
just inside each range are accepted, and the defaults that depend on other fields resolve as
documented."""

import pytest
import torch

from awrsr.errors import ConfigError, UnknownNameError
from awrsr.models import ModelConfig, build_model


@pytest.mark.parametrize("options, message", [
    (dict(max_len=0), r"model.max_len must be >= 1, got 0"),
    (dict(hidden_size=0), r"model.hidden_size must be >= 1, got 0"),
    (dict(num_heads=0), r"model.num_heads must be >= 1, got 0"),
    (dict(num_blocks=0), r"model.num_blocks must be >= 1, got 0"),
    (dict(hidden_size=64, num_heads=3), r"model.hidden_size \(64\) must be divisible by model.num_heads \(3\)"),
    (dict(hidden_size=6, num_heads=4), r"model.hidden_size \(6\) must be divisible by model.num_heads \(4\)"),
    # dropout 1.0 drops everything: the scale 1 / (1 - p) divides by zero
    (dict(dropout=1.0), r"model.dropout must be in \[0, 1\), got 1.0"),
    (dict(dropout=-0.1), r"model.dropout must be in \[0, 1\), got -0.1"),
    (dict(attn_dropout=1.0), r"model.attn_dropout must be in \[0, 1\), got 1.0"),
    (dict(norm_eps=0.0), r"model.norm_eps must be > 0, got 0.0"),
    (dict(refine="simp", refine_init_std=-0.01), r"model.refine_init_std must be >= 0, got -0.01"),
    # a negative index would refine a block counted from the end, which no config means
    (dict(num_blocks=2, refine="simp", refine_blocks=[-1]), r"model.refine_blocks \[-1\] out of range: blocks are 0..1"),
    (dict(name="bert4rec", mask_prob=1.0), r"model.mask_prob must be in \(0, 1\), got 1.0"),
    (dict(name="bert4rec", mask_prob=0.0), r"model.mask_prob must be in \(0, 1\), got 0.0"),
    (dict(inner_size=0), r"model.inner_size must be >= 1, got 0"),
])
def test_an_impossible_value_is_a_config_error_naming_the_field(options, message):
    with pytest.raises(ConfigError, match=f"^{message}$"):
        ModelConfig(**options)


def test_the_values_at_the_edge_of_each_range_are_accepted():
    ModelConfig(max_len=1, hidden_size=1, num_heads=1, num_blocks=1, inner_size=1)
    ModelConfig(hidden_size=8, num_heads=8)
    ModelConfig(dropout=0.0, attn_dropout=0.0, norm_eps=1e-12)
    ModelConfig(dropout=0.999, attn_dropout=0.999)
    ModelConfig(refine="simp", refine_init_std=0.0, num_blocks=3, refine_blocks=[0, 2])
    ModelConfig(name="bert4rec", mask_prob=0.999)
    ModelConfig(name="bert4rec", mask_prob=0.001)


@pytest.mark.parametrize("field, value, kind, known", [
    ("name", "SASRec", "model", "sasrec"), ("attention", "Dot", "attention", "dot"), ("refine", "Simp", "refinement", "simp"),
    ("name", "gru4rec", "model", "sasrec"), ("refine", "magic", "refinement", "simp"),
])
def test_a_part_is_named_exactly_as_registered(field, value, kind, known):
    """Names are exact: a name in other letters is refused at once with the known ones, not
    accepted here and refused (or taken for another part) when the model is built."""
    with pytest.raises(UnknownNameError, match=f"^model.{field}: unknown {kind} '{value}'; known: .*\\b{known}\\b"):
        ModelConfig(**{field: value})


def test_attn_dropout_falls_back_to_dropout_only_when_it_is_null():
    assert ModelConfig(dropout=0.3).effective_attn_dropout == 0.3
    assert ModelConfig(dropout=0.3, attn_dropout=0.1).effective_attn_dropout == 0.1
    # 0.0 is a setting (no dropout on the weights), not "unset": it must not become 0.3
    model = build_model(ModelConfig(dropout=0.3, attn_dropout=0.0, hidden_size=8, num_blocks=1), num_items=10)
    assert model.blocks[0].attention.attn_dropout == 0.0


@pytest.mark.parametrize("backbone", [{}, dict(name="stosa", attention="wasserstein")])
def test_inner_size_sets_the_feed_forward_width_and_null_means_hidden_size(backbone):
    def widths(**options):
        block = build_model(ModelConfig(hidden_size=8, num_blocks=1, **backbone, **options), num_items=10).blocks[0]
        networks = [block.feed_forward.mean, block.feed_forward.cov] if backbone else [block.feed_forward]
        return {(ffn.net[0].in_features, ffn.net[0].out_features, ffn.net[-1].out_features) for ffn in networks}

    assert widths(inner_size=24) == {(8, 24, 8)}  # STOSA: each stream's network
    assert widths() == {(8, 8, 8)}


@pytest.mark.parametrize("backbone", [{}, dict(name="bert4rec"), dict(name="stosa", attention="wasserstein")])
def test_every_layer_norm_takes_norm_eps(backbone):
    model = build_model(ModelConfig(hidden_size=8, num_blocks=2, norm_eps=1e-3, **backbone), num_items=10)
    norms = [m for m in model.modules() if isinstance(m, torch.nn.LayerNorm)]
    assert len(norms) >= 5 and {m.eps for m in norms} == {1e-3}  # final norm, 2 per block (STOSA: per stream)
