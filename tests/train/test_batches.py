import numpy as np
import pytest
import torch
from conftest import tiny_run_config

from awrsr.data import Sequences
from awrsr.models import ModelConfig, build_model
from awrsr.train.batches import even_cuts, training_loader, training_sequences


def test_training_sequences_and_next_item_examples_by_hand():
    train = Sequences.from_lists([[1, 2, 3, 4], [5], [6, 7]])
    sequences = training_sequences(train, max_len=3)
    assert sequences.tolist() == [[1, 2, 3, 4], [0, 0, 6, 7]]  # the one-item user has no example
    inputs, targets = build_model(ModelConfig(max_len=3), num_items=7).training_example(sequences)
    assert inputs.tolist() == [[1, 2, 3], [0, 0, 6]]
    assert targets.tolist() == [[2, 3, 4], [0, 0, 7]]  # 6 has no input before it: not a target


def test_cloze_sees_every_item_of_a_short_sequence():
    train = Sequences.from_lists([[11, 12, 13], [21, 22]])
    bert = build_model(ModelConfig(name="bert4rec", max_len=4, mask_prob=0.5), num_items=30)
    seen = set()
    for _ in range(50):
        inputs, targets = bert.training_example(training_sequences(train, max_len=4))
        seen |= set(inputs[inputs != bert.mask_id].tolist()) | set(targets[targets > 0].tolist())
    assert seen - {0} == {11, 12, 13, 21, 22}


def test_shuffle_depends_only_on_the_seed():
    train = Sequences.from_lists([[i, i + 1, i + 2] for i in range(1, 40)])
    order = lambda seed: torch.cat([b[0] for b in training_loader(train, 4, 8, seed)]).tolist()
    assert order(3) == order(3)
    assert order(3) != order(4)


def test_each_epoch_has_its_own_order_that_a_resumed_run_can_replay():
    train = Sequences.from_lists([[i, i + 1, i + 2] for i in range(1, 40)])
    loader = training_loader(train, 4, 8, seed=3)

    def order(epoch: int) -> list:
        loader.sampler.set_epoch(epoch)
        return torch.cat([b[0] for b in loader]).tolist()

    first, second = order(0), order(1)
    assert first != second
    assert sorted(map(tuple, first)) == sorted(map(tuple, second))  # a permutation of the same examples
    fresh = training_loader(train, 4, 8, seed=3)
    fresh.sampler.set_epoch(1)
    assert torch.cat([b[0] for b in fresh]).tolist() == second


def test_making_a_batch_iterator_leaves_the_global_rng_alone():
    train = Sequences.from_lists([[i, i + 1, i + 2] for i in range(1, 40)])
    loader = training_loader(train, 4, 8, seed=3)
    torch.manual_seed(0)
    iter(loader)
    assert torch.equal(torch.get_rng_state(), torch.manual_seed(0).get_state())


# --- batches of similar history lengths (train.group_by_length) --------------------------------


def _mixed_lengths(users: int = 300, seed: int = 0) -> Sequences:
    rng = np.random.default_rng(seed)
    return Sequences.from_lists([list(range(1, 2 + int(n))) for n in rng.integers(1, 20, users)])  # 2-20 items: windows of 21 are never full


def _epoch(loader, epoch: int) -> list[torch.Tensor]:
    loader.batch_sampler.sampler.set_epoch(epoch)  # where Lightning sets it
    return [b[0] for b in loader]


def test_grouped_batches_cover_every_user_once_in_as_many_batches_as_plain_batching():
    train = _mixed_lengths()
    plain = training_loader(train, 20, 16, seed=3)
    grouped = training_loader(train, 20, 16, seed=3, group_by_length=True)
    batches = _epoch(grouped, 0)
    assert len(batches) == len(grouped) == len(plain)
    everyone = torch.cat([b for b in _epoch(plain, 0)])
    assert sorted(map(tuple, torch.cat(batches).tolist())) == sorted(map(tuple, everyone.tolist()))


def _padded_slots(batch: torch.Tensor) -> int:  # what the model computes on: rows x the longest window
    return len(batch) * int((batch != 0).sum(dim=1).max())


def test_grouped_batches_pad_less_and_hold_about_equal_real_positions():
    train = _mixed_lengths()
    plain, grouped = (training_loader(train, 20, 16, seed=3, group_by_length=g) for g in (False, True))
    batches = _epoch(grouped, 0)
    assert sum(map(_padded_slots, batches)) < 0.75 * sum(map(_padded_slots, _epoch(plain, 0)))
    positions = [int((b != 0).sum()) for b in batches]
    assert max(positions) - min(positions) <= 2 * 21  # lengths change gradually here: within two windows
    # Within a pool, batches are runs of the length-sorted users: their length ranges do not interleave.
    spans = sorted(((b != 0).sum(dim=1).min().item(), (b != 0).sum(dim=1).max().item()) for b in batches)
    assert all(high <= next_low for (_, high), (next_low, _) in zip(spans, spans[1:]))


def test_a_jump_in_lengths_never_makes_a_batch_larger_than_a_plain_one():
    # Half the users fill the window, half have 2 items: a cut on real positions alone would put
    # one long history with hundreds of short ones, a batch many times a plain batch's size.
    train = Sequences.from_lists([list(range(1, 31))] * 150 + [[1, 2]] * 150)
    grouped = training_loader(train, 20, 16, seed=3, group_by_length=True)
    batches = _epoch(grouped, 0)
    assert len(batches) == len(training_loader(train, 20, 16, seed=3))
    assert max(map(_padded_slots, batches)) <= 16 * 21
    assert sorted(map(tuple, torch.cat(batches).tolist())) == sorted(map(tuple, training_sequences(train, 20).tolist()))


