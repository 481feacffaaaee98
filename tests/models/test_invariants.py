"""Invariants every backbone x attention x refinement obeys (SPEC.md, "Invariants")."""

from contextlib import contextmanager

import pytest
import torch

from awrsr.nn.attention.calibrated import calibrated_layers, mask_norm, perturbed
from conftest import COMBINATIONS, PARAMETERS, assert_close, build_tiny, split_refine


def _histories() -> torch.Tensor:
    return torch.tensor([[0, 0, 0, 5, 6, 7, 8, 9], [1, 2, 3, 4, 5, 6, 7, 8], [0, 0, 0, 0, 0, 0, 0, 4]])


# Causality and the weights' rows are checked in both modes: a part may attend differently while
# training (AC-TSR-lite calibrates only then), and a leak of later items while training is the
# worst one, since the target is the next item. Dropout is off in training mode, so that the two
# passes compared draw no different masks; causality is checked with dropout on too, the two
# passes seeded alike, since a part may take another path only then (the fused kernel with
# dropout, say, where a forgotten mask would leak; session 49's probe planted three such leaks).
MODES = pytest.mark.parametrize("mode", ["eval", "train"])


def _build_in_mode(name, attention, refine, parameters, mode):
    if mode == "eval":
        return build_tiny(name, attention, refine, parameters).eval()
    if mode == "train-dropout":
        return build_tiny(name, attention, refine, parameters, dropout=0.3).train()
    return build_tiny(name, attention, refine, parameters, dropout=0.0).train()


def _seeded(model, ids):
    """The model's outputs with the random numbers of every call alike (dropout's masks)."""
    torch.manual_seed(5)
    return model(ids)


@COMBINATIONS
@PARAMETERS
@pytest.mark.parametrize("mode", ["eval", "train", "train-dropout"])
def test_causality(name, attention, refine, parameters, mode):
    model = _build_in_mode(name, attention, refine, parameters, mode)
    if not model.causal:
        pytest.skip("bidirectional backbone")
    ids = _histories()
    changed = ids.clone()
    changed[:, 6:] = torch.tensor([11, 12])  # change the last two items
    with torch.no_grad():
        before, after = _seeded(model, ids), _seeded(model, changed)
    # Outputs at positions 0..5 must not see the change at 6..7.
    assert_close(after[:, :6], before[:, :6], "outputs at positions 0..5 after changing the items at 6..7", atol=1e-6)
    assert not torch.allclose(before[:, 6:], after[:, 6:]), "the changed items moved no output at all"


@COMBINATIONS
@PARAMETERS
def test_padding_carries_nothing(name, attention, refine, parameters):
    """Whatever the padding embeddings hold, real outputs do not move, padded outputs are exactly
    zero, and a shorter input window gives the same real outputs."""
    model = build_tiny(name, attention, refine, parameters).eval()
    ids = torch.tensor([[0, 0, 0, 0, 0, 3, 4, 5]])
    with torch.no_grad():
        before = model(ids)
        for module in model.modules():
            if isinstance(module, torch.nn.Embedding) and module.padding_idx is not None:
                module.weight[module.padding_idx] = 10 * torch.randn(module.weight.shape[1])
        after = model(ids)
        short_window = model(ids[:, -4:])
    assert torch.isfinite(after).all(), "non-finite outputs"
    assert_close(after[0, -3:], before[0, -3:], "real outputs after changing the padding embeddings")
    assert torch.equal(after[0, :5], torch.zeros_like(after[0, :5])), "padded positions' outputs are not zero"
    assert_close(short_window[0, -3:], after[0, -3:], "real outputs of a 4-slot window against the 8-slot one")


@COMBINATIONS
@PARAMETERS
def test_padding_amount_does_not_change_real_outputs(name, attention, refine, parameters):
    """Left padding of different lengths in one batch gives the same outputs as alone."""
    model = build_tiny(name, attention, refine, parameters).eval()
    a = torch.tensor([[0, 0, 0, 0, 7, 3, 4, 5]])
    b = torch.tensor([[0, 0, 0, 0, 0, 0, 1, 2]])
    with torch.no_grad():
        together = model(torch.cat([a, b]))
        assert_close(together[0], model(a)[0], "history a in a batch with b against a alone", atol=1e-6)
        assert_close(together[1], model(b)[0], "history b in a batch with a against b alone", atol=1e-6)


