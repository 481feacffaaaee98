import math

import pytest
import torch

from awrsr.errors import ConfigError
from awrsr.models import ModelConfig, build_model
from awrsr.nn.masks import AttentionMask, masked_softmax
from awrsr.nn.refine import REFINEMENTS
from awrsr.nn.refine.add import AdditiveRefinement
from awrsr.nn.refine.matrices import MatrixRefinement
from awrsr.nn.refine.none import NoRefinement
from awrsr.nn.refine.simp import SimpleRefinement
from awrsr.nn.refine.value import ValueRefinement


def _attention(n=4, heads=1, causal=True):
    torch.manual_seed(0)
    ids = torch.tensor([[0, 3, 4, 5][-n:]])
    mask = AttentionMask.build(ids, causal=causal)
    base = masked_softmax(torch.randn(1, heads, n, n), mask.allowed)
    return base, mask


def test_none_is_exactly_the_identity():
    base, mask = _attention()
    assert NoRefinement()(base, mask) is base


def test_simp_by_hand_with_identity_matrices():
    base, mask = _attention()
    ref = SimpleRefinement(max_len=4, num_heads=1, head_size=16, init_std=0.0)
    expected = masked_softmax(base @ base.transpose(-2, -1) / math.sqrt(16), mask.allowed)
    assert torch.allclose(ref(base, mask), expected)


def test_add_by_hand_with_zero_matrices_is_a_softened_copy_of_a():
    base, mask = _attention()
    ref = AdditiveRefinement(max_len=4, num_heads=1, head_size=16)
    with torch.no_grad():
        ref.query.zero_()
        ref.key.zero_()
    assert torch.allclose(ref(base, mask), masked_softmax(base / 2, mask.allowed))


def test_causal_value_by_hand_with_identity_matrices():
    base, mask = _attention()
    ref = ValueRefinement(max_len=4, num_heads=1, head_size=4, init_std=0.0)
    inner = masked_softmax(base @ base.transpose(-2, -1) / 2.0, mask.allowed)
    assert torch.allclose(ref(base, mask), masked_softmax(inner @ base, mask.allowed))


# Not symmetric, so a test with it on one side only tells W_RQ from W_RK (identity or zero
# matrices cannot: eq. 2 and eq. 4 differ in the order they multiply them).
ASYMMETRIC = torch.eye(4) + torch.triu(torch.ones(4, 4), 1)


def test_simp_multiplies_the_query_matrix_on_the_left():
    base, mask = _attention()
    ref = SimpleRefinement(max_len=4, num_heads=1, head_size=16, init_std=0.0)
    with torch.no_grad():
        ref.key.copy_(ASYMMETRIC)  # (A W_RQ)(A W_RK)^T = A R^T A^T
    expected = masked_softmax(base @ ASYMMETRIC.T @ base.transpose(-2, -1) / 4, mask.allowed)
    assert torch.allclose(ref(base, mask), expected, atol=1e-6)


def test_add_multiplies_the_key_matrix_on_the_left():
    base, mask = _attention()
    ref = AdditiveRefinement(max_len=4, num_heads=1, head_size=16, init_std=0.0)
    with torch.no_grad():
        ref.query.copy_(ASYMMETRIC)  # ((A W_RK)(A W_RQ)^T / sqrt(d_h) + A) / 2 = (A R^T A^T / 4 + A) / 2
    expected = masked_softmax((base @ ASYMMETRIC.T @ base.transpose(-2, -1) / 4 + base) / 2, mask.allowed)
    assert torch.allclose(ref(base, mask), expected, atol=1e-6)


@pytest.mark.parametrize("matrix", ["query", "key", "value"])
def test_causal_value_puts_each_matrix_in_its_place(matrix):
    base, mask = _attention()
    ref = ValueRefinement(max_len=4, num_heads=1, head_size=4, init_std=0.0)
    with torch.no_grad():
        getattr(ref, matrix).copy_(ASYMMETRIC)
    eye = torch.eye(4)
    q, k, v = (ASYMMETRIC if name == matrix else eye for name in ("query", "key", "value"))
    inner = masked_softmax((base @ q) @ (base @ k).transpose(-2, -1) / 2.0, mask.allowed)
    assert torch.allclose(ref(base, mask), masked_softmax(inner @ (base @ v), mask.allowed), atol=1e-6)