def test_grouped_batches_depend_only_on_seed_and_epoch():
    train = _mixed_lengths()
    loader = training_loader(train, 20, 16, seed=3, group_by_length=True)
    first, second = _epoch(loader, 0), _epoch(loader, 1)
    assert [b.tolist() for b in first] != [b.tolist() for b in second]
    fresh = training_loader(train, 20, 16, seed=3, group_by_length=True)
    assert [b.tolist() for b in _epoch(fresh, 1)] == [b.tolist() for b in second]  # a resumed run replays it
    other = training_loader(train, 20, 16, seed=4, group_by_length=True)
    assert [b.tolist() for b in _epoch(other, 0)] != [b.tolist() for b in first]


def test_grouped_batches_come_in_a_shuffled_order_not_by_length():
    loader = training_loader(_mixed_lengths(), 20, 16, seed=3, group_by_length=True)
    for epoch in range(3):
        widths = [int((b > 0).sum(1).max()) for b in _epoch(loader, epoch)]  # each batch's longest window
        assert len(set(widths)) > 3
        assert widths != sorted(widths) and widths != sorted(widths, reverse=True), widths


@pytest.mark.parametrize(
    "lengths, parts",
    [([5, 1, 1, 1], 3), ([30, 30, 2, 2, 2], 5), ([3, 2, 2, 1], 1), ([7] * 9, 4), ([9, 2, 2, 2, 2, 2, 2], 2), ([4, 3, 3, 2, 1], 4)],
)
def test_even_cuts_give_non_empty_parts_no_larger_than_equal_row_batches(lengths, parts):
    lengths = np.array(lengths)
    pieces = np.split(lengths, even_cuts(lengths, parts))
    assert len(pieces) == parts and all(len(p) for p in pieces)
    largest = max(len(p) * p.max() for p in pieces)
    equal_rows = -(-len(lengths) // parts)  # plain batching: every batch of equal rows
    assert largest <= max(len(p) * p.max() for p in np.split(lengths, range(equal_rows, len(lengths), equal_rows)))


def test_a_fit_with_grouped_batches_trains_and_resumes_like_any_other(tmp_path):
    from rich.console import Console

    from awrsr.workflows import fit

    config = tiny_run_config(tmp_path / "grouped", group_by_length=True, max_epochs=4, patience=4)
    result = fit(**config, console=Console(quiet=True))
    m = result.metrics
    assert m["test"]["ndcg@10"] > m["popularity"]["test"]["ndcg@10"]
    # Two epochs, then two more from the checkpoint, give the uninterrupted run's history exactly.
    split = tiny_run_config(tmp_path / "split", group_by_length=True, max_epochs=2, patience=4)
    fit(**split, console=Console(quiet=True))
    again = tiny_run_config(tmp_path / "split", group_by_length=True, max_epochs=4, patience=4)
    resumed = fit(**again, console=Console(quiet=True), resume=True)
    assert resumed.metrics["valid"] == m["valid"] and resumed.metrics["test"] == m["test"]


def test_even_cuts_by_hand_equal_positions_where_a_plain_batch_would_be_as_large():
    # 8 and 8 positions (a cut one later gives 12 and 4)
    assert even_cuts(np.array([4, 4, 4, 2, 2]), 2).tolist() == [2]
    # 3 and 5 positions; the second batch's padded size, 2 x 3, is exactly a plain batch's of 2 rows,
    # so equal positions need no fallback (which would give 6 and 2)
    assert even_cuts(np.array([3, 3, 2]), 2).tolist() == [1]


@pytest.mark.parametrize("lengths, parts", [([6, 1, 1], 3), ([4, 2, 2], 3), ([10, 1, 1, 1, 1], 4), ([9, 2, 2, 2, 2, 2, 2], 3)])
def test_padded_cuts_give_non_empty_parts_even_where_the_fill_needs_fewer(lengths, parts):
    from awrsr.train.batches import padded_cuts

    lengths = np.array(lengths)
    pieces = np.split(lengths, padded_cuts(lengths, parts))
    assert len(pieces) == parts and all(len(p) for p in pieces), pieces


def test_grouped_batches_are_cut_within_pools_of_the_given_number_of_batches():
    from awrsr.train.batches import EpochShuffle, LengthGroupedBatches

    lengths = np.random.default_rng(0).integers(2, 20, 40)
    shuffle = EpochShuffle(40, seed=3)
    order = list(shuffle)
    for pool in (1, 2):
        batches = list(LengthGroupedBatches(shuffle, lengths, batch_size=4, pool=pool))
        pools = [set(order[i:i + 4 * pool]) for i in range(0, 40, 4 * pool)]
        assert len(batches) == 10
        assert all(any(set(b) <= p for p in pools) for b in batches)  # no batch mixes two pools
    # pools of one batch: every batch is a run of four users of the epoch's permutation, as in plain batching
    assert sorted(map(sorted, LengthGroupedBatches(shuffle, lengths, 4, pool=1))) == sorted(map(sorted, (order[i:i + 4] for i in range(0, 40, 4))))


def test_a_loader_counts_its_last_partial_batch():
    train = Sequences.from_lists([[i, i + 1] for i in range(1, 42)])  # 41 users: 5 full batches of 8 and one of 1
    for grouped in (False, True):
        loader = training_loader(train, 4, 8, seed=3, group_by_length=grouped)
        assert len(loader) == len(list(loader)) == 6  # Lightning takes len() batches an epoch
        assert sum(len(b[0]) for b in loader) == 41
    assert len(training_loader(train, 4, 8, seed=3).sampler) == 41
