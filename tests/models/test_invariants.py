"""Invariants every backbone x attention x refinement obeys (SPEC.md, "Invariants")."""

from contextlib import contextmanager

import pytest
import torch

from awrsr.nn.attention.calibrated import calibrated_layers, mask_norm, perturbed
from conftest import COMBINATIONS, build_tiny


def _histories() -> torch.Tensor:
    return torch.tensor([[0, 0, 0, 5, 6, 7, 8, 9], [1, 2, 3, 4, 5, 6, 7, 8], [0, 0, 0, 0, 0, 0, 0, 4]])


@COMBINATIONS
def test_causality(name, attention, refine):
    model = build_tiny(name, attention, refine).eval()
    if not model.causal:
        pytest.skip("bidirectional backbone")
    ids = _histories()
    changed = ids.clone()
    changed[:, 6:] = torch.tensor([11, 12])  # change the last two items
    with torch.no_grad():
        before, after = model(ids), model(changed)
    # Outputs at positions 0..5 must not see the change at 6..7.
    assert torch.allclose(before[:, :6], after[:, :6], atol=1e-6)
    assert not torch.allclose(before[:, 6:], after[:, 6:])


@COMBINATIONS
def test_padding_carries_nothing(name, attention, refine):
    """Whatever the padding embeddings hold, real outputs do not move, padded outputs are exactly
    zero, and a shorter input window gives the same real outputs."""
    model = build_tiny(name, attention, refine).eval()
    ids = torch.tensor([[0, 0, 0, 0, 0, 3, 4, 5]])
    with torch.no_grad():
        before = model(ids)
        for module in model.modules():
            if isinstance(module, torch.nn.Embedding) and module.padding_idx is not None:
                module.weight[module.padding_idx] = 10 * torch.randn(module.weight.shape[1])
        after = model(ids)
        short_window = model(ids[:, -4:])
    assert torch.isfinite(after).all()
    assert torch.allclose(before[0, -3:], after[0, -3:], atol=1e-5)
    assert torch.equal(after[0, :5], torch.zeros_like(after[0, :5]))
    assert torch.allclose(after[0, -3:], short_window[0, -3:], atol=1e-5)


@COMBINATIONS
def test_padding_amount_does_not_change_real_outputs(name, attention, refine):
    """Left padding of different lengths in one batch gives the same outputs as alone."""
    model = build_tiny(name, attention, refine).eval()
    a = torch.tensor([[0, 0, 0, 0, 7, 3, 4, 5]])
    b = torch.tensor([[0, 0, 0, 0, 0, 0, 1, 2]])
    with torch.no_grad():
        together = model(torch.cat([a, b]))
        assert torch.allclose(together[0], model(a)[0], atol=1e-6)
        assert torch.allclose(together[1], model(b)[0], atol=1e-6)


@COMBINATIONS
def test_weights_rows_sum_to_one_over_allowed_keys(name, attention, refine):
    model = build_tiny(name, attention, refine).eval()
    ids = _histories()
    with torch.no_grad():
        _, weights = model.encode(ids, need_weights=True)
    assert len(weights) == len(model.blocks)
    real = ids != 0
    for layer in weights:
        for w in (layer.base, layer.refined):
            assert w.shape == (3, model.blocks[0].attention.num_heads, 8, 8)
            assert (w >= 0).all()
            sums = w.sum(-1)  # (B, h, n)
            expected = real[:, None, :].expand_as(sums).float()  # 1 for real queries, 0 for padded
            assert torch.allclose(sums, expected, atol=1e-5)
            if model.causal:
                assert torch.equal(w.triu(1), torch.zeros_like(w))
            # no weight on padded keys
            assert torch.equal(w * (~real)[:, None, None, :], torch.zeros_like(w))


@COMBINATIONS
def test_fused_path_equals_explicit_path(name, attention, refine):
    fused = build_tiny(name, attention, refine, fused_attention=True).eval()
    explicit = build_tiny(name, attention, refine, fused_attention=False).eval()
    explicit.load_state_dict(fused.state_dict())
    ids = _histories()
    with torch.no_grad():
        assert torch.allclose(fused(ids), explicit(ids), atol=1e-5)
        # asking for the weights forces the explicit path; outputs must not change
        assert torch.allclose(fused(ids), fused.encode(ids, need_weights=True)[0], atol=1e-5)


@COMBINATIONS
def test_scores_cover_every_item_and_match_score_items(name, attention, refine):
    model = build_tiny(name, attention, refine).eval()
    ids = _histories()
    with torch.no_grad():
        scores = model.score_next(ids)
        assert scores.shape == (3, model.num_items)
        hidden = model.next_hidden(ids)
        items = torch.tensor([[1, 5, 20]] * 3)
        assert torch.allclose(model.score_items(hidden, items), scores[:, [0, 4, 19]], atol=1e-5)


