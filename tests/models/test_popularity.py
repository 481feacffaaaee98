"""The popularity baseline every fit reports beside its model: training counts only, column j
for item j + 1, seen items filtered and ties broken pessimistically like any model."""

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
