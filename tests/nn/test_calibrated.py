"""Calibrated attention (AC-TSR): the weights, the adversarial training step, the lite variant."""

import math

import lightning as L
import pytest
import torch
import torch.nn.functional as F
from rich.console import Console

from awrsr.errors import ConfigError
from awrsr.models import ModelConfig, build_model
from awrsr.nn.attention.calibrated import (
    CalibratedAttention, calibrated_layers, mask_norm, perturb, perturbation_parameters, perturbed,
)
from awrsr.nn.losses import LOSSES
from awrsr.nn.masks import AttentionMask
from awrsr.nn.refine import REFINEMENTS
from awrsr.train import TrainConfig
from awrsr.train.callbacks import GradientNorm
from awrsr.train.module import SequentialRecommenderModule

from conftest import build_tiny, tiny_run_config, assert_close

HISTORIES = torch.tensor([[0, 0, 0, 5, 6, 7, 8, 9], [1, 2, 3, 4, 5, 6, 7, 8], [0, 0, 0, 0, 0, 0, 0, 4]])


def _targets(ids: torch.Tensor) -> torch.Tensor:
    targets = torch.roll(ids, -1, dims=1).clamp(min=0)
    targets[:, -1] = 3
    targets[ids == 0] = 0
    return targets


def _randomise_calibrators(model: torch.nn.Module, seed: int = 1) -> None:
    """Non-zero calibrator parameters, so that no term hides behind its zero start."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for layer in calibrated_layers(model):
            for name in ("order_query", "order_key", "order_bias", "distance_query", "distance_key",
                         "distance_bias", "gate_weight", "gate_bias"):
                param = getattr(layer, name)
                param.copy_(torch.randn(param.shape, generator=generator))
            layer.theta.fill_(0.7)


def _check_invariants(w: torch.Tensor, ids: torch.Tensor, causal: bool, what: str = "weights (batch, head, query, key)") -> None:
    real = ids != 0
    assert torch.isfinite(w).all(), f"{what}: non-finite at {torch.nonzero(~torch.isfinite(w))[:3].tolist()}"
    assert (w >= 0).all(), f"{what}: negative at {torch.nonzero(w < 0)[:3].tolist()}"
    sums = w.sum(-1)  # (B, h, n)
    assert_close(sums, real[:, None, :].expand_as(sums).float(), f"row sums of {what}")
    assert_close(w * (~real)[:, None, None, :], torch.zeros_like(w), f"{what} on padded keys", atol=0)
    if causal:
        assert_close(w.triu(1), torch.zeros_like(w), f"{what} right of the diagonal", atol=0)


# --- the weights ------------------------------------------------------------------------------


def _reference_weights(layer: CalibratedAttention, x: torch.Tensor, mask: AttentionMask):
    """A_s, M, A_p, A_c and A_comb of one layer written out as in the paper, with the explicit
    concatenation [q_i; k_j] and A_s * e^(1 - M) / row sum."""
    B, n, d = x.shape
    h, dh = layer.num_heads, layer.head_size
    Q, K, _ = layer.qkv(x).split(d, dim=-1)  # (B, n, d)
    q = Q.view(B, n, h, dh).transpose(1, 2)
    k = K.view(B, n, h, dh).transpose(1, 2)
    pair = torch.cat([q[..., :, None, :].expand(B, h, n, n, dh), k[..., None, :, :].expand(B, h, n, n, dh)], -1)
    w_order = torch.cat([layer.order_query, layer.order_key], -1)  # (h, 2 dh)
    w_distance = torch.cat([layer.distance_query, layer.distance_key], -1)
    o_hat = torch.sigmoid(torch.einsum("bhijc,hc->bhij", pair, w_order) + layer.order_bias[:, None, None])
    d_hat = torch.einsum("bhijc,hc->bhij", pair, w_distance) + layer.distance_bias[:, None, None]
    i = torch.arange(n)[:, None].float()
    j = torch.arange(n)[None, :].float()
    o = (i < j).float()
    dist = torch.log(1 + (i - j).abs())
    s_o = o * torch.log(o_hat) + (1 - o) * torch.log(1 - o_hat)
    s_d = -layer.theta**2 * (dist - d_hat) ** 2 / 2
    allowed = mask.allowed.expand(B, h, n, n)
    logits = (q @ k.transpose(-2, -1) / math.sqrt(dh) + s_o + s_d).masked_fill(~allowed, -math.inf)
    a_s = torch.nan_to_num(logits.softmax(-1))  # padded queries: all -inf -> NaN -> 0
    qp = layer.perturb_query(Q).view(B, n, h, dh).transpose(1, 2)
    kp = layer.perturb_key(K).view(B, n, h, dh).transpose(1, 2)
    m = torch.sigmoid(qp @ kp.transpose(-2, -1) / math.sqrt(dh))
    uniform = allowed.float() / allowed.float().sum(-1, keepdim=True).clamp(min=1)
    a_p = m * a_s + (1 - m) * uniform
    a_p = a_p / a_p.sum(-1, keepdim=True).clamp(min=1e-30)
    a_c = a_s * torch.exp(1 - m)
    a_c = a_c / a_c.sum(-1, keepdim=True).clamp(min=1e-30)
    g = torch.sigmoid(q @ layer.gate_weight[:, :, None] + layer.gate_bias[:, None, None])  # (B, h, n, 1)
    return a_s, a_p, a_c, g * a_s + (1 - g) * a_c


def test_weights_match_the_papers_equations_written_out():
    torch.manual_seed(0)
    layer = CalibratedAttention(
        hidden_size=8, num_heads=2, attn_dropout=0.0, refinement=REFINEMENTS.get("none")(ModelConfig(), 0)
    )
    _randomise_calibrators(layer)
    x = torch.randn(3, 8, 8)
    mask = AttentionMask.build(HISTORIES, causal=False)
    a_s, a_p, a_c, a_comb = _reference_weights(layer, x, mask)
    _, w = layer(x, mask, need_weights=True)
    assert torch.allclose(w.base, a_s, atol=1e-6)
    assert torch.allclose(w.refined, a_comb, atol=1e-6)
    with perturbed(layer):
        _, w = layer(x, mask, need_weights=True)
    assert torch.allclose(w.refined, a_p, atol=1e-6)
    with torch.no_grad():
        layer.gate_weight.zero_()
        layer.gate_bias.fill_(-1e4)  # g = 0: the layer attends with A_c alone
    _, w = layer(x, mask, need_weights=True)
    assert torch.allclose(w.refined, a_c, atol=1e-6)
    assert not torch.allclose(a_c, a_s, atol=1e-3) and not torch.allclose(a_p, a_s, atol=1e-3)


@pytest.mark.parametrize("name", ["sasrec", "bert4rec"])
@pytest.mark.parametrize("refine", REFINEMENTS.names())
def test_every_weight_matrix_keeps_the_invariants_in_both_modes(name, refine):
    model = build_tiny(name, "calibrated", refine).train()
    _randomise_calibrators(model)
    causal = model.causal
    with torch.no_grad():
        _, calibrated = model.encode(HISTORIES, need_weights=True)
        with perturbed(model) as masks:
            _, perturbed_weights = model.encode(HISTORIES, need_weights=True)
        for layer in calibrated_layers(model):  # A_c alone: g = 0
            layer.gate_weight.zero_()
            layer.gate_bias.fill_(-1e4)
        _, calibrated_only = model.encode(HISTORIES, need_weights=True)
    assert len(masks) == len(model.blocks)
    assert all(layer.mode == "calibrated" and layer.mask_sink is None for layer in calibrated_layers(model))
    for mode, weights in (("calibrated", calibrated), ("perturbed", perturbed_weights), ("A_c alone", calibrated_only)):
        assert len(weights) == len(model.blocks)
        for index, layer in enumerate(weights):
            for kind, w in (("A", layer.base), ("B", layer.refined)):
                _check_invariants(w, HISTORIES, causal, f"{mode}: layer {index}'s {kind} (batch, head, query, key)")
    # the modes differ: A_p is not A_comb
    assert not torch.allclose(calibrated[0].refined, perturbed_weights[0].refined, atol=1e-4)


def test_a_float64_model_gets_its_distance_target_in_float64():
    model = build_tiny("sasrec", "calibrated", "none").double()
    _randomise_calibrators(model)
    layer = calibrated_layers(model)[0]
    generator = torch.Generator().manual_seed(3)
    q, k = (torch.randn(1, layer.num_heads, 60, layer.head_size, generator=generator, dtype=torch.float64) for _ in "qk")
    index = torch.arange(60, dtype=torch.float64)
    distance = torch.log1p((index[:, None] - index[None, :]).abs())  # eq. 7 in float64
    d_hat = (
        torch.einsum("bhnd,hd->bhn", q, layer.distance_query)[..., :, None]
        + torch.einsum("bhnd,hd->bhn", k, layer.distance_key)[..., None, :] + layer.distance_bias[:, None, None]
    )
    order_only = layer.spatial_scores(q, k) + 0.5 * layer.theta**2 * (distance - d_hat) ** 2
    with torch.no_grad():
        layer.theta.zero_()  # the same scores without the distance term
        assert torch.allclose(order_only, layer.spatial_scores(q, k), rtol=0, atol=1e-11)


def test_the_spatial_calibrator_starts_from_its_priors():
    """At initialisation o^ = 1/2 for every pair (no order preference) and d^ = 0 with theta = 1, so
    the spatial term is ln(1/2) - ln(1 + |i - j|)^2 / 2 whatever the queries and keys (docs/ac-tsr.md)."""
    layer = calibrated_layers(build_tiny("sasrec", "calibrated", "none"))[0]
    q, k = torch.randn(2, 2, 5, 8), torch.randn(2, 2, 5, 8)
    gap = (torch.arange(5)[:, None] - torch.arange(5)[None, :]).abs().float()
    expected = math.log(0.5) - 0.5 * torch.log1p(gap) ** 2  # (5, 5): 0 and 1 apart: -0.693, -0.933
    with torch.no_grad():
        scores = layer.spatial_scores(q, k)
    assert torch.allclose(scores, expected.expand_as(scores), atol=1e-6)


def test_perturb_mixes_with_the_uniform_distribution_over_allowed_keys():
    allowed = torch.tensor([[True, True, False], [True, True, True], [False, False, False]])
    a = torch.tensor([[0.8, 0.2, 0.0], [0.2, 0.3, 0.5], [0.0, 0.0, 0.0]])
    assert torch.allclose(perturb(a, torch.ones(3, 3), allowed), a)  # M = 1: untouched
    assert torch.allclose(perturb(a, torch.zeros(3, 3), allowed), allowed / allowed.sum(-1, keepdim=True).clamp(min=1))
    keep = torch.tensor([[0.9, 0.1, 0.5], [0.3, 0.6, 0.9], [0.5, 0.5, 0.5]])
    mixed = keep * a + (1 - keep) * torch.tensor([[0.5, 0.5, 0.0], [1 / 3] * 3, [0.0] * 3])
    expected = mixed / mixed.sum(-1, keepdim=True).clamp(min=1e-30)
    assert torch.allclose(perturb(a, keep, allowed), expected)
    assert torch.equal(perturb(a, keep, allowed)[2], torch.zeros(3))


def test_mask_norm_by_hand_and_independent_of_batch_size():
    allowed = AttentionMask.build(torch.tensor([[0, 1, 2], [3, 4, 5]]), causal=True).allowed  # 3 and 6 pairs
    keep = torch.full((2, 2, 3, 3), 0.5)  # (B, h, n, n)
    keep[:, :, 0, 2] = 0.0  # a forbidden (future) pair: not counted
    one_layer = (math.sqrt(2 * 3 * 0.25) + math.sqrt(2 * 6 * 0.25)) / 2  # per-sequence norms, batch mean
    assert mask_norm([(keep, allowed)] * 2).item() == pytest.approx(2 * one_layer)  # summed over layers
    doubled = [(torch.cat([keep, keep]), torch.cat([allowed, allowed]))]
    assert mask_norm(doubled).item() == pytest.approx(one_layer)


def test_perturbed_mode_leaves_padded_queries_out_on_any_padding():
    """The one-pass causal mask gives padded queries keys when the padding is not on the left;
    A_p and the mask norm read the mask itself, so they take the real queries' rows only."""
    torch.manual_seed(0)
    layer = CalibratedAttention(
        hidden_size=8, num_heads=2, attn_dropout=0.0, refinement=REFINEMENTS.get("none")(ModelConfig(), 0)
    )
    _randomise_calibrators(layer)
    ids = torch.tensor([[3, 4, 0, 5], [0, 6, 0, 7]])  # holes and right padding
    mask = AttentionMask.build(ids, causal=True)
    x = torch.randn(2, 4, 8)
    with perturbed(layer) as masks:
        _, w = layer(x, mask, need_weights=True)
    padded = ids == 0
    assert torch.equal(w.refined.transpose(1, 2)[padded], torch.zeros(int(padded.sum()), 2, 4))
    (_, allowed), = masks
    lower = torch.ones(4, 4, dtype=torch.bool).tril()
    assert torch.equal(allowed, (ids != 0)[:, None, :, None] & (ids != 0)[:, None, None, :] & lower)


