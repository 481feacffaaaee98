"""The popularity baseline every fit reports beside its model: training counts only, column j
for item j + 1, seen items filtered and ties broken pessimistically like any model."""

from types import SimpleNamespace

import numpy as np
import polars as pl
import pytest
import torch
from rich.console import Console

from awrsr.models import PopularityModel


def test_each_item_scores_its_training_count():
    model = PopularityModel(np.array([1, 1, 2, 3, 3, 3]), num_items=4)
    assert torch.equal(model.score_next(torch.zeros(2, 5, dtype=torch.long)), torch.tensor([[2.0, 1.0, 3.0, 0.0]] * 2))


def test_fits_popularity_counts_the_training_items_only(tmp_path):
    """Users 1-3: a e | b | c (train | valid | test), user 4: d e | a | b. Training counts a 3,
    e 4, d 1, b and c 0. Users 1-3 have seen a, e, b: c (0) ranks behind d (1), rank 2. User 4
    has seen d, e, a: b ties c at 0, rank 2 (pessimistic). So HR@1 0 and MRR 0.5; counting every
    interaction (a 4, b 4, c 3) would put each target first."""
    import dataclasses

    from awrsr.data import DataConfig
    from awrsr.workflows import fit
    from conftest import tiny_run_config

    rows = {1: "aebc", 2: "aebc", 3: "aebc", 4: "deab"}
    frame = pl.DataFrame({
        "user_id": [u for u, items in rows.items() for _ in items],
        "item_id": [i for items in rows.values() for i in items],
    })
    cfg = tiny_run_config(tmp_path / "run", max_epochs=1)
    cfg["data"] = DataConfig(min_user_interactions=0, min_item_interactions=0)
    cfg["model"] = dataclasses.replace(cfg["model"], max_len=4, hidden_size=8)
    popularity = fit(**cfg, frame=frame, console=Console(quiet=True)).metrics["popularity"]["test"]
    assert popularity["hr@1"] == 0.0 and popularity["mrr"] == pytest.approx(0.5)


@pytest.mark.parametrize("filter_seen", [True, False])
def test_shared_scores_rank_exactly_as_the_brute_force_count(filter_seen):
    """The sorted search over the popularity counts gives each target the rank the (users x
    items) count gives: many tied counts (ties are pessimistic), histories that repeat items and
    that hold their own target (never filtered), several batches, and users kept in order."""
    from awrsr.data.sequences import EvalCases, Sequences
    from awrsr.eval import FullRankingEvaluator

    rng = np.random.default_rng(3)
    num_items = 40
    counts = rng.integers(0, 8, size=num_items)  # 8 values over 40 items: many ties, zeros among them
    popularity = PopularityModel(np.repeat(np.arange(1, num_items + 1), counts), num_items)
    rows = [list(rng.integers(1, num_items + 1, size=rng.integers(1, 30))) for _ in range(70)]
    targets = rng.integers(1, num_items + 1, size=70)
    rows[0] += [int(targets[0])] * 2  # a target seen before
    cases = EvalCases(users=np.arange(70), history=Sequences.from_lists(rows), targets=targets)
    evaluator = FullRankingEvaluator(cases, max_len=16, filter_seen=filter_seen, batch_size=16)
    brute = evaluator.ranks(SimpleNamespace(score_next=popularity.score_next))  # no shared_scores: the (users x items) count
    popularity.score_next = lambda input_ids: pytest.fail("the shared scores were ranked by the brute-force count")
    fast = evaluator.ranks(popularity)
    assert torch.equal(fast, brute)
    assert len(set(fast.tolist())) >= 6  # ranks of many sizes, not one value that would hide an offset


def test_nan_shared_scores_are_an_error_not_better_ranks():
    from awrsr.data.sequences import EvalCases, Sequences
    from awrsr.eval import FullRankingEvaluator

    class NanPopularity(torch.nn.Module):
        def shared_scores(self) -> torch.Tensor:
            return torch.tensor([1.0, float("nan"), 0.5])

    cases = EvalCases(users=np.arange(2), history=Sequences.from_lists([[1], [2]]), targets=np.array([3, 1]))
    with pytest.raises(FloatingPointError, match="NaN"):
        FullRankingEvaluator(cases, max_len=4).ranks(NanPopularity())
