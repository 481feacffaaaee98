import torch

from awrsr.data import Sequences
from awrsr.train.batches import next_item_tensors, training_loader


def test_next_item_examples_by_hand():
    train = Sequences.from_lists([[1, 2, 3, 4], [5], [6, 7]])
    inputs, targets = next_item_tensors(train, max_len=3)
    assert inputs.tolist() == [[1, 2, 3], [0, 0, 6]]  # the one-item user has no example
    assert targets.tolist() == [[2, 3, 4], [0, 0, 7]]


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