@COMBINATIONS
@PARAMETERS
@MODES
def test_weights_rows_sum_to_one_over_allowed_keys(name, attention, refine, parameters, mode):
    model = _build_in_mode(name, attention, refine, parameters, mode)
    ids = _histories()
    with torch.no_grad():
        _, weights = model.encode(ids, need_weights=True)
    assert len(weights) == len(model.blocks)
    real = ids != 0
    for index, layer in enumerate(weights):
        for kind, w in (("A", layer.base), ("B", layer.refined)):
            what = f"layer {index}'s {kind} (batch, head, query, key)"
            assert w.shape[:2] == (3, model.blocks[0].attention.num_heads) and w.shape[2:] == (8, 8), what
            assert (w >= 0).all(), f"{what}: negative weights"
            sums = w.sum(-1)  # (B, h, n)
            expected = real[:, None, :].expand_as(sums).float()  # 1 for real queries, 0 for padded
            assert_close(sums, expected, f"row sums of {what}")
            if model.causal:  # nothing right of the diagonal: no query sees a later key
                assert_close(w.triu(1), torch.zeros_like(w), f"{what} right of the diagonal", atol=0)
            assert_close(w * (~real)[:, None, None, :], torch.zeros_like(w), f"{what} on padded keys", atol=0)


@COMBINATIONS
@PARAMETERS
def test_fused_path_equals_explicit_path(name, attention, refine, parameters, monkeypatch):
    fused = build_tiny(name, attention, refine, parameters, fused_attention=True).eval()
    explicit = build_tiny(name, attention, refine, parameters, fused_attention=False).eval()
    explicit.load_state_dict(fused.state_dict())
    ids = _histories()
    kernel_calls = []
    kernel = torch.nn.functional.scaled_dot_product_attention
    monkeypatch.setattr(
        torch.nn.functional, "scaled_dot_product_attention", lambda *a, **k: kernel_calls.append(1) or kernel(*a, **k)
    )
    with torch.no_grad():
        explicit_out = explicit(ids)
        assert not kernel_calls, "fused_attention=False still ran the fused kernel"
        fused_out = fused(ids)
        # The fused kernel cannot refine weights; of the parts awrsr ships, only dot-product
        # attention with nothing refining it fuses (a part added later may fuse or not).
        if not all(block.attention.refinement.is_identity for block in fused.blocks):
            assert not kernel_calls, f"refined weights, yet the fused kernel ran {len(kernel_calls)} time(s)"
        if attention in SHIPPED_ATTENTIONS and split_refine(refine)[0] in SHIPPED_REFINEMENTS:
            fuses = attention == "dot" and refine == "none"
            assert bool(kernel_calls) == fuses, f"fused kernel calls: {len(kernel_calls)}"
        assert_close(fused_out, explicit_out, "fused path against the explicit one")
        # asking for the weights forces the explicit path; outputs must not change
        assert_close(fused.encode(ids, need_weights=True)[0], fused(ids), "outputs with the weights asked for")


_MODULE_INTERNALS = set(vars(torch.nn.Module()))  # _parameters, _buffers, _modules, hooks...


def _unregistered_trainables(model: torch.nn.Module) -> list[str]:
    """Attributes holding tensors that want gradients outside the modules' registries (a plain
    tensor made with requires_grad, parameters in a list or dict that is no ParameterList/Dict):
    never trained by the optimiser, never saved, and on another device than the model's."""
    found = []
    for module_name, module in model.named_modules():
        for attribute, value in vars(module).items():
            if attribute in _MODULE_INTERNALS:
                continue
            held = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else [value]
            if any(isinstance(item, torch.Tensor) and item.requires_grad for item in held):
                found.append(f"{module_name or 'model'}.{attribute}")
    return found


@COMBINATIONS
def test_every_trainable_tensor_is_a_registered_parameter(name, attention, refine):
    model = build_tiny(name, attention, refine)
    assert not _unregistered_trainables(model), (
        f"tensors with requires_grad outside nn.Parameter / ParameterList / ParameterDict: {_unregistered_trainables(model)}"
    )


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
def test_the_next_hidden_state_is_the_last_slot_of_the_forward_pass(name, attention, refine):
    # next_hidden finalises the last slot alone; it must be exactly what forward gives there,
    # on full windows, padded ones, windows narrower than max_len and a history of padding only.
    model = build_tiny(name, attention, refine, "random").eval()
    ids = torch.cat([_histories(), torch.zeros(1, 8, dtype=torch.long)])
    with torch.no_grad():
        for window in (ids, ids[:, -3:]):
            inputs = model.next_inputs(window)
            assert torch.equal(model.next_hidden(window), model(inputs)[:, -1])


@COMBINATIONS
@PARAMETERS
def test_training_step_gives_finite_gradients(name, attention, refine, parameters):
    from awrsr.nn.losses import LOSSES

    model = build_tiny(name, attention, refine, parameters).train()
    ids = _histories()
    targets = torch.roll(ids, -1, dims=1).clamp(min=0)
    targets[:, -1] = 3
    targets[ids == 0] = 0
    loss = LOSSES.get("ce")(model, model(ids), targets)
    loss.backward()
    grads = {key: p.grad for key, p in model.named_parameters() if p.grad is not None}
    assert grads, "no parameter got a gradient"
    bad = [key for key, g in grads.items() if not torch.isfinite(g).all()]
    assert not bad, f"non-finite gradients of {bad}"


