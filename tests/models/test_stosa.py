"""STOSA: the Wasserstein identity, distance-based ranking, both streams updated, its loss."""

import math

import pytest
import torch
from rich.console import Console

from awrsr.errors import ConfigError
from awrsr.models import ModelConfig, build_model
from awrsr.nn.losses import LOSSES
from awrsr.nn.refine.base import Refinement
from awrsr.nn.wasserstein import gaussian_vectors, pairwise_squared_distances, positive, squared_w2


def tiny_stosa(**overrides):
    torch.manual_seed(0)
    values = dict(name="stosa", attention="wasserstein", max_len=8, hidden_size=8, num_heads=2, num_blocks=2, dropout=0.0)
    values.update(overrides)
    return build_model(ModelConfig(**values), num_items=15).eval()


def test_squared_w2_equals_euclidean_distance_of_mean_and_sqrt_cov():
    torch.manual_seed(0)
    mean_a, mean_b = torch.randn(5, 6, dtype=torch.float64), torch.randn(7, 6, dtype=torch.float64)
    cov_a, cov_b = torch.rand(5, 6, dtype=torch.float64) + 0.1, torch.rand(7, 6, dtype=torch.float64) + 0.1
    direct = squared_w2(mean_a[:, None], cov_a[:, None], mean_b[None], cov_b[None])  # (5, 7)
    via_matmul = pairwise_squared_distances(gaussian_vectors(mean_a, cov_a), gaussian_vectors(mean_b, cov_b))
    assert torch.allclose(direct, via_matmul)


@pytest.mark.parametrize("shape_a,shape_b", [((5, 4), (7, 4)), ((2, 3, 5, 4), (2, 3, 7, 4)), ((2, 3, 5, 4), (7, 4))])
def test_pairwise_squared_distances_by_definition_for_each_batch_layout(shape_a, shape_b):
    """2-D (addmm), matching batch dimensions (baddbmm) and broadcasting ones, with gradients."""
    torch.manual_seed(1)
    a = torch.randn(shape_a, dtype=torch.float64, requires_grad=True)
    b = torch.randn(shape_b, dtype=torch.float64, requires_grad=True)
    direct = ((a.unsqueeze(-2) - b.unsqueeze(-3)) ** 2).sum(-1)
    got = pairwise_squared_distances(a, b)
    assert got.shape == direct.shape and torch.allclose(got, direct)
    assert torch.autograd.gradcheck(pairwise_squared_distances, (a, b))


@pytest.mark.parametrize("shape_a,shape_b", [((5, 8), (7, 8)), ((2, 5, 8), (2, 7, 8))])
def test_pairwise_squared_distances_stay_float32_under_bf16(shape_a, shape_b):
    """||a||^2 + ||b||^2 - 2 a.b subtracts numbers near 800 to leave distances near 0.16: bfloat16
    (steps of 4 at 800) would lose them, so bf16 inputs and autocast both compute in float32."""
    torch.manual_seed(0)
    a = (10 + 0.1 * torch.randn(shape_a)).bfloat16()
    b = (10 + 0.1 * torch.randn(shape_b)).bfloat16()
    direct = ((a.double().unsqueeze(-2) - b.double().unsqueeze(-3)) ** 2).sum(-1)
    got = pairwise_squared_distances(a, b)
    assert got.dtype == torch.float32
    assert torch.allclose(got.double(), direct, atol=2e-3)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got = pairwise_squared_distances(a.float(), b.float())
    assert got.dtype == torch.float32
    assert torch.allclose(got.double(), direct, atol=2e-3)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_covariance_map_gives_its_branchwise_form_bit_for_bit_values_and_gradients(dtype):
    """``positive`` is a two-pass autograd function (session 49: a quarter of a STOSA step went to
    the five passes of where(x > 0, x + 1, exp(min(x, 0)))); it must give that form's values and
    gradients exactly, at 0, -0, the infinities and far out on both sides too."""
    torch.manual_seed(0)
    specials = torch.tensor([0.0, -0.0, 50.0, -200.0, 1e-30, -1e-30, float("inf"), float("-inf")])
    x = torch.cat([torch.randn(4000) * 5, specials]).to(dtype)
    ours, branchwise = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
    got, want = positive(ours), torch.where(branchwise > 0, branchwise + 1.0, torch.exp(branchwise.clamp(max=0.0)))
    upstream = torch.randn(x.shape).to(dtype)
    assert torch.equal(got, want) and got.dtype == dtype
    assert torch.equal(torch.autograd.grad(got, ours, upstream)[0], torch.autograd.grad(want, branchwise, upstream)[0])