def test_theta_and_every_calibrator_receive_gradient():
    model = build_tiny("sasrec", "calibrated", "none").train()
    loss = LOSSES.get("ce")(model, model(HISTORIES), _targets(HISTORIES))
    loss.backward()
    layer = calibrated_layers(model)[0]
    assert layer.theta.grad is not None and layer.theta.grad.abs() > 0
    for name in ("distance_key", "order_key", "gate_weight", "gate_bias"):
        assert getattr(layer, name).grad.abs().sum() > 0, name
    second = calibrated_layers(model)[1]
    assert perturbation_parameters(model) == [
        layer.perturb_query.weight, layer.perturb_key.weight, second.perturb_query.weight, second.perturb_key.weight
    ]
    assert all(p.grad.abs().sum() > 0 for p in perturbation_parameters(model))  # through A_c


def test_every_calibrator_of_every_layer_receives_gradient_once_away_from_its_start():
    # At the start some terms sit behind a zero (their gradients are ~1e-8); moved, every one counts.
    model = build_tiny("sasrec", "calibrated", "none").train()
    _randomise_calibrators(model)
    LOSSES.get("ce")(model, model(HISTORIES), _targets(HISTORIES)).backward()
    layers = calibrated_layers(model)
    assert len(layers) == 2
    for index, layer in enumerate(layers):
        for name in ("theta", "order_query", "order_key", "order_bias", "distance_query", "distance_key",
                     "distance_bias", "gate_weight", "gate_bias"):
            grad = getattr(layer, name).grad
            assert grad is not None and grad.abs().sum() > 1e-6, f"layer {index} {name}"


