"""BERT4Rec: Cloze masking, bidirectional attention, [mask]-appended inference."""

from dataclasses import replace

import pytest
import torch
from rich.console import Console

from awrsr.errors import ConfigError
from awrsr.models import ModelConfig, build_model


def _bert(**overrides):
    values = dict(name="bert4rec", max_len=6, hidden_size=8, num_heads=2, num_blocks=2, dropout=0.0, mask_prob=0.3)
    values.update(overrides)
    torch.manual_seed(0)
    return build_model(ModelConfig(**values), num_items=10)


def test_cloze_masks_only_real_items_and_scores_only_masked_ones():
    model = _bert()
    sequences = torch.tensor([[0, 0, 0, 4, 5, 6], [1, 2, 3, 4, 5, 6], [0, 0, 0, 0, 0, 9]]).repeat(500, 1)
    torch.manual_seed(1)
    inputs, targets = model.training_example(torch.nn.functional.pad(sequences, (1, 0)))  # n + 1 wide
    masked = inputs == model.mask_id
    assert not (masked & (sequences == 0)).any()  # padding is never masked
    assert torch.equal(inputs[~masked], sequences[~masked])  # the rest is left as it was
    assert torch.equal(targets[masked], sequences[masked]) and (targets[~masked] == 0).all()
    assert masked.any(dim=1).all()  # every row has something to predict
    real = sequences > 0
    rate = masked[:, :-1][real[:, :-1]].float().mean()  # the last slot is forced at times
    assert abs(rate - 0.3) < 0.03


def test_a_row_of_padding_only_gets_no_mask_and_no_target():
    # nothing to predict there: forcing the last slot must not put a [mask] on padding
    model = _bert(mask_prob=0.01)
    torch.manual_seed(0)
    inputs, targets = model.training_example(torch.tensor([[0] * 7, [0] * 6 + [3]]))
    assert inputs[0].tolist() == [0] * 6 and targets[0].tolist() == [0] * 6
    assert inputs[1, -1] == model.mask_id and targets[1].tolist() == [0] * 5 + [3]


def test_the_last_slot_is_masked_at_its_own_rate_and_always_when_alone():
    """A row of 6 real items gets its last masked by chance (0.3) or because nothing else was
    (0.7 * 0.7^5): 0.3 + 0.7^6 = 0.4176; a row with one real item always."""
    model = _bert()
    sequences = torch.tensor([[1, 2, 3, 4, 5, 6], [0, 0, 0, 0, 0, 9]]).repeat(20_000, 1)
    torch.manual_seed(2)
    inputs, _ = model.training_example(torch.nn.functional.pad(sequences, (1, 0)))
    masked_last = inputs[:, -1] == model.mask_id
    assert abs(masked_last[0::2].float().mean().item() - (0.3 + 0.7**6)) < 0.02  # std 0.0035
    assert masked_last[1::2].all()


def test_mask_is_a_token_of_its_own_after_every_item():
    model = _bert()  # 10 items: 0 is padding, 1..10 items, 11 [mask]
    assert model.mask_id == 11 and model.embedding.items.num_embeddings == 12
    sequences = torch.tensor([[10, 10, 10, 10, 10, 10]]).repeat(200, 1)
    torch.manual_seed(3)
    inputs, targets = model.training_example(torch.nn.functional.pad(sequences, (1, 0)))
    masked = inputs == model.mask_id
    assert masked.any() and not masked.all()
    assert (inputs[~masked] == 10).all() and (targets[masked] == 10).all()  # item 10 is never taken for [mask]


def test_attention_is_bidirectional():
    model = _bert().eval()
    ids = torch.tensor([[1, 2, 3, 4, 5, 6]])
    changed = ids.clone()
    changed[0, -1] = 9
    with torch.no_grad():
        assert not torch.allclose(model(ids)[0, 0], model(changed)[0, 0])


