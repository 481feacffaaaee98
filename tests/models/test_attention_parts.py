"""What every registered attention mechanism keeps beyond the shared invariants: it trains, saves,
loads and recommends, and the weights it reports as refined are the ones it multiplies into its
values (what ``awrsr plot`` and ``Recommender.attention`` show). A mechanism added later is
picked up here through the registry."""

import pytest
import torch

from awrsr.models import ModelConfig, build_model, compatible_combinations
from awrsr.nn.attention import ATTENTIONS
from awrsr.nn.masks import masked_softmax
from awrsr.nn.refine import Refinement


def backbones_of(attention: str) -> list[str]:
    """The backbones that accept ``attention`` without a refinement."""
    return [name for name, a, refine in compatible_combinations() if a == attention and refine == "none"]


@pytest.mark.parametrize("attention", ATTENTIONS.names())
def test_attention_trains_saves_loads_and_recommends(attention, tmp_path, monkeypatch):
    from conftest import fit_and_reload

    name = backbones_of(attention)[0]
    cfg = ModelConfig(name=name, attention=attention, max_len=12, hidden_size=16, num_blocks=1)
    loaded, initial = fit_and_reload(cfg, tmp_path / attention, monkeypatch)
    state = {key: value for key, value in loaded.model.state_dict().items() if ".attention." in key}
    assert state.keys() == {key for key in initial if ".attention." in key}
    assert any(not torch.allclose(initial[key], value) for key, value in state.items()), "no attention parameter trained"


class RecordingRefinement(Refinement):
    """A valid refinement unlike any attention's own weights (most of each row on the query's own
    key, the rest spread evenly over the other allowed keys) that keeps what it returns."""

    window_invariant = True

    def __init__(self) -> None:
        super().__init__()
        self.returned: list[torch.Tensor] = []

    def forward(self, weights, mask):
        n = weights.shape[-1]
        own_key = masked_softmax(5.0 * torch.eye(n).expand_as(weights), mask)
        self.returned.append(own_key)
        return own_key


@pytest.mark.parametrize(
    "name,attention", [(name, a) for name, a, refine in compatible_combinations() if refine == "none"], ids=str
)
def test_the_reported_refined_weights_are_what_the_refinement_returned(name, attention):
    torch.manual_seed(0)
    model = build_model(ModelConfig(name=name, attention=attention, max_len=8, hidden_size=16, num_heads=2), 20).eval()
    ids = torch.tensor([[0, 0, 0, 5, 6, 7, 8, 9], [1, 2, 3, 4, 5, 6, 7, 8]])
    with torch.no_grad():
        plain = model(ids)
        recorders = []
        for block in model.blocks:
            block.attention.refinement = RecordingRefinement()
            recorders.append(block.attention.refinement)
        refined, weights = model.encode(ids, need_weights=True)
    for index, (layer, recorder) in enumerate(zip(weights, recorders)):
        assert len(recorder.returned) == 1, f"block {index} called its refinement {len(recorder.returned)} times"
        assert torch.equal(layer.refined, recorder.returned[0]), f"block {index} reports other weights than it refined"
    assert not torch.allclose(refined, plain, atol=1e-4), "the refined weights changed no output"