@COMBINATIONS
def test_every_parameter_serves(name, attention, refine):
    """Recommending reaches every parameter: none is dead weight (training-only parts are opt-in,
    like AC-TSR-lite's calibrators, tested in tests/nn/test_calibrated.py)."""
    from awrsr.models import served_parameters

    model = build_tiny(name, attention, refine)
    if served_parameters(model, 8, 20) != sum(p.numel() for p in model.parameters()):
        model.eval().score_next(torch.tensor([[0, 0, 0, 0, 5, 6, 7, 8], [1, 2, 3, 4, 5, 6, 7, 8]])).sum().backward()
        unused = [key for key, p in model.named_parameters() if p.grad is None]
        pytest.fail(f"recommending reaches no gradient to {unused or 'some parameters (on other histories)'}")
    assert model.training and all(p.grad is None for p in model.parameters())  # left as it was found
    assert not model.eval().training and served_parameters(model, 8, 20) and not model.training


@COMBINATIONS
def test_a_window_wider_than_max_len_is_a_clear_error(name, attention, refine):
    model = build_tiny(name, attention, refine).eval()  # max_len 8
    with pytest.raises(ValueError, match="input window 9 is longer than the model's max_len 8"):
        model(torch.arange(1, 10)[None])


# The parts awrsr ships, which all declare window_invariant, so that short histories never pay
# for max_len. A part added later may leave it off (correct, only slower): the tests below then
# check that it runs the full window.
SHIPPED_ATTENTIONS = {"dot", "wasserstein", "positional", "average", "linear", "exponential", "calibrated"}
SHIPPED_REFINEMENTS = {"none", "simp", "value", "add", "stoc"}


@COMBINATIONS
def test_every_shipped_part_accepts_a_narrow_window(name, attention, refine):
    """(The literal M_value, not among the registered defaults, cannot: tested below.)"""
    if attention not in SHIPPED_ATTENTIONS or refine not in SHIPPED_REFINEMENTS:
        pytest.skip("a part added later may leave window_invariant off")
    assert build_tiny(name, attention, refine).window_invariant


@COMBINATIONS
@PARAMETERS
def test_narrow_window_gives_the_full_windows_outputs(name, attention, refine, parameters):
    """A batch whose longest history is 3 runs its blocks on 3 slots (when every part declares
    ``window_invariant``; else on all 8) and gives the outputs of the full max_len window (which
    ``need_weights`` forces); outputs keep the caller's width."""
    model = build_tiny(name, attention, refine, parameters).eval()
    widths = []
    model.blocks[0].register_forward_pre_hook(lambda module, args: widths.append(args[0].shape[1]))
    ids = torch.tensor([[0, 0, 0, 0, 0, 3, 4, 5], [0, 0, 0, 0, 0, 0, 1, 2]])
    with torch.no_grad():
        narrow, _ = model.encode(ids)
        full, _ = model.encode(ids, need_weights=True)
        assert_close(narrow, full, "outputs of the 3-slot window against the full one")
        assert torch.equal(narrow[:, :5], torch.zeros_like(narrow[:, :5])), "padded positions' outputs are not zero"
        assert model.encode(ids[:, -2:])[0].shape == (2, 2, narrow.shape[-1])  # a window narrower than the history
    assert widths == ([3, 8, 2] if model.window_invariant else [8, 8, 8])


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
        what = f"({mode.__name__.strip('_')} mode) the narrow window against the full one"
        assert_close(narrow[0], full[0], f"outputs {what}")
        assert narrow[1].keys() == full[1].keys(), (
            f"parameters with a gradient {what}: only narrow {sorted(narrow[1].keys() - full[1].keys())}, "
            f"only full {sorted(full[1].keys() - narrow[1].keys())}"
        )
        for key in full[1]:
            assert_close(narrow[1][key], full[1][key], f"the gradient of {key} {what}")
        assert_close(narrow[2], full[2], f"the loss {what}")


def test_the_literal_value_refinement_runs_the_full_window():
    model = build_tiny("bert4rec", "dot", "value", refine_value_form="literal").eval()
    assert not model.window_invariant
    widths = []
    model.blocks[0].register_forward_pre_hook(lambda module, args: widths.append(args[0].shape[1]))
    with torch.no_grad():
        model.encode(torch.tensor([[0, 0, 0, 0, 0, 3, 4, 5]]))
    assert widths == [8]