@COMBINATIONS
def test_training_step_gives_finite_gradients(name, attention, refine):
    from awrsr.nn.losses import LOSSES

    model = build_tiny(name, attention, refine).train()
    ids = _histories()
    targets = torch.roll(ids, -1, dims=1).clamp(min=0)
    targets[:, -1] = 3
    targets[ids == 0] = 0
    loss = LOSSES.get("ce")(model, model(ids), targets)
    loss.backward()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads)


@COMBINATIONS
def test_every_parameter_serves(name, attention, refine):
    """Recommending reaches every parameter: none is dead weight (training-only parts are opt-in,
    like AC-TSR-lite's calibrators, tested in tests/nn/test_calibrated.py)."""
    from awrsr.models import served_parameters

    model = build_tiny(name, attention, refine)
    assert served_parameters(model, 8, 20) == sum(p.numel() for p in model.parameters())


@COMBINATIONS
def test_every_registered_part_accepts_a_narrow_window(name, attention, refine):
    """Each part declares ``window_invariant``; all of today's do (only the literal M_value, not
    among the registered defaults, cannot), so short histories never pay for max_len."""
    assert build_tiny(name, attention, refine).window_invariant


@COMBINATIONS
def test_narrow_window_gives_the_full_windows_outputs(name, attention, refine):
    """A batch whose longest history is 3 runs its blocks on 3 slots and gives the outputs of the
    full max_len window (which ``need_weights`` forces); outputs keep the caller's width."""
    model = build_tiny(name, attention, refine).eval()
    widths = []
    model.blocks[0].register_forward_pre_hook(lambda module, args: widths.append(args[0].shape[1]))
    ids = torch.tensor([[0, 0, 0, 0, 0, 3, 4, 5], [0, 0, 0, 0, 0, 0, 1, 2]])
    with torch.no_grad():
        narrow, _ = model.encode(ids)
        full, _ = model.encode(ids, need_weights=True)
        assert torch.allclose(narrow, full, atol=1e-5)
        assert torch.equal(narrow[:, :5], torch.zeros_like(narrow[:, :5]))
        assert model.encode(ids[:, -2:])[0].shape == (2, 2, narrow.shape[-1])  # a window narrower than the history
    assert widths == [3, 8, 2]


def _outputs_and_gradients(model, ids, full: bool, mode) -> tuple[torch.Tensor, dict, torch.Tensor]:
    model.zero_grad(set_to_none=True)
    with mode(model) as masks:
        out, _ = model.encode(ids, need_weights=full)
    penalty = mask_norm(masks) if masks is not None else torch.zeros(())
    weights = torch.linspace(-1, 1, out.numel()).view_as(out)  # any fixed function of all outputs
    ((out * weights).sum() + penalty).backward()
    grads = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
    return out.detach(), grads, penalty.detach()


@contextmanager
def _plain(model):
    yield None


@COMBINATIONS
@pytest.mark.parametrize("options", [{}, {"refine_per_head": True}, {"refine_blocks": [1]}], ids=["shared", "per-head", "block-1"])
def test_narrow_window_trains_like_the_full_window(name, attention, refine, options):
    """In training (dropout off, so both passes are deterministic): the same outputs and the same
    gradient for every parameter, and for AC-TSR also in the perturbed mode with its mask penalty."""
    if refine == "none" and options:
        pytest.skip("options of a refinement")
    model = build_tiny(name, attention, refine, dropout=0.0, **options).train()
    ids = torch.tensor([[0, 0, 0, 0, 0, 3, 4, 5], [0, 0, 0, 0, 0, 0, 1, 2]])
    modes = [_plain] + ([perturbed] if calibrated_layers(model) else [])
    for mode in modes:
        narrow = _outputs_and_gradients(model, ids, full=False, mode=mode)
        full = _outputs_and_gradients(model, ids, full=True, mode=mode)
        assert torch.allclose(narrow[0], full[0], atol=1e-5)
        assert narrow[1].keys() == full[1].keys()
        for key in full[1]:
            assert torch.allclose(narrow[1][key], full[1][key], atol=1e-5), key
        assert torch.allclose(narrow[2], full[2], atol=1e-5)


def test_the_literal_value_refinement_runs_the_full_window():
    model = build_tiny("bert4rec", "dot", "value", refine_value_form="literal").eval()
    assert not model.window_invariant
    widths = []
    model.blocks[0].register_forward_pre_hook(lambda module, args: widths.append(args[0].shape[1]))
    with torch.no_grad():
        model.encode(torch.tensor([[0, 0, 0, 0, 0, 3, 4, 5]]))
    assert widths == [8]
