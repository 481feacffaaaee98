"""The Recommender's own guarantees, against hand-worked expectations rather than against itself."""

import numpy as np
import pytest
import torch

from awrsr.data import Sequences, Vocabulary
from awrsr.errors import ConfigError, UnknownItemError
from awrsr.infer import Recommender
from awrsr.models import ModelConfig, build_model


def test_items_seen_before_the_window_are_never_recommended(trained_run):
    rec = Recommender.load(trained_run.run_dir)  # max_len 20, items 1..50
    history = list(range(1, 31))  # 30 distinct items: the model reads only the last 20
    top = rec.recommend(history, k=50)
    # every item of the history is filtered, also the 10 older than the window: 20 are left
    assert len(top) == 20 and {r.item for r in top} == set(range(31, 51))


@pytest.mark.parametrize("options", [
    {"refine": "simp"},
    {"name": "bert4rec", "refine": "value", "refine_value_form": "literal"},
    {"name": "stosa", "attention": "wasserstein", "refine": "stoc"},
])
def test_attention_maps_are_the_models_weights_over_the_real_positions(options):
    model = build_model(ModelConfig(max_len=6, hidden_size=8, num_heads=2, num_blocks=2, **options), 9)
    rec = Recommender(model, Vocabulary([f"i{x}" for x in range(1, 10)]), max_len=6)
    history = ["i3", "i1", "i7", "i2", "i9", "i4", "i5", "i8"]  # 8 ids: the model reads the last 6
    maps = rec.attention(history)
    bert = options.get("name") == "bert4rec"
    expected_items = history[-5:] + ["[mask]"] if bert else history[-6:]  # BERT4Rec asks with an appended [mask]
    assert maps.items == expected_items
    assert maps.base.shape == maps.refined.shape == (2, 2, 6, 6)
    np.testing.assert_allclose(maps.base.sum(-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(maps.refined.sum(-1), 1.0, atol=1e-5)
    if not bert:  # causal: nothing right of the diagonal
        assert np.all(np.triu(maps.base, k=1) == 0) and np.all(np.triu(maps.refined, k=1) == 0)
    assert maps.is_refined and maps.made_by == ["refined", "refined"]
    with torch.no_grad():  # the same numbers as the model's own weights
        inputs = model.next_inputs(torch.from_numpy(rec.vocab.encode(history[-6:])).unsqueeze(0))
        weights = model.encode(inputs, need_weights=True)[1]
    np.testing.assert_array_equal(maps.refined[1], weights[1].refined[0].numpy())
    shorter = rec.attention(["i3", "x", "i1"], unknown="ignore")  # padding is left out, unknown ids skipped
    assert shorter.items == (["i3", "i1", "[mask]"] if bert else ["i3", "i1"])
    n = len(shorter.items)
    with torch.no_grad():  # the real positions are the window's last n slots: its lower-right corner
        padded = torch.tensor([[0, 0, 0, 0, 3, 1]])
        weights = model.encode(model.next_inputs(padded), need_weights=True)[1]
    for layer in range(2):
        np.testing.assert_array_equal(shorter.base[layer], weights[layer].base[0, :, -n:, -n:].numpy())
        np.testing.assert_array_equal(shorter.refined[layer], weights[layer].refined[0, :, -n:, -n:].numpy())
    np.testing.assert_allclose(shorter.refined.sum(-1), 1.0, atol=1e-5)  # nothing of the rows was in the padding
    with pytest.raises(UnknownItemError, match="'x'"):
        rec.attention(["i3", "x"])


def test_attention_maps_of_calibrated_attention_say_so():
    # AC-TSR's B is A_comb even under refine: none: the maps must not credit a refinement.
    torch.manual_seed(0)
    model = build_model(ModelConfig(max_len=6, hidden_size=8, num_heads=2, num_blocks=2, attention="calibrated"), 9)
    rec = Recommender(model, Vocabulary([f"i{x}" for x in range(1, 10)]), max_len=6)
    maps = rec.attention(["i3", "i1", "i7"])
    assert maps.is_refined and maps.made_by == ["calibrated", "calibrated"]


def test_a_recommender_refuses_a_vocabulary_or_window_its_model_was_not_built_for():
    model = build_model(ModelConfig(max_len=6, hidden_size=8, num_heads=2, num_blocks=1), 9)
    with pytest.raises(ConfigError, match="^the vocabulary has 1,000 ids but the model scores 9 items$"):
        Recommender(model, Vocabulary(list(range(1, 1001))), max_len=6)  # was an IndexError at the first call
    with pytest.raises(ConfigError, match="^max_len 50 is not the model's, 6"):
        Recommender(model, Vocabulary(list(range(1, 10))), max_len=50)


def test_attention_maps_of_an_unrefined_model_credit_nothing():
    for name in ("sasrec", "bert4rec"):
        model = build_model(ModelConfig(name=name, max_len=6, hidden_size=8, num_heads=2, num_blocks=2), 9)
        maps = Recommender(model, Vocabulary([f"i{x}" for x in range(1, 10)]), max_len=6).attention(["i3", "i1", "i7"])
        assert not maps.is_refined and maps.made_by == ["none", "none"], name


def test_exclusions_and_flags_of_the_wrong_kind_are_clear_errors(trained_run):
    rec = Recommender.load(trained_run.run_dir)
    assert rec.recommend([1, 2], k=3, exclude=None) == rec.recommend([1, 2], k=3)  # None: nothing excluded
    kept = rec.recommend([1, 2], k=3)
    # a generator is read once, yet excludes from the scores all the same
    assert kept[0].item not in [r.item for r in rec.recommend([1, 2], k=3, exclude=(x for x in [kept[0].item]))]
    with pytest.raises(ConfigError, match="exclude is one list of item ids, left out of every history's recommendations; got int 5"):
        rec.recommend([1, 2], exclude=5)
    # per-history lists are not ids: taken as unknown ids, they excluded nothing, silently
    with pytest.raises(ConfigError, match=r"exclude\[1\] is a list, not an item id \(exclude is one list of item ids"):
        rec.recommend_many([[1, 2], [3]], exclude=[4, [5]])
    with pytest.raises(ConfigError, match="exclude_seen must be true or false, got 'no'"):  # "no" is truthy
        rec.recommend([1, 2], exclude_seen="no")
    with pytest.raises(ConfigError, match="histories is a list of histories.*got NoneType"):
        rec.recommend_many(None)


def test_exclusions_whose_iteration_gives_no_ids_are_refused_not_skipped(trained_run):
    """Unknown exclude ids are skipped, so a table (its column names), a mapping (its keys), a
    series of lists, None or True would exclude nothing without a word."""
    import polars as pl

    rec = Recommender.load(trained_run.run_dir)
    blocked = rec.recommend([1, 2], k=1)[0].item
    refused = [
        (pl.DataFrame({"item": [blocked]}), r"exclude is one list of item ids, .*; got a DataFrame: give its item column's values"),
        ({0: [blocked]}, r"exclude is one list of item ids, .*; got dict \{0: "),
        (pl.Series([[blocked]]), r"exclude\[0\] is a (list|Series), not an item id"),
        ([None], r"exclude\[0\] is None, not an item id"),
        ([blocked, True], r"exclude\[1\] is True, not an item id"),
        (np.array(blocked), r"exclude is one list of item ids, .*; got ndarray"),
        (torch.tensor(blocked), r"exclude is one list of item ids, .*; got Tensor"),
    ]
    pd = None
    try:
        import pandas as pd
    except ImportError:  # pandas is not a dependency
        pass
    if pd is not None:
        refused.append((pd.DataFrame({"item": [blocked]}), r"got a DataFrame: give its item column's values"))
    for exclude, message in refused:
        with pytest.raises(ConfigError, match=message):
            rec.recommend_many([[1, 2], [3]], k=2, exclude=exclude)
    with pytest.raises(ConfigError, match=r"^history is a list of item ids, oldest first; got a DataFrame"):
        rec.recommend(pl.DataFrame({"item": [1, 2]}), k=2)
    # a series of ids is a list of ids
    series = [pl.Series([blocked])] + ([pd.Series([blocked])] if pd is not None else [])
    for exclude in series:
        assert blocked not in [r.item for r in rec.recommend([1, 2], k=3, exclude=exclude)]


def test_repeats_are_dropped_by_the_vocabularys_key(trained_run):
    """Under a duplicates policy, 1 and 1.0 are one item to the vocabulary, so a repeat too."""
    from awrsr.infer import load_artifact

    artifact = load_artifact(trained_run.run_dir)
    for policy in ("consecutive", "first"):
        rec = Recommender(artifact.model, artifact.vocab, artifact.model_config.max_len, duplicates=policy)
        assert rec.recommend([1, 1.0, 2], k=3) == rec.recommend([1, 2], k=3)
        assert rec.recommend([1, np.int64(1), "1", 2], k=3) == rec.recommend([1, 2], k=3)


class FixedScores(torch.nn.Module):
    """A stand-in model: the same given score for each item whatever the history, and a record of
    the windows (model inputs) it was asked to score."""

    def __init__(self, scores):
        super().__init__()
        self.scores = torch.tensor(scores, dtype=torch.float32)
        self.windows = []

    def score_next(self, input_ids):
        self.windows.extend(input_ids.tolist())
        return self.scores.expand(len(input_ids), -1).clone()


def test_the_model_is_given_each_historys_last_max_len_items_left_padded():
    model = FixedScores([0.0] * 9)
    rec = Recommender(model, Vocabulary(list(range(1, 10))), max_len=6)  # id i is index i
    rec.recommend_many([[3, 1, 7, 2, 9, 4, 5, 8], [6, 2]], k=2)
    assert sorted(model.windows) == sorted([[7, 2, 9, 4, 5, 8], [0, 0, 0, 0, 6, 2]])


def test_masking_seen_or_excluded_items_leaves_a_models_own_scores_alone():
    """The popularity model's scores are its counts, expanded: filtering written into them would
    remove an item from every later recommendation."""
    from awrsr.models import PopularityModel

    model = PopularityModel(np.array([1, 1, 2, 2, 2, 3, 3, 3, 3, 4]), 5)  # counts 2, 3, 4, 1, 0
    counts = model.counts.clone()
    rec = Recommender(model, Vocabulary(["a", "b", "c", "d", "e"]), max_len=6)
    assert [r.item for r in rec.recommend(["c"], k=2)] == ["b", "a"]  # c is seen
    assert [r.item for r in rec.recommend(["e"], k=2, exclude_seen=False, exclude=["b"])] == ["c", "a"]
    assert torch.equal(model.counts, counts)
    assert [r.item for r in rec.recommend(["e"], k=2)] == ["c", "b"]


def test_a_float64_model_is_ranked_in_float64():
    # 1 + 1e-9 and 1 are one float32 number: rounding would let topk's tie order pick the first,
    # which is wrong in one of the two orders.
    for scores, best in (([1.0, 1.0 + 1e-9, 0.0], "b"), ([1.0 + 1e-9, 1.0, 0.0], "a")):
        model = FixedScores([])
        model.scores = torch.tensor(scores, dtype=torch.float64)
        top = Recommender(model, Vocabulary(["a", "b", "c"]), max_len=4).recommend(["c"], k=1)
        assert top[0].item == best


def test_an_item_scored_plus_infinity_is_refused_not_recommended_first():
    # -inf is how filtered items are marked; +inf, like NaN, says the model is broken
    rec = Recommender(FixedScores([0.5, float("inf"), 0.1]), Vocabulary(["a", "b", "c"]), max_len=4)
    with pytest.raises(FloatingPointError, match="non-finite scores"):
        rec.recommend(["c"], k=1)


def test_a_cuda_device_index_must_be_below_the_number_of_devices(monkeypatch):
    from awrsr.infer.recommender import resolve_device

    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)  # cuda:0 and cuda:1
    assert resolve_device("cuda:1") == torch.device("cuda:1")
    with pytest.raises(ConfigError, match=r"^device 'cuda:2': torch sees 2 CUDA device\(s\) on this machine$"):
        resolve_device("cuda:2")
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    with pytest.raises(ConfigError, match="torch sees 0 CUDA device"):
        resolve_device("cuda")  # cuda:0, on a machine without one


@pytest.mark.parametrize("device", ["meta", "xla", "gpu", None, 0.5])
def test_a_device_other_than_cpu_cuda_or_mps_is_a_config_error(device):
    """torch knows "meta" and "xla" but a Recommender cannot score there; "gpu" and None are no
    device at all: each is a one-line ConfigError, not a failure at the first request."""
    from awrsr.infer.recommender import resolve_device

    with pytest.raises(ConfigError, match=f"^device must be cpu, cuda, cuda:N, mps or auto, got {device!r}$"):
        resolve_device(device)


def test_mps_on_a_machine_without_it_is_a_config_error(monkeypatch):
    from awrsr.infer.recommender import resolve_device

    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ConfigError, match="^device 'mps': MPS is not available on this machine$"):
        resolve_device("mps")
    assert resolve_device("auto") == torch.device("cpu")  # and auto falls back to the CPU