# --- the lite variant ----------------------------------------------------------------------------


def test_lite_model_in_eval_mode_is_plain_dot_product_attention(monkeypatch):
    plain = build_tiny("sasrec", "dot", "none", dropout=0.0)
    lite = build_tiny("sasrec", "calibrated", "none", dropout=0.0, ac_lite=True)
    missing, unexpected = lite.load_state_dict(plain.state_dict(), strict=False)
    assert not unexpected  # same names for the shared parts, position embedding included
    calibrators = {"order_query", "order_key", "order_bias", "distance_query", "distance_key", "distance_bias",
                   "theta", "perturb_query.weight", "perturb_key.weight", "gate_weight", "gate_bias"}
    assert {key.split("attention.", 1)[1] for key in missing} == calibrators
    _randomise_calibrators(lite)

    fused_calls = []
    kernel = F.scaled_dot_product_attention
    monkeypatch.setattr(F, "scaled_dot_product_attention", lambda *a, **k: fused_calls.append(1) or kernel(*a, **k))
    with torch.no_grad():
        expected = plain.eval()(HISTORIES)
        fused_calls.clear()
        got = lite.eval()(HISTORIES)
        assert fused_calls  # the fused kernel serves the lite model
        assert torch.allclose(got, expected, atol=1e-6)
        assert torch.allclose(lite.score_next(HISTORIES), plain.score_next(HISTORIES), atol=1e-5)
        trained_path = lite.train()(HISTORIES)  # dropout 0: training differs only by the calibrators
    assert not torch.allclose(trained_path, expected, atol=1e-4)