def test_the_covariance_map_is_elu_plus_one_and_keeps_small_covariances_in_bf16():
    x = torch.linspace(-30, 5, 701, dtype=torch.float64)
    x.requires_grad_(True)
    assert torch.allclose(positive(x), torch.nn.functional.elu(x) + 1, rtol=0, atol=1e-15)
    (gradient,) = torch.autograd.grad(positive(x).sum(), x)
    assert torch.allclose(gradient, torch.where(x > 0, 1.0, x.exp()).detach(), rtol=0, atol=1e-15)
    small = torch.tensor([-2.0, -4.0, -5.0, -6.0, -7.0, -9.0])
    # ELU's e^x - 1 plus 1 cancels: in bf16 these came out 7% to 100% off, the last two as 0.
    relative = (positive(small.bfloat16()).double() - small.double().exp()).abs() / small.double().exp()
    assert relative.max() < 0.005
    assert positive(torch.tensor([-20.0])).item() == pytest.approx(math.exp(-20), rel=1e-6)  # float32 too


def test_full_ranking_is_minus_w2_to_every_item():
    model = tiny_stosa()
    ids = torch.tensor([[0, 0, 0, 4, 5, 6, 7, 8]])
    with torch.no_grad():
        z = model(ids)[:, -1]  # (1, 2d)
        scores = model.score_next(ids)  # (1, I)
        d = z.shape[-1] // 2
        out_mean, out_cov = z[:, :d], z[:, d:] ** 2
        item_mean = model.embedding.mean_items.weight[1:]
        item_cov = positive(model.embedding.cov_items.weight[1:])
        expected = -squared_w2(out_mean, out_cov, item_mean, item_cov)
    assert torch.allclose(scores[0], expected, atol=1e-5)


def test_full_cross_entropy_in_chunks_equals_it_over_every_distance_with_the_same_gradients():
    """ce on STOSA runs in chunks through [2z, 1] . [z_v, -||z_v||^2] (-||z||^2 left out: softmax
    ignores a constant per row); loss and every gradient as from the full -W2^2 logit matrix."""
    import torch.nn.functional as F

    from awrsr.nn import chunked_cross_entropy

    model = tiny_stosa().double().train()
    ids = torch.tensor([[0, 0, 3, 4, 5, 6, 7, 8], [1, 2, 3, 9, 9, 10, 11, 12]])
    targets = torch.tensor([[0, 0, 4, 5, 6, 7, 8, 9], [2, 3, 9, 9, 10, 11, 12, 13]])

    def loss_and_grads(chunked):
        model.zero_grad()
        hidden = model(ids)
        if chunked:
            value = LOSSES.get("ce")(model, hidden, targets)
        else:
            real = targets > 0
            value = F.cross_entropy(model.score_all(hidden[real]), targets[real] - 1)
        value.backward()
        return value.detach(), {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}

    import unittest.mock

    # chunks of 4 of the 14 real positions, and never the full (positions x items) matrix
    with unittest.mock.patch.object(chunked_cross_entropy, "_chunk_rows", lambda num_items, device: 4), \
            unittest.mock.patch.object(type(model), "score_all", side_effect=AssertionError("every logit at once")):
        value, grads = loss_and_grads(chunked=True)
    expected, expected_grads = loss_and_grads(chunked=False)
    assert torch.allclose(value, expected, rtol=1e-12, atol=0)
    assert grads.keys() == expected_grads.keys() and len(grads) > 10
    for name, grad in grads.items():
        assert torch.allclose(grad, expected_grads[name], rtol=1e-9, atol=1e-12), name