def test_literal_value_is_eq3_and_only_for_bidirectional_backbones():
    base, mask = _attention(causal=False)
    ref = ValueRefinement(max_len=4, num_heads=1, head_size=4, init_std=0.0, form="literal")
    assert ref.needs_bidirectional
    expected = masked_softmax(base @ (base.transpose(-2, -1) @ base).softmax(-1), mask.allowed)
    out = ref(base, mask)
    assert torch.allclose(out, expected)
    assert torch.allclose(out.sum(-1)[..., 1:], torch.ones(3))
    with pytest.raises(ConfigError, match="causal"):
        build_model(ModelConfig(max_len=4, refine="value", refine_value_form="literal"), 10)
    # its inner softmax runs over every slot, so a narrower window would give other weights
    with pytest.raises(ValueError, match="exactly max_len=4"):
        ref(*_attention(n=3, causal=False))


@pytest.mark.parametrize(("matrix", "expected"), [
    (None, [[0.5603, 0.4397], [0.4751, 0.5249]]),
    ("query", [[0.5011, 0.4989], [0.4564, 0.5436]]),
    ("key", [[0.5838, 0.4162], [0.5419, 0.4581]]),
    ("value", [[0.5356, 0.4644], [0.4751, 0.5249]]),
])
def test_literal_value_by_hand_puts_each_matrix_in_its_place(matrix, expected):
    """B = softmax(W_RV A softmax((W_RK A)^T W_RQ A)) with A = [[0.9, 0.1], [0.2, 0.8]] and one
    matrix R = [[1, 1], [0, 1]], the others identities (worked by hand to 4 places)."""
    base = torch.tensor([[[[0.9, 0.1], [0.2, 0.8]]]])
    mask = AttentionMask.build(torch.tensor([[1, 2]]), causal=False)
    ref = ValueRefinement(max_len=2, num_heads=1, head_size=4, init_std=0.0, form="literal")
    if matrix is not None:
        with torch.no_grad():
            getattr(ref, matrix).copy_(torch.tensor([[1.0, 1.0], [0.0, 1.0]]))
    assert torch.allclose(ref(base, mask)[0, 0], torch.tensor(expected), atol=1e-4)


def test_matrices_are_shared_by_heads_unless_per_head():
    shared = SimpleRefinement(max_len=5, num_heads=4, head_size=8)
    per_head = SimpleRefinement(max_len=5, num_heads=4, head_size=8, per_head=True)
    assert shared.query.shape == (1, 5, 5) and per_head.query.shape == (4, 5, 5)
    assert ValueRefinement(max_len=5, num_heads=2, head_size=8).value.shape == (1, 5, 5)
    scale_n = SimpleRefinement(max_len=25, num_heads=1, head_size=8, scale="length")
    assert scale_n.scale == pytest.approx(1 / 5)


def _matrix_refinement(cfg: ModelConfig) -> MatrixRefinement:
    """The first block's refinement, or skip: the matrix options belong to the refinements built
    on the shared n x n matrices, and a refinement added later need not be one."""
    refinement = build_model(cfg, num_items=10).blocks[0].attention.refinement
    if not isinstance(refinement, MatrixRefinement):
        pytest.skip(f"{cfg.refine} is not built on the shared refinement matrices")
    return refinement


@pytest.mark.parametrize("refine", [name for name in REFINEMENTS.names() if name != "none"])
def test_a_built_refinement_scales_by_the_head_width(refine):
    """1/sqrt(d_h) with d_h = hidden_size / num_heads = 16 / 4 = 4 (1/sqrt(16) would be the model's width)."""
    name, attention = first_backbone(refine)
    refinement = _matrix_refinement(ModelConfig(name=name, attention=attention, max_len=5, hidden_size=16, num_heads=4, refine=refine))
    assert refinement.scale == pytest.approx(1 / 2)


