"""model.refine_input: refinements acting on the paper's A, the scaled logits before the softmax
(AWRSR §2.2: A_kt = Q_k K_t^T / sqrt(d)), instead of the weights after it (SPEC.md's default)."""

import math

import pytest
import torch

from awrsr.errors import ConfigError, FieldValueError
from awrsr.models import ModelConfig, build_model
from awrsr.nn.masks import AttentionMask, masked_softmax
from awrsr.run_config import inert_options
from awrsr.train import TrainConfig

IDS = torch.tensor([[0, 0, 4, 5, 6], [1, 2, 3, 4, 5]])


def _first_attention(refine: str, refine_input: str, **options):
    """The first block's attention of a one-block SASRec whose refinement matrices are exact
    identities or zeros (``options``), its mask, and its normalised input."""
    cfg = ModelConfig(
        max_len=5, hidden_size=8, num_heads=2, num_blocks=1, dropout=0.0, refine=refine,
        refine_input=refine_input, refine_init_std=0.0, **options,
    )
    torch.manual_seed(0)
    model = build_model(cfg, num_items=10).eval()
    mask = AttentionMask.build(IDS, causal=True)
    x = torch.randn(2, 5, 8)
    return model.blocks[0].attention, mask, x


def _logits_and_values(attention, x):
    """Q K^T / sqrt(d_h) and V per head, from the module's own projections, by hand."""
    q, k, v = attention.qkv(x).view(2, 5, 3, 2, 4).permute(2, 0, 3, 1, 4)
    return q @ k.transpose(-2, -1) / math.sqrt(4), v


def test_simp_on_logits_is_eq2_on_the_masked_scaled_scores_by_hand():
    attention, mask, x = _first_attention("simp", "logits")
    logits, v = _logits_and_values(attention, x)
    a = logits.masked_fill(~mask.allowed, 0.0)  # later and padded keys 0, never their scores
    expected_weights = masked_softmax(a @ a.transpose(-2, -1) / math.sqrt(4), mask)  # W_RQ = W_RK = I
    with torch.no_grad():
        out, weights = attention(x, mask, need_weights=True)
        expected_out = attention.output((expected_weights @ v).transpose(1, 2).reshape(2, 5, 8))
    torch.testing.assert_close(weights.refined, expected_weights)
    torch.testing.assert_close(out, expected_out)
    # the inspected A stays the weights, whatever the refinement read
    torch.testing.assert_close(weights.base, masked_softmax(logits, mask))


def test_add_with_zero_matrices_on_logits_is_the_base_attention_at_temperature_two():
    """eq. 4 with W_RQ = W_RK = 0 leaves (0 + A) / 2: on logits that is softmax(QK^T / (2 sqrt(d_h)));
    on weights it would be softmax(A / 2) of the probabilities, a much flatter matrix."""
    attention, mask, x = _first_attention("add", "logits")
    with torch.no_grad():
        attention.refinement.query.zero_()
        attention.refinement.key.zero_()
        logits, _ = _logits_and_values(attention, x)
        _, weights = attention(x, mask, need_weights=True)
    torch.testing.assert_close(weights.refined, masked_softmax(logits / 2, mask))
    assert not torch.allclose(weights.refined, masked_softmax(weights.base / 2, mask), atol=1e-3)


@pytest.mark.parametrize("name,attention", [("sasrec", "dot"), ("stosa", "wasserstein"), ("sasrec", "positional"), ("sasrec", "linear")])
def test_the_input_changes_what_a_refined_model_computes(name, attention):
    """The same parameters give other outputs on logits than on weights, for every kind of
    logits (scores, distances, learned positions, a fixed pattern's log-weights)."""
    def outputs(refine_input):
        cfg = ModelConfig(
            name=name, max_len=5, hidden_size=8, num_heads=2, attention=attention, refine="simp", refine_input=refine_input,
        )
        torch.manual_seed(0)
        return build_model(cfg, num_items=10).eval()(IDS)

    with torch.no_grad():
        assert not torch.allclose(outputs("weights"), outputs("logits"), atol=1e-4)


@pytest.mark.parametrize("attention", ["calibrated", "average"])
def test_attentions_without_logits_to_refine_are_refused(attention):
    """Calibrated attention's A_comb mixes two softmaxes; Average's logits, log(1), are all 0."""
    with pytest.raises(ConfigError, match=f"model.refine_input 'logits'.*'{attention}' has none.*refine_input: weights"):
        build_model(ModelConfig(attention=attention, refine="simp", refine_input="logits"), num_items=10)
    # nothing refines the unrefined blocks, so they build
    build_model(ModelConfig(attention=attention, refine="none", refine_input="logits"), num_items=10)


def test_a_bad_input_is_a_field_error():
    with pytest.raises(FieldValueError, match="model.refine_input must be one of 'weights', 'logits', got 'scores'"):
        ModelConfig(refine_input="scores")


def test_the_option_is_inert_without_a_refinement_and_named_in_labels():
    assert inert_options(ModelConfig(refine_input="logits"), TrainConfig()) == {
        "model.refine_input": "a model.refine other than 'none'"}
    assert inert_options(ModelConfig(refine="add", refine_input="logits"), TrainConfig()) == {}
    assert ModelConfig(refine="add", refine_input="logits").label == "sasrec, dot attention, refined by add on logits"


@pytest.mark.parametrize("refine", ["simp", "add"])
def test_stosa_refined_on_logits_keeps_float32_accuracy_under_bf16_autocast(refine):
    """The products of unbounded distances amplify bf16 rounding: before STOSA's attention ran in
    float32 for a refinement on logits, bf16 autocast put its outputs 1.3% and its gradients 26%
    off float32 (M_simp here); on weights they are 0.2% and 3-5% off, as now on logits."""
    torch.manual_seed(0)
    cfg = ModelConfig(name="stosa", attention="wasserstein", refine=refine, refine_input="logits", max_len=24,
                      hidden_size=32, num_heads=2, dropout=0.0)
    model = build_model(cfg, num_items=50).train()
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(1, 51, (8, 24), generator=generator)
    ids[:4, :10] = 0
    direction = torch.randn(8, 24, 64, generator=generator)

    def outputs_and_gradients(autocast: bool):
        model.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            out = model(ids)
        (out.float() * direction).sum().backward()
        return out.float().detach(), torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])

    (out32, grad32), (out16, grad16) = outputs_and_gradients(False), outputs_and_gradients(True)
    assert ((out16 - out32).norm() / out32.norm()).item() < 6e-3
    assert ((grad16 - grad32).norm() / grad32.norm()).item() < 0.1