def test_full_model_always_calibrates_and_drops_the_position_embedding_by_default():
    full = build_tiny("sasrec", "calibrated", "none")
    lite = build_tiny("sasrec", "calibrated", "none", ac_lite=True)
    assert full.embedding.positions is None and lite.embedding.positions is not None
    with_positions = build_tiny("sasrec", "calibrated", "none", position_embedding=True)
    assert with_positions.embedding.positions is not None


def test_a_lite_model_serves_with_exactly_sasrecs_parameters():
    from awrsr.models import served_parameters

    def count(model):
        return sum(p.numel() for p in model.parameters())

    plain = build_tiny("sasrec", "dot", "none")
    lite = build_tiny("sasrec", "calibrated", "none", ac_lite=True)
    full = build_tiny("sasrec", "calibrated", "none", position_embedding=True)
    assert served_parameters(plain, 8, 20) == count(plain)  # everything SASRec has serves
    assert count(lite) > count(plain)  # trained with the calibrators...
    assert served_parameters(lite, 8, 20) == count(plain)  # ...served without them
    assert served_parameters(full, 8, 20) > count(plain)  # full AC-SASRec serves calibrated
    assert lite.training  # the count leaves the mode as it found it


# --- config errors -------------------------------------------------------------------------------


def test_config_errors():
    with pytest.raises(ConfigError, match="calibrated.*stosa"):
        build_model(ModelConfig(name="stosa", attention="calibrated", max_len=8, hidden_size=8), num_items=10)
    with pytest.raises(ConfigError, match="model.ac_lite"):
        ModelConfig(attention="dot", ac_lite=True)
    with pytest.raises(ConfigError, match="model.ac_lite"):
        ModelConfig(attention="calibrated", ac_lite="yes")
    with pytest.raises(ConfigError, match="train.adversarial_alpha"):
        TrainConfig(adversarial_alpha=-0.1)


