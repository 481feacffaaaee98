import torch

from awrsr.data import Sequences
from awrsr.models import ModelConfig, build_model
from awrsr.train.batches import training_loader, training_sequences


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