def test_stosas_chunked_cross_entropy_is_formed_in_float32_under_bf16_autocast():
    """[2z, 1] . [z_v, -||z_v||^2] subtracts large norms, as the distances do: under bf16 autocast
    the loss must stay what float32 gives (bf16 products put it 1.7e-3 off here)."""
    model = tiny_stosa(hidden_size=32).train()
    ids = torch.randint(1, 16, (16, 9), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        model.embedding.mean_items.weight.mul_(8.0)  # norms of the size training reaches
        hidden = model(ids[:, :-1])
    exact = LOSSES.get("ce")(model, hidden, ids[:, 1:])
    with torch.autocast("cpu", dtype=torch.bfloat16):
        under_autocast = LOSSES.get("ce")(model, hidden, ids[:, 1:])
    assert under_autocast.dtype == torch.float32
    assert abs(under_autocast.item() - exact.item()) < 1e-5, (under_autocast.item(), exact.item())


def test_the_encoder_updates_the_mean_stream():
    """The public STOSA code leaves the mean stream untouched by attention; here an earlier item
    changes the last position's mean."""
    model = tiny_stosa()
    a = torch.tensor([[0, 0, 3, 4, 5, 6, 7, 8]])
    b = a.clone()
    b[0, 2] = 11
    with torch.no_grad():
        mean_a = model(a)[0, -1, :8]  # the first d (= 8) dimensions are the mean
        mean_b = model(b)[0, -1, :8]
    assert not torch.allclose(mean_a, mean_b)


@pytest.mark.parametrize(
    "overrides, message",
    [
        (dict(name="sasrec", attention="wasserstein"), "deterministic"),
        (dict(name="stosa", attention="dot"), "wasserstein"),
        (dict(name="sasrec", attention="dot", refine="stoc"), "stochastic attention"),
    ],
)
def test_incompatible_parts_are_config_errors(overrides, message):
    with pytest.raises(ConfigError, match=message):
        build_model(ModelConfig(max_len=8, hidden_size=8, **overrides), num_items=10)


def test_stosa_loss_by_hand():
    model = tiny_stosa().train()
    ids = torch.tensor([[0, 0, 3, 4, 5, 6, 7, 8]])
    targets = torch.tensor([[0, 0, 4, 5, 6, 7, 8, 9]])
    hidden = model(ids)
    # three positions sit on their positive item, so that the hinge max(0, .) is at work on both sides
    hidden = torch.cat([hidden[:, :2], model.item_vectors(targets[:, 2:5]), hidden[:, 5:]], dim=1)
    torch.manual_seed(3)
    got = LOSSES.get("stosa")(model, hidden, targets, num_negatives=4, pvn_weight=0.5)
    torch.manual_seed(3)
    real = targets > 0
    h, pos = hidden[real], targets[real]
    neg = torch.randint(1, 16, (pos.shape[0], 4))
    d_pos = ((h - model.item_vectors(pos)) ** 2).sum(-1)
    d_neg = ((h[:, None] - model.item_vectors(neg)) ** 2).sum(-1)
    d_pn = ((model.item_vectors(pos)[:, None] - model.item_vectors(neg)) ** 2).sum(-1)
    keep = (neg != pos[:, None]).float()
    assert 0 < keep.sum() < keep.numel()  # the seed exercises the collision mask
    assert ((d_pos[:, None] - d_pn) < 0).any() and ((d_pos[:, None] - d_pn) > 0).any()
    bpr = (-torch.log(torch.sigmoid(d_neg - d_pos[:, None])) * keep).sum(1).mean()
    pvn = ((d_pos[:, None] - d_pn).clamp_min(0) * keep).sum(1).mean()
    assert torch.allclose(got, bpr + 0.5 * pvn, atol=1e-5)


def test_a_negative_equal_to_its_positive_adds_nothing_to_stosas_loss():
    """With one item every negative is the positive: both terms are masked, so the loss is 0
    (unmasked, BPR alone would be 4 ln 2 per position)."""
    model = build_model(ModelConfig(name="stosa", attention="wasserstein", max_len=4, hidden_size=4, dropout=0.0), num_items=1)
    hidden = model(torch.tensor([[0, 1, 1, 1]]))
    loss = LOSSES.get("stosa")(model, hidden, torch.tensor([[0, 1, 1, 1]]), num_negatives=4, pvn_weight=0.5)
    assert loss.item() == 0.0


def test_each_stream_has_its_own_feed_forward_and_norms_and_dropout_falls_on_both():
    """STOSA's streams are normalised and fed forward separately: a covariance stream 10 times the
    mean stream is normalised to the same values (one LayerNorm over both would not), the two
    feed-forward networks are distinct, and in training dropout falls after the embedding, after
    each part of a block and inside each stream's feed-forward network, at model.dropout."""
    from conftest import dropout_calls

    model = tiny_stosa(num_blocks=1, hidden_size=4, dropout=0.3)
    block = model.blocks[0]
    x = torch.tensor([[[1.0, 2.0, 3.0, 4.0, 10.0, 20.0, 30.0, 40.0]]])
    normalised = torch.tensor([-1.3416, -0.4472, 0.4472, 1.3416])  # LN([1, 2, 3, 4]) = LN([10, 20, 30, 40])
    for norm in (block.attention_norm, block.feed_forward_norm, model.final_norm):
        assert torch.allclose(norm(x)[0, 0], normalised.repeat(2), atol=1e-4)
    assert block.feed_forward.mean is not block.feed_forward.cov
    ffn = ("feed_forward.mean.net.2", "feed_forward.cov.net.2")
    expected = [("embedding.dropout", 0.3)] + [(f"blocks.0.{name}", 0.3) for name in ("dropout", *ffn, "dropout")]
    assert dropout_calls(model, torch.tensor([[0, 0, 1, 2, 3, 4, 5, 6]])) == expected


def test_each_half_meets_only_its_own_streams_norm_and_feed_forward():
    """Trained, the streams' parameters differ (at initialisation the norms are equal): with the
    covariance norms' gain 2 and bias 1, the covariance half is 2 LN(x) + 1 and the mean half
    still LN(x); each feed-forward network maps its own half."""
    model = tiny_stosa(num_blocks=1, hidden_size=4)
    block = model.blocks[0]
    x = torch.tensor([[[1.0, 2.0, 3.0, 4.0, 10.0, 20.0, 30.0, 40.0]]])
    normalised = torch.tensor([-1.3416, -0.4472, 0.4472, 1.3416])
    with torch.no_grad():
        for norm in (block.attention_norm, block.feed_forward_norm, model.final_norm):
            norm.cov.weight.fill_(2.0)
            norm.cov.bias.fill_(1.0)
            assert torch.allclose(norm(x)[0, 0], torch.cat([normalised, 2 * normalised + 1]), atol=1e-4)
        ffn = block.feed_forward
        assert torch.equal(ffn(x), torch.cat([ffn.mean(x[..., :4]), ffn.cov(x[..., 4:])], dim=-1))
        assert not torch.allclose(ffn.mean(x[..., 4:]), ffn.cov(x[..., 4:]))  # so a swap would show


def test_the_embedding_is_each_streams_layer_norm_and_the_covariance_elu_plus_one():
    """Mean = LN(mean item + mean position), covariance = ELU(LN(cov item + cov position)) + 1 with
    the positions counted back from the last slot: an item [1, 2, 3, 4] on position 0 (zero)
    normalises to [-1.3416, -0.4472, 0.4472, 1.3416], whose ELU + 1 is [e^-1.3416, e^-0.4472,
    1.4472, 2.3416]; the covariance is positive where its normalised embedding is negative. Each
    stream adds its own position table: on position 1 the mean's shifts all features alike (LN
    removes it), the covariance's makes the item [1, 2, 3, 8], which normalises to [-0.9285,
    -0.5571, -0.1857, 1.6713] (mean 3.5, variance 29 / 4)."""
    embedding = tiny_stosa(hidden_size=4).embedding
    with torch.no_grad():
        for table in (embedding.mean_items, embedding.cov_items):
            table.weight[1] = torch.tensor([1.0, 2.0, 3.0, 4.0])
        for table in (embedding.mean_positions, embedding.cov_positions):
            table.weight.zero_()
        embedding.mean_positions.weight[1] = 10.0  # the slot before the last
        embedding.cov_positions.weight[1] = torch.tensor([0.0, 0.0, 0.0, 4.0])
        out = embedding(torch.tensor([[0, 0, 0, 0, 0, 0, 1, 1]]))
    normalised = torch.tensor([-1.3416, -0.4472, 0.4472, 1.3416])
    cov = torch.tensor([math.exp(-1.3416), math.exp(-0.4472), 1.4472, 2.3416])
    assert torch.allclose(out[0, -1], torch.cat([normalised, cov]), atol=1e-4)
    cov_on_position_1 = torch.tensor([math.exp(-0.9285), math.exp(-0.5571), math.exp(-0.1857), 2.6713])
    assert torch.allclose(out[0, -2], torch.cat([normalised, cov_on_position_1]), atol=1e-4)


def test_position_embedding_false_gives_stosa_no_position_tables():
    """model.position_embedding is read by STOSA too: without it an item embeds alike on every
    slot; with it (the default) the two position tables make the slots differ."""
    items = torch.tensor([[0, 0, 0, 0, 0, 3, 3, 3]])
    without = tiny_stosa(position_embedding=False)
    assert without.embedding.mean_positions is None and without.embedding.cov_positions is None
    assert "embedding.mean_positions.weight" not in without.state_dict()
    out = without.embedding(items)[0]
    assert torch.allclose(out[-1], out[-2]) and torch.allclose(out[-1], out[-3])
    out = tiny_stosa().embedding(items)[0]
    assert not torch.allclose(out[-1], out[-2])
    assert tiny_stosa(position_embedding=True).embedding.mean_positions is not None


def test_stosa_with_m_stoc_fits_beats_popularity_and_recommends(tmp_path):
    from awrsr.infer import Recommender
    from awrsr.train import TrainConfig
    from awrsr.workflows import fit

    from conftest import tiny_run_config

    cfg = tiny_run_config(tmp_path / "stosa")
    cfg["model"] = ModelConfig(name="stosa", attention="wasserstein", refine="stoc", max_len=20, hidden_size=32, num_blocks=1, dropout=0.1)
    cfg["train"] = TrainConfig(loss="stosa", pvn_weight=0.1, max_epochs=8, patience=3, batch_size=64, lr=3e-3, progress_bar=False, seed=7)
    result = fit(**cfg, console=Console(quiet=True))
    assert result.metrics["test"]["ndcg@10"] > result.metrics["popularity"]["test"]["ndcg@10"] + 0.1
    top = Recommender.load(result.run_dir).recommend([1, 2, 3], k=4)
    assert len(top) == 4 and not {r.item for r in top} & {1, 2, 3}


def test_stosa_loss_needs_a_stochastic_model(tmp_path):
    from awrsr.train import TrainConfig
    from awrsr.workflows import fit

    from conftest import tiny_run_config

    cfg = tiny_run_config(tmp_path / "x")
    cfg["train"] = TrainConfig(loss="stosa", max_epochs=1, progress_bar=False)
    with pytest.raises(ConfigError, match="stosa"):
        fit(**cfg, console=Console(quiet=True))


class FixedRefinement(Refinement):
    """A stand-in refinement: B = the causal running mean, whatever A is (B differs from A)."""

    def forward(self, base, mask):
        r = torch.tensor([[1.0, 0.0, 0.0], [1 / 2, 1 / 2, 0.0], [1 / 3, 1 / 3, 1 / 3]])
        return r.expand_as(base)


@pytest.mark.parametrize("training", [False, True])
def test_wasserstein_attention_by_its_definition(training, monkeypatch):
    """Per head, A = masked-softmax(-W2^2(q, k) / sqrt(d_h)); the mean stream multiplies the
    refined weights B into its values, the covariance stream B * B (STOSA's covariance path), and
    attention dropout's mask D / (1 - p) falls once on each: D * B and D * B * B."""
    import awrsr.nn.attention.wasserstein as wasserstein
    from awrsr.nn.masks import AttentionMask, masked_softmax

    torch.manual_seed(1)
    p, keep = 0.5, torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 1.0], [1.0, 1.0, 0.0]])
    monkeypatch.setattr(wasserstein, "dropout", lambda w, rate, train: w * keep / (1 - rate) if train and rate else w)
    attention = wasserstein.WassersteinAttention(
        hidden_size=8, num_heads=2, attn_dropout=p, refinement=FixedRefinement(),
    ).train(training)
    x = torch.randn(1, 3, 16)  # mean and covariance streams, 8 features each: 2 heads of d_h = 4
    mask = AttentionMask.build(torch.tensor([[2, 3, 4]]), causal=True)
    out, weights = attention(x, mask, need_weights=True)

    mean, cov = x.chunk(2, -1)
    q_mean, k_mean, v_mean = attention.mean_qkv(mean)[0].chunk(3, -1)  # (3, 8) each, heads side by side
    q_cov, k_cov, v_cov = (positive(t) for t in attention.cov_qkv(cov)[0].chunk(3, -1))
    b = FixedRefinement()(torch.zeros(3, 3), None)
    d = keep / (1 - p) if training else torch.ones(3, 3)
    mean_heads, cov_heads = [], []
    for head in range(2):
        h = slice(4 * head, 4 * head + 4)
        distances = squared_w2(q_mean[:, None, h], q_cov[:, None, h], k_mean[None, :, h], k_cov[None, :, h])
        expected = masked_softmax(-distances / 2.0, mask.allowed[0, 0])  # sqrt(d_h) = 2, not sqrt(8)
        assert torch.allclose(weights.base[0, head], expected, atol=1e-5)
        assert torch.equal(weights.refined[0, head], b)
        mean_heads.append((d * b) @ v_mean[:, h])
        cov_heads.append((d * b * b) @ v_cov[:, h])
    assert torch.allclose(out[0, :, :8], attention.mean_output(torch.cat(mean_heads, -1)), atol=1e-5)
    assert torch.allclose(out[0, :, 8:], attention.cov_output(torch.cat(cov_heads, -1)), atol=1e-5)


