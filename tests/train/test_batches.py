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