# --- the adversarial training step ---------------------------------------------------------------


class StepRecorder(L.Callback):
    """Snapshots of the parameters and gradients before each optimiser step, and after the batch."""

    def __init__(self) -> None:
        self.batches: list = []
        self.snapshots: list[dict[str, torch.Tensor]] = []
        self.grads: list[dict[str, torch.Tensor]] = []

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        self.batches.append(batch)

    def _snapshot(self, pl_module) -> None:
        self.snapshots.append({k: p.detach().clone() for k, p in pl_module.model.named_parameters()})

    def on_before_optimizer_step(self, trainer, pl_module, optimizer) -> None:
        self._snapshot(pl_module)
        self.grads.append({k: p.grad.clone() for k, p in pl_module.model.named_parameters() if p.grad is not None})

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        self._snapshot(pl_module)


# The one-batch fits run no validation on purpose, and Lightning's tree helpers call a torch API
# that torch deprecated: neither warning says anything about awrsr.
NO_VALIDATION = pytest.mark.filterwarnings("ignore:You defined a `validation_step` but have no `val_dataloader`")
LIGHTNING_TREESPEC = pytest.mark.filterwarnings("ignore:`isinstance\\(treespec, LeafSpec\\)` is deprecated")


def _fit_one_batch(model, alpha: float = 0.3, precision: str = "32-true"):
    module = SequentialRecommenderModule(
        model, loss="ce", num_negatives=0, lr=1e-2, weight_decay=0.0, ks=[10], adversarial_alpha=alpha
    )
    recorder = StepRecorder()
    trainer = L.Trainer(
        max_epochs=1, limit_val_batches=0, logger=False, enable_checkpointing=False, enable_progress_bar=False,
        enable_model_summary=False, callbacks=[recorder, GradientNorm()], accelerator="cpu", precision=precision,
    )
    # One batch of training windows (n + 1 items): inputs HISTORIES, next items _targets(HISTORIES).
    windows = torch.cat([HISTORIES, torch.full((len(HISTORIES), 1), 3)], dim=1)
    loader = torch.utils.data.DataLoader([[windows]], batch_size=None)
    trainer.fit(module, train_dataloaders=loader)
    return module, trainer, recorder