def test_arguments_that_only_look_right_are_config_errors():
    """True is an int to Python and a set iterates, but neither is what a caller means: k=True
    would ask for one item, a set has no order of consumption. numpy's bool is a boolean."""
    rec = Recommender(FixedScores([0.3, 0.2, 0.1]), Vocabulary(["a", "b", "c"]), max_len=4)
    with pytest.raises(ConfigError, match="^k must be an integer >= 1, got True$"):
        rec.recommend(["a"], k=True)
    with pytest.raises(ConfigError, match="^history is a list of item ids, oldest first; got set"):
        rec.recommend({"a", "b"})
    with pytest.raises(ConfigError, match=r"^histories\[0\] is a list of item ids, oldest first; got frozenset"):
        rec.recommend_many([frozenset({"a"})])
    with pytest.raises(ConfigError, match="^batch_size must be an integer >= 1, got True$"):
        rec.top_k(Sequences.from_lists([[1]]), k=1, batch_size=True)
    assert rec.recommend(["a"], k=2, exclude_seen=np.True_) == rec.recommend(["a"], k=2) == [
        ("b", pytest.approx(0.2)), ("c", pytest.approx(0.1))]


@pytest.mark.parametrize("index", [0, 4, -1])
def test_top_k_refuses_item_indices_outside_the_model(index):
    # 0 would mask the last item's column (-1) without a word; past the end, torch's IndexError
    rec = Recommender(FixedScores([0.3, 0.2, 0.1]), Vocabulary(["a", "b", "c"]), max_len=4)
    with pytest.raises(ConfigError, match=rf"^top_k's histories hold item index {index}, outside the model's 1\.\.3"):
        rec.top_k(Sequences(np.array([0, 2]), np.array([1, index])), k=2)
    cols, _ = rec.top_k(Sequences.from_lists([[1, 3]]), k=1)  # the edges are items
    assert cols.tolist() == [[1]]