def test_the_output_distribution_is_mean_and_the_square_root_of_its_covariance():
    """z = [mu, sqrt(Sigma)] with Sigma = ELU(x) + 1, so that ||z - z_v||^2 is W2^2: ELU(0) + 1 = 1
    and ELU(3) + 1 = 4 give 1 and 2, ELU(-2) + 1 = e^-2 gives e^-1."""
    model = tiny_stosa()
    model.final_norm = torch.nn.Identity()
    mean = torch.arange(8.0) - 3.0
    cov = torch.tensor([0.0, 3.0, 0.0, 3.0, 0.0, 3.0, -2.0, 3.0])
    z = model.finalize(torch.cat([mean, cov])[None, None])[0, 0]
    assert torch.equal(z[:8], mean)
    assert torch.allclose(z[8:], torch.tensor([1.0, 2.0, 1.0, 2.0, 1.0, 2.0, math.exp(-1.0), 2.0]))  # ELU(-2) + 1 = e^-2


@pytest.mark.parametrize("distance", ["squared", "plain"])
@pytest.mark.parametrize("cov_scale", [1.0, 2.0])
def test_m_stoc_by_hand(cov_scale, distance):
    """Mean matrix I, covariance matrix c I, and A >= 0: mean = A, covariance = ELU(c A) + 1 =
    c A + 1, so each row is the vector [A_k, sqrt(c A_k + 1)], and the weights are
    masked-softmax(-||z_k - z_t||^2 / sqrt(d_h)), or with ``distance: plain`` (W2, SPEC.md's form)
    masked-softmax(-||z_k - z_t|| / sqrt(d_h)). With c = 2 the covariance needs its own matrix
    (the mean matrix in both places would give sqrt(A_k + 1))."""
    from awrsr.nn.masks import AttentionMask, masked_softmax
    from awrsr.nn.refine.stoc import StochasticRefinement

    torch.manual_seed(0)
    mask = AttentionMask.build(torch.tensor([[0, 3, 4, 5]]), causal=True)
    base = masked_softmax(torch.randn(1, 1, 4, 4), mask.allowed)
    refinement = StochasticRefinement(max_len=4, num_heads=1, head_size=16, init_std=0.0, distance=distance)
    assert {name for name, _ in refinement.named_parameters()} == {"mean", "cov"}
    with torch.no_grad():
        refinement.cov.mul_(cov_scale)
    z = torch.cat([base, (cov_scale * base + 1).sqrt()], -1)
    distances = ((z[..., :, None, :] - z[..., None, :, :]) ** 2).sum(-1)
    if distance == "plain":
        distances = distances.sqrt()
    assert torch.allclose(refinement(base, mask), masked_softmax(-distances / 4, mask.allowed), atol=1e-6)


