"""Leave-one-out split: last item for test, second-last for validation, the rest for training."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from awrsr.data.sequences import EvalCases, LeaveOneOutSplit

if TYPE_CHECKING:
    from awrsr.data.dataset import SequenceData

MIN_EVAL_LENGTH = 3  # a user needs at least one training item besides the two held-out ones


def leave_one_out(data: SequenceData) -> LeaveOneOutSplit:
    """Split every user's sequence ``s`` of length >= 3 into train ``s[:-2]``, validation
    (history ``s[:-2]``, target ``s[-2]``) and test (history ``s[:-1]``, target ``s[-1]``).

    Shorter users keep their whole sequence for training and are not evaluated.
    """
    seqs = data.sequences
    lengths = seqs.lengths
    evaluated = lengths >= MIN_EVAL_LENGTH
    users = np.flatnonzero(evaluated).astype(np.int64)
    train = seqs.trim(tail=np.where(evaluated, 2, 0))
    last = seqs.offsets[1:][users] - 1
    valid = EvalCases(users=users, history=train.select(users), targets=seqs.items[last - 1])
    test = EvalCases(users=users.copy(), history=seqs.select(users).drop_last(), targets=seqs.items[last])
    return LeaveOneOutSplit(train=train, valid=valid, test=test, num_items=data.num_items)