@pytest.mark.parametrize("refine", [name for name in REFINEMENTS.names() if name != "none"])
def test_a_built_refinement_takes_its_options_from_the_config(refine):
    """refine_per_head, refine_scale and refine_init_std reach the matrices the backbone builds:
    one per head (4), scale 1/sqrt(n) = 1/3 and exactly the identity at std 0."""
    name, attention = first_backbone(refine)
    cfg = ModelConfig(name=name, attention=attention, max_len=9, hidden_size=16, num_heads=4, refine=refine,
                      refine_per_head=True, refine_scale="length", refine_init_std=0.0)
    refinement = _matrix_refinement(cfg)
    assert refinement.matrix_names, f"{refine} names no matrices"
    assert refinement.scale == pytest.approx(1 / 3)
    for name in refinement.matrix_names:
        assert torch.equal(getattr(refinement, name), torch.eye(9).expand(4, 9, 9)), name


def test_only_the_chosen_blocks_are_refined():
    model = build_model(ModelConfig(max_len=6, num_blocks=3, refine="simp", refine_blocks=[1]), 10)
    kinds = [type(b.attention.refinement).__name__ for b in model.blocks]
    assert kinds == ["NoRefinement", "SimpleRefinement", "NoRefinement"]
    with pytest.raises(ConfigError, match="refine_blocks"):
        ModelConfig(num_blocks=2, refine="simp", refine_blocks=[2])
    # an empty list built plain SASRec under the refinement's name
    with pytest.raises(ConfigError, match="model.refine_blocks is empty; list the blocks to refine, or null"):
        ModelConfig(num_blocks=2, refine="simp", refine_blocks=[])
    with pytest.raises(ConfigError, match=r"model.refine_blocks \[1, 1\] names a block twice"):
        ModelConfig(num_blocks=2, refine="simp", refine_blocks=[1, 1])


def first_backbone(refine: str) -> tuple[str, str]:
    """SASRec with dot-product attention where the refinement builds on it, else the first
    (backbone, attention) it builds on (STOSA's Wasserstein attention for M_stoc)."""
    from awrsr.models import compatible_combinations

    fits = [(name, attention) for name, attention, r in compatible_combinations() if r == refine]
    return ("sasrec", "dot") if ("sasrec", "dot") in fits else fits[0]


# every registered refinement, so one added later is saved, loaded and served here too
@pytest.mark.parametrize("refine_input", ["weights", "logits"])
@pytest.mark.parametrize("refine", [r for r in REFINEMENTS.names() if r != "none"])
def test_refinement_trains_saves_loads_and_recommends(refine, refine_input, tmp_path, monkeypatch):
    from conftest import fit_and_reload

    name, attention = first_backbone(refine)
    cfg = ModelConfig(
        name=name, attention=attention, max_len=12, hidden_size=16, num_blocks=1, refine=refine, refine_input=refine_input,
    )
    loaded, initial = fit_and_reload(cfg, tmp_path / refine, monkeypatch)
    assert (loaded.model_config.refine, loaded.model_config.refine_input) == (refine, refine_input)
    # It trained and the trained parameters were saved: the refinement's parameters are those it
    # was built with (none for a refinement without parameters), each moved by training.
    refinement = {key: value for key, value in loaded.model.state_dict().items() if ".refinement." in key}
    assert refinement.keys() == {key for key in initial if ".refinement." in key}
    if refine in ("simp", "value", "add", "stoc"):
        assert refinement, "the refined model saved no refinement parameters"
    for key, value in refinement.items():
        assert initial[key].shape == value.shape and not torch.allclose(initial[key], value), key
    _, weights = loaded.model.encode(torch.tensor([[0] * 9 + [1, 2, 3]]), need_weights=True)
    assert not torch.allclose(weights[0].base, weights[0].refined)


@pytest.mark.parametrize("refine", [name for name in REFINEMENTS.names() if name != "none"])
def test_a_refined_model_refines_on_the_default_fused_setting_too(refine):
    """The fused kernel cannot refine weights, so a refined model always attends through the
    explicit path: its outputs are the same whether fused attention is allowed or not."""
    from conftest import build_tiny

    ids = torch.tensor([[0, 0, 0, 5, 6, 7, 8, 9], [1, 2, 3, 4, 5, 6, 7, 8]])
    fused = build_tiny("sasrec", "dot", refine, parameters="random", dropout=0.0).eval()(ids)
    explicit = build_tiny("sasrec", "dot", refine, parameters="random", dropout=0.0, fused_attention=False).eval()(ids)
    assert torch.allclose(fused, explicit, atol=1e-5)