def test_m_stoc_with_the_plain_distance_keeps_the_invariants_and_finite_gradients():
    """W2 = sqrt(W2^2) has an infinite slope at 0, and each row's distance to itself is 0: the
    gradients must stay finite. Causality and rows summing to one over the allowed keys hold as
    for the squared distance (the shared tests run that one)."""
    from conftest import build_tiny

    model = build_tiny("stosa", "wasserstein", "stoc", "random", refine_stoc_distance="plain")
    ids = torch.tensor([[0, 0, 3, 4, 5, 6, 7, 8], [0, 0, 0, 0, 0, 2, 9, 4]])
    out, weights = model.encode(ids, need_weights=True)
    for layer in weights:
        sums = layer.refined.sum(-1)
        assert torch.allclose(sums, (ids != 0)[:, None, :].expand_as(sums).float(), atol=1e-5)
        assert torch.equal(layer.refined.triu(1), torch.zeros_like(layer.refined))
    out.sum().backward()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads)
    later = ids.clone()
    later[:, -1] = 1  # the last item changes: no earlier position may see it
    model.eval()
    with torch.no_grad():
        assert torch.allclose(model.encode(ids)[0][:, :-1], model.encode(later)[0][:, :-1], atol=1e-6)
    squared = build_tiny("stosa", "wasserstein", "stoc", "random").eval()
    with torch.no_grad():
        assert not torch.allclose(squared.encode(ids)[0], model.encode(ids)[0], atol=1e-3)  # the option is read


