"""The CPU dropout: F.dropout's distribution and gradient, drawn without the slow sampler."""

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

from awrsr.nn.dropout import Dropout, dropout
from conftest import COMBINATIONS, build_tiny


@pytest.mark.parametrize("p", [0.1, 0.5, 0.7])
def test_drops_a_fraction_p_and_scales_the_rest(p):
    torch.manual_seed(0)
    y = dropout(torch.ones(200_000), p)
    dropped = (y == 0).float().mean().item()
    assert abs(dropped - p) < 0.01
    assert torch.allclose(y[y != 0], torch.full_like(y[y != 0], 1 / (1 - p)))
    assert abs(y.mean().item() - 1.0) < 0.02  # the expectation is kept


def test_gradient_is_the_same_mask_times_the_scale():
    torch.manual_seed(1)
    x = torch.randn(64, 32, requires_grad=True)
    y = dropout(x, 0.3)
    y.backward(torch.ones_like(y))
    kept = y != 0
    assert torch.allclose(x.grad, kept.float() / 0.7)
    assert torch.allclose(y[kept], x.detach()[kept] / 0.7)


def test_identity_in_eval_and_at_zero():
    x = torch.randn(5, 7)
    assert dropout(x, 0.5, training=False) is x
    assert dropout(x, 0.0) is x
    module = Dropout(0.5).eval()
    assert module(x) is x
    assert torch.equal(dropout(x, 1.0), torch.zeros_like(x))


def test_same_seed_same_mask():
    x = torch.ones(1000)
    torch.manual_seed(3)
    a = dropout(x, 0.5)
    torch.manual_seed(3)
    assert torch.equal(a, dropout(x, 0.5))


@pytest.mark.parametrize("p", [-0.1, 1.5])
def test_rejects_an_impossible_probability(p):
    with pytest.raises(ValueError, match="dropout probability"):
        Dropout(p)
    with pytest.raises(ValueError, match="dropout probability"):
        dropout(torch.ones(3), p)


@COMBINATIONS
def test_training_step_never_uses_the_slow_sampler(name, attention, refine):
    """Every part drops out through nn/dropout.py: no ``bernoulli_`` in a CPU training step."""
    model = build_tiny(name, attention, refine, dropout=0.3).train()
    ids = torch.tensor([[0, 0, 0, 5, 6, 7, 8, 9], [1, 2, 3, 4, 5, 6, 7, 8]])
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        model(ids).sum().backward()
    ops = {event.key for event in prof.key_averages()}
    assert "aten::bernoulli_" not in ops
    assert "aten::rand_like" in ops or "aten::uniform_" in ops  # dropout did run


def test_bf16_inputs_keep_exactly_the_fraction_and_the_mean():
    """bf16 uniforms come in steps of 1/256 and would drop too much; the draw is in float32."""
    torch.manual_seed(2)
    y = dropout(torch.ones(1_000_000, dtype=torch.bfloat16), 0.1)
    assert y.dtype == torch.bfloat16
    assert abs((y == 0).float().mean().item() - 0.1) < 0.001
    assert abs(y.float().mean().item() - 1.0) < 0.003