@NO_VALIDATION
@LIGHTNING_TREESPEC
def test_adversarial_step_updates_each_network_with_its_own_objective():
    torch.manual_seed(0)
    model = build_tiny("sasrec", "calibrated", "none", dropout=0.0)
    _randomise_calibrators(model)
    initial = {k: p.detach().clone() for k, p in model.named_parameters()}
    alpha = 0.3
    # The gradients each network should get, computed here from the initial weights.
    reference = build_tiny("sasrec", "calibrated", "none", dropout=0.0).train()
    reference.load_state_dict(model.state_dict())
    loss_fn = LOSSES.get("ce")
    with perturbed(reference) as masks:
        loss_p = loss_fn(reference, reference(HISTORIES), _targets(HISTORIES))
    loss_c = loss_fn(reference, reference(HISTORIES), _targets(HISTORIES))
    names = [k for k, _ in reference.named_parameters()]
    params = [p for _, p in reference.named_parameters()]
    adversary_loss = -loss_p + alpha * mask_norm(masks)
    adversary = dict(zip(names, torch.autograd.grad(adversary_loss, params, retain_graph=True, allow_unused=True)))
    recommender = dict(zip(names, torch.autograd.grad(loss_p + loss_c, params, allow_unused=True)))

    module, trainer, recorder = _fit_one_batch(model, alpha)
    assert not module.automatic_optimization and len(trainer.optimizers) == 2
    perturbation = {k for k, p in model.named_parameters() if any(p is q for q in perturbation_parameters(model))}
    assert perturbation == {f"blocks.{b}.attention.perturb_{w}.weight" for b in (0, 1) for w in ("query", "key")}
    # GradientNorm ran before both optimiser steps, and the epoch logs survive manual optimisation.
    assert len(recorder.grads) == 2
    assert {"train/loss", "train/grad_norm", "train/mask_norm"} <= set(trainer.callback_metrics)
    before, between, after = initial, recorder.snapshots[1], recorder.snapshots[2]
    assert all(torch.equal(before[k], recorder.snapshots[0][k]) for k in before)
    for k in before:
        step_p_changed = not torch.equal(before[k], between[k])
        step_r_changed = not torch.equal(between[k], after[k])
        if k in perturbation:  # the perturbation step moves theta^P, the recommender step never does
            assert step_p_changed and not step_r_changed, k
        else:
            assert not step_p_changed, k
    for k in ("blocks.0.attention.theta", "blocks.1.attention.qkv.weight", "embedding.items.weight"):
        assert not torch.equal(between[k], after[k]), k
    # Each network got the gradient of its own objective: -L_P + alpha L_norm, and L_P + L_C.
    grads = recorder.grads[0]
    for k in names:
        expected = adversary[k] if k in perturbation else recommender[k]
        assert k in grads and torch.allclose(grads[k], expected, atol=1e-6, rtol=1e-4), k
    assert float(trainer.callback_metrics["train/loss"]) == pytest.approx((loss_p + loss_c).item(), rel=1e-5)
    # The gradient norm (the paper's Figure 5) is the recommender's, not the perturbation network's.
    squares = [recommender[k].pow(2).sum() for k in names if k not in perturbation and recommender[k] is not None]
    expected_norm = torch.stack(squares).sum().sqrt().item()
    assert float(trainer.callback_metrics["train/grad_norm"]) == pytest.approx(expected_norm, rel=1e-4)