def test_m_stoc_with_the_plain_distance_is_accurate_in_float32():
    """W2 near 0 from the matrix-product form of W2^2 kept that form's rounding (about 1e-5 of the
    norms in float32), which the square root blew up: 1.4e-4 relative error in the weights
    against float64, a row's distance to itself 0.01 (the device check found it). From the
    differences it is within float32's rounding, identical rows included."""
    from awrsr.nn.masks import AttentionMask, masked_softmax
    from awrsr.nn.refine.stoc import StochasticRefinement

    torch.manual_seed(0)
    mask = AttentionMask.build(torch.tensor([[0, 3, 4, 5, 6, 7, 8, 9]] * 2), causal=True)
    base = masked_softmax(torch.randn(2, 2, 8, 8) * 3, mask.allowed)
    base[:, :, 5] = base[:, :, 4]  # two identical rows: a zero distance off the diagonal too
    refinement = StochasticRefinement(max_len=8, num_heads=2, head_size=16, init_std=0.5, distance="plain")
    with torch.no_grad():
        single = refinement(base, mask)
        double = refinement.double()(base.double(), mask)
    assert float((single.double() - double).norm() / double.norm()) < 1e-6


def test_m_stoc_distance_must_be_squared_or_plain():
    from awrsr.errors import FieldValueError
    from awrsr.nn.refine.stoc import StochasticRefinement

    with pytest.raises(ConfigError, match="model.refine_stoc_distance"):
        build_model(ModelConfig(name="stosa", attention="wasserstein", refine="stoc", refine_stoc_distance="cubed"), 10)

    with pytest.raises(FieldValueError, match="model.refine_stoc_distance must be 'squared' or 'plain', got 'cubed'"):
        StochasticRefinement(max_len=4, num_heads=1, head_size=16, distance="cubed")