def test_next_item_is_read_at_an_appended_mask():
    model = _bert().eval()
    with torch.no_grad():
        full = torch.tensor([[1, 2, 3, 4, 5, 6]])
        expected = model(torch.tensor([[2, 3, 4, 5, 6, model.mask_id]]))[:, -1]
        assert torch.allclose(model.next_hidden(full), expected)
        short = torch.tensor([[0, 0, 4, 5]])
        expected = model(torch.tensor([[0, 0, 0, 4, 5, model.mask_id]]))[:, -1]
        assert torch.allclose(model.next_hidden(short), expected, atol=1e-6)
        assert model.score_next(full).shape == (1, 10)  # [mask] is never a candidate


def test_the_literal_value_refinement_is_allowed_only_where_attention_is_bidirectional(monkeypatch):
    build_model(ModelConfig(name="bert4rec", refine="value", refine_value_form="literal", max_len=6), num_items=5)
    # the field at fault is the form, named with its value and both ways out
    with pytest.raises(ConfigError, match=r"^model.refine_value_form 'literal' \(of model.refine 'value'\) lets a position see "
                                          r"later items; backbone 'sasrec' is causal: use model.refine_value_form: causal, "
                                          r"or a bidirectional backbone \(model.name: bert4rec\)$"):
        build_model(ModelConfig(name="sasrec", refine="value", refine_value_form="literal", max_len=6), num_items=5)
    # BERT4Rec takes no Gaussian streams: STOSA is told the causal form alone
    with pytest.raises(ConfigError, match=r"^model.refine_value_form 'literal' \(of model.refine 'value'\) lets a position see "
                                          r"later items; backbone 'stosa' is causal: use model.refine_value_form: causal$"):
        build_model(ModelConfig(name="stosa", attention="wasserstein", refine="value", refine_value_form="literal", max_len=6), 5)
    # another bidirectional refinement (a plugin's) is named itself: the value form is not its option
    from awrsr.nn.refine import REFINEMENTS

    def lookahead(cfg, block_index):
        return REFINEMENTS.get("value")(replace(cfg, refine_value_form="literal"), block_index)

    monkeypatch.setitem(REFINEMENTS._entries, "lookahead", lookahead)
    with pytest.raises(ConfigError, match=r"^model.refine 'lookahead' lets a position see later items; backbone 'sasrec' "
                                          r"is causal: use a bidirectional backbone \(model.name: bert4rec\)$"):
        build_model(ModelConfig(name="sasrec", refine="lookahead", max_len=6), num_items=5)


def test_bert4rec_with_refinement_fits_beats_popularity_and_recommends(tmp_path):
    from awrsr.infer import Recommender
    from awrsr.workflows import fit

    from conftest import tiny_run_config

    cfg = tiny_run_config(tmp_path / "bert", max_epochs=20, patience=6)  # still learning at 12: too close a call
    cfg["model"] = ModelConfig(name="bert4rec", refine="simp", max_len=20, hidden_size=32, num_heads=2, dropout=0.1, mask_prob=0.3)
    result = fit(**cfg, console=Console(quiet=True))
    assert result.metrics["test"]["ndcg@10"] > result.metrics["popularity"]["test"]["ndcg@10"] + 0.1
    top = Recommender.load(result.run_dir).recommend([1, 2, 3], k=4)
    assert len(top) == 4 and not {r.item for r in top} & {1, 2, 3}


def test_bert4rec_needs_room_for_the_mask():
    with pytest.raises(ConfigError, match="max_len must be >= 2 for bert4rec"):
        _bert(max_len=1)


def test_a_short_history_keeps_its_oldest_item_when_the_mask_token_is_appended():
    from conftest import build_tiny

    model = build_tiny("bert4rec", "dot", "none", max_len=6, dropout=0.0).eval()
    with torch.no_grad():
        expected = model(torch.tensor([[0, 0, 0, 4, 5, model.mask_id]]))[:, -1]
        assert torch.allclose(model.next_hidden(torch.tensor([[4, 5]])), expected, atol=1e-6)