@NO_VALIDATION
@LIGHTNING_TREESPEC
def test_the_logged_gradient_norm_is_the_norm_of_the_loss_gradient():
    """For a plain model (one optimiser) too: sqrt of the summed squares of dL/dtheta."""
    torch.manual_seed(0)
    model = build_tiny("sasrec", "dot", "none", dropout=0.0)
    reference = build_tiny("sasrec", "dot", "none", dropout=0.0).train()
    reference.load_state_dict(model.state_dict())
    loss = LOSSES.get("ce")(reference, reference(HISTORIES), _targets(HISTORIES))
    grads = torch.autograd.grad(loss, list(reference.parameters()), allow_unused=True)
    expected = torch.stack([g.pow(2).sum() for g in grads if g is not None]).sum().sqrt().item()
    _, trainer, _ = _fit_one_batch(model)
    assert float(trainer.callback_metrics["train/grad_norm"]) == pytest.approx(expected, rel=1e-4)


def test_other_models_keep_automatic_optimisation():
    module = SequentialRecommenderModule(
        build_tiny("sasrec", "dot", "none"), loss="ce", num_negatives=0, lr=1e-3, weight_decay=0.0, ks=[10]
    )
    assert module.automatic_optimization
    assert isinstance(module.configure_optimizers(), torch.optim.Adam)


@NO_VALIDATION
@LIGHTNING_TREESPEC
def test_adversarial_step_runs_under_bf16_mixed_precision():
    torch.manual_seed(0)
    model = build_tiny("sasrec", "calibrated", "none")
    initial = {k: p.detach().clone() for k, p in model.named_parameters()}
    _, trainer, recorder = _fit_one_batch(model, precision="bf16-mixed")
    assert torch.isfinite(torch.tensor(float(trainer.callback_metrics["train/loss"])))
    after = recorder.snapshots[-1]
    assert all(torch.isfinite(p).all() for p in after.values())
    key = "blocks.0.attention.perturb_query.weight"
    assert not torch.equal(after[key], initial[key])


# --- end to end ----------------------------------------------------------------------------------