def test_an_error_names_the_history_only_when_there_are_several():
    rec = Recommender(FixedScores([0.3, 0.2, 0.1]), Vocabulary(["a", "b", "c"]), max_len=4)
    with pytest.raises(UnknownItemError, match=r"^unknown item id\(s\): 'zz'$"):
        rec.recommend(["a", "zz"])
    with pytest.raises(UnknownItemError, match=r"^histories\[1\]: unknown item id\(s\): 'zz'$"):
        rec.recommend_many([["a"], ["zz"]])


def test_histories_are_scored_in_batches_of_similar_lengths():
    """Short and long histories alternate; batched by length, each batch's windows hold as many
    real items, so the model runs on the narrowest window that holds each batch."""
    model = FixedScores([0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1])  # item i scores 1 - i / 10
    batches = []
    score_next = model.score_next
    model.score_next = lambda ids: batches.append((ids > 0).sum(1).tolist()) or score_next(ids)
    rec = Recommender(model, Vocabulary(list(range(1, 10))), max_len=6)
    histories = Sequences.from_lists([[1], [1, 2, 3, 4, 5], [2], [3, 4, 5, 6, 7], [3]])
    cols, _ = rec.top_k(histories, k=2, batch_size=2)
    assert batches == [[1, 1], [1, 5], [5]]
    assert cols.tolist() == [[1, 2], [5, 6], [0, 2], [0, 1], [0, 1]]  # in the histories' order, seen items left out