@pytest.mark.parametrize("lite", [False, True], ids=["full", "lite"])
def test_fit_beats_popularity_and_the_artifact_recommends(tmp_path, lite):
    from awrsr.infer.recommender import Recommender
    from awrsr.workflows import fit

    # One thread: on a busy machine, several threads spin against each other (40 s instead of 0.5 s an epoch).
    config = tiny_run_config(tmp_path / "ac", num_threads=1)
    shape = dict(max_len=20, hidden_size=32, num_heads=2, num_blocks=2, dropout=0.1)
    config["model"] = ModelConfig(**shape, attention="calibrated", ac_lite=lite)
    threads = torch.get_num_threads()
    try:
        result = fit(**config, console=Console(quiet=True))
    finally:
        torch.set_num_threads(threads)
    m = result.metrics
    assert m["test"]["ndcg@10"] > m["popularity"]["test"]["ndcg@10"] + 0.15
    assert m["test"]["hr@10"] > m["popularity"]["test"]["hr@10"] + 0.15
    rec = Recommender.load(result.run_dir)
    layers = calibrated_layers(rec.model)
    assert layers and all(layer.lite == lite for layer in layers)
    top = rec.recommend([1, 2, 3], k=5)
    assert len(top) == 5 and not {r.item for r in top} & {1, 2, 3}
    scores = [r.score for r in top]
    assert scores == sorted(scores, reverse=True)
    if lite:  # the lite artifact serves as plain SASRec with the same shared weights
        plain = build_model(ModelConfig(**shape, attention="dot"), num_items=rec.model.num_items).eval()
        _, unexpected = plain.load_state_dict(rec.model.state_dict(), strict=False)
        assert unexpected and all(".attention." in key for key in unexpected)
        ids = torch.tensor([[0] * 17 + [1, 2, 3], list(range(1, 21))])
        with torch.no_grad():
            assert torch.allclose(rec.model.score_next(ids), plain.score_next(ids), atol=1e-5)


@pytest.mark.parametrize("attention", ["dot", "calibrated"])
def test_adam_uses_sasrecs_betas(attention):
    # beta2 = 0.98 as in SASRec: the learning curves and tuned grids of this repo assume it
    module = SequentialRecommenderModule(
        build_tiny("sasrec", attention, "none"), loss="ce", num_negatives=0, lr=1e-3, weight_decay=0.0, ks=[10]
    )
    optimisers = module.configure_optimizers()
    groups = [g for opt in (optimisers if isinstance(optimisers, list) else [optimisers]) for g in opt.param_groups]
    assert groups and all(g["betas"] == (0.9, 0.98) and g["lr"] == 1e-3 for g in groups)


def test_weight_decay_never_applies_to_the_perturbation_network():
    # An L2 pull on W_Qp, W_Kp would drive M towards 1/2 (a stronger perturbation) outside eq. 20.
    module = SequentialRecommenderModule(
        build_tiny("sasrec", "calibrated", "none"), loss="ce", num_negatives=0, lr=1e-3, weight_decay=0.01, ks=[10]
    )
    perturbation, recommender = module.configure_optimizers()
    assert [g["weight_decay"] for g in perturbation.param_groups] == [0.0]
    assert [g["weight_decay"] for g in recommender.param_groups] == [0.01]


def test_a_resumed_run_drops_weight_decay_restored_onto_the_perturbation_network():
    # torch restores each group's settings from a checkpoint (one saved before this rule, say)
    from types import SimpleNamespace

    module = SequentialRecommenderModule(
        build_tiny("sasrec", "calibrated", "none"), loss="ce", num_negatives=0, lr=1e-3, weight_decay=0.01, ks=[10]
    )
    perturbation, recommender = module.configure_optimizers()
    perturbation.param_groups[0]["weight_decay"] = 0.01  # as a restored state would have it
    module.optimizers = lambda: [SimpleNamespace(optimizer=perturbation), SimpleNamespace(optimizer=recommender)]
    module.on_train_start()
    assert perturbation.param_groups[0]["weight_decay"] == 0.0 and recommender.param_groups[0]["weight_decay"] == 0.01


@pytest.mark.parametrize("lite", [False, True])
def test_attention_dropout_is_off_in_eval_mode(lite):
    # With attention dropout at 0.5, a model in eval mode gives the same scores whatever the RNG
    # state; the full model attends through its own (calibrated) path there, not its parent's.
    model = build_tiny("sasrec", "calibrated", "none", dropout=0.5, ac_lite=lite).eval()
    outputs = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        outputs.append(model(HISTORIES))
    assert torch.equal(outputs[0], outputs[1])
    torch.manual_seed(0)
    assert not torch.equal(model.train()(HISTORIES), outputs[0])  # the dropout is there, in training
