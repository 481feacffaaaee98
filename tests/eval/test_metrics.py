import math

import numpy as np
import pytest
import torch

from awrsr.data.sequences import EvalCases, Sequences
from awrsr.errors import AwrsrError
from awrsr.eval import FullRankingEvaluator, per_user_metric, pessimistic_ranks, ranking_metrics
from awrsr.eval.evaluator import EvalBatch, rank_batch


def test_float64_scores_are_ranked_in_float64():
    # 1 + 1e-9 rounds to 1.0 in float32: a tie there, and ties count against the target.
    class Float64Scores:
        def score_next(self, input_ids):
            return torch.tensor([[1.0, 1.0 + 1e-9, 0.5]], dtype=torch.float64)

    empty = torch.zeros(0, dtype=torch.long)
    batch = EvalBatch(torch.tensor([[1]]), torch.tensor([1]), empty, empty)
    assert rank_batch(Float64Scores(), batch).tolist() == [1]


def test_an_evaluator_without_cases_is_a_clear_error():
    cases = EvalCases(np.zeros(0, np.int64), Sequences.from_lists([]), np.zeros(0, np.int64))
    with pytest.raises(AwrsrError, match="nothing to evaluate"):
        FullRankingEvaluator(cases, max_len=5)


def test_ranks_by_hand_with_ties_counted_against_the_target():
    scores = torch.tensor([
        [0.9, 0.1, 0.5, 0.5],  # target col 2 ties with col 3 and loses to col 0 -> rank 3
        [0.0, 0.0, 0.0, 0.0],  # constant scores -> last place
        [0.2, 0.8, 0.1, 0.3],  # target col 1 is the best -> rank 1
    ])
    ranks = pessimistic_ranks(scores, torch.tensor([2, 0, 1]))
    assert ranks.tolist() == [3, 4, 1]


@pytest.mark.parametrize("block_scores", [1, 7, 30, 10**6])
def test_ranks_counted_a_few_columns_at_a_time_equal_the_whole_matrix_count(monkeypatch, block_scores):
    """Blocks of 1 column (block_scores 1 with 5 rows), of 1 (7 // 5), of 6 (30 // 5, the last one
    shorter) and one block: the same ranks as a direct count, ties and filtered items included."""
    import awrsr.eval.metrics as metrics

    generator = torch.Generator().manual_seed(3)
    scores = torch.randint(0, 6, (5, 23), generator=generator).float()  # many ties
    targets = torch.tensor([0, 4, 9, 22, 13])
    excluded = (torch.tensor([0, 0, 2, 4]), torch.tensor([3, 22, 5, 0]))
    direct = (scores >= scores.gather(1, targets[:, None])).sum(dim=1)
    for row, col in zip(*excluded):
        direct[row] -= int(scores[row, col] >= scores[row, targets[row]])
    monkeypatch.setattr(metrics, "RANK_BLOCK_SCORES", block_scores)
    assert torch.equal(pessimistic_ranks(scores, targets, excluded), direct)


def test_metrics_by_hand():
    m = ranking_metrics(torch.tensor([1, 3, 12]), [1, 5, 10])
    assert m["hr@1"] == pytest.approx(1 / 3)
    assert m["hr@5"] == pytest.approx(2 / 3)
    assert m["hr@10"] == pytest.approx(2 / 3)
    assert m["ndcg@1"] == pytest.approx(1 / 3)
    assert m["ndcg@5"] == pytest.approx((1 + 1 / math.log2(4)) / 3)
    assert m["ndcg@10"] == pytest.approx(0.5)  # (1 + 1/2 + 0) / 3: rank 12 is outside the top 10
    assert m["mrr"] == pytest.approx((1 + 1 / 3 + 1 / 12) / 3)


def test_each_users_metric_from_the_rank_of_their_held_out_item():
    ranks = np.array([1, 3, 20])
    assert per_user_metric(ranks, "ndcg@5").tolist() == [1.0, 0.5, 0.0]  # 1/log2(3 + 1) = 1/2
    assert per_user_metric(ranks, "hr@5").tolist() == [1.0, 1.0, 0.0]
    assert per_user_metric(ranks, "mrr").tolist() == pytest.approx([1.0, 1 / 3, 1 / 20])
    assert per_user_metric(torch.tensor([5, 6]), "ndcg@5").tolist() == pytest.approx([1 / math.log2(6), 0.0])
    for awkward in (np.array([20.0, 3.0, 1.0])[::-1], np.array([1, 3, 20], dtype=">f8")):  # reversed; big-endian
        assert per_user_metric(awkward, "hr@5").tolist() == [1.0, 1.0, 0.0]


@pytest.mark.parametrize("metric", ["recall@5", "ndcg", "ndcg@", "hr@k", "MRR"])
def test_an_unknown_per_user_metric_is_named(metric):
    with pytest.raises(ValueError, match=f"hr@k, ndcg@k or mrr, got '{metric}'"):
        per_user_metric([1, 2], metric)


def test_the_evaluators_seen_item_filter_cannot_be_changed_after_its_batches_are_built():
    cases = EvalCases(users=np.arange(1), history=Sequences.from_lists([[1, 2]]), targets=np.array([3]))
    evaluator = FullRankingEvaluator(cases, max_len=4, filter_seen=False)
    assert evaluator.filter_seen is False
    with pytest.raises(AttributeError):
        evaluator.filter_seen = True  # it would say "filtered" and change nothing


def test_nan_scores_are_an_error_not_a_good_rank():
    with pytest.raises(FloatingPointError):
        pessimistic_ranks(torch.tensor([[float("nan"), 1.0]]), torch.tensor([0]))


def test_a_nan_anywhere_is_an_error_not_only_the_targets_or_the_first_rows():
    """A NaN among the other candidates compares false, as if it scored below the target: the
    second row's target (column 0) would quietly rank 2 of 3 instead of failing."""
    scores = torch.tensor([[0.3, 0.2, 0.1], [0.1, float("nan"), 0.5]])
    with pytest.raises(FloatingPointError, match="NaN"):
        pessimistic_ranks(scores, torch.tensor([0, 0]))


class FixedScores:
    """A scorer returning a given (users, items) score table, row by the history's last item."""

    def __init__(self, table: torch.Tensor) -> None:
        self.table = table

    def score_next(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.table[input_ids[:, -1] - 1]


def _cases() -> EvalCases:
    history = Sequences.from_lists([[1, 2], [3], [2, 4, 5]])
    return EvalCases(users=np.array([0, 1, 2]), history=history, targets=np.array([3, 1, 4]))


def test_evaluator_filters_seen_items_but_never_the_target():
    # 5 items. Row chosen by the last history item.
    table = torch.tensor([
        [0.0, 0.0, 0.0, 0.0, 0.0],
        [0.1, 0.9, 0.5, 0.2, 0.0],  # last item 2 (user 0): target 3 (0.5) behind item 2 (0.9, seen)
        [0.4, 0.8, 0.0, 0.3, 0.9],  # last item 3 (user 1): target 1 (0.4) behind 2 and 5
        [0.0, 0.0, 0.0, 0.0, 0.0],
        [0.1, 0.7, 0.3, 0.6, 0.8],  # last item 5 (user 2): target 4 (0.6) was seen, still ranked
    ])
    cases = _cases()
    filtered = FullRankingEvaluator(cases, max_len=4, ks=[1], batch_size=2).ranks(FixedScores(table))
    assert filtered.tolist() == [1, 3, 1]  # user 2: items 2 and 5 are seen and filtered
    unfiltered = FullRankingEvaluator(cases, max_len=4, ks=[1], filter_seen=False).ranks(FixedScores(table))
    assert unfiltered.tolist() == [2, 3, 3]


def test_constant_model_never_beats_chance():
    """Every target ranks last among the candidates left after filtering: no credit from ties."""
    cases = _cases()
    evaluator = FullRankingEvaluator(cases, max_len=4, ks=[1, 2])
    constant = FixedScores(torch.zeros(5, 5))
    # candidates: 5 items minus the seen ones other than the target: 3, 4 and 3
    assert evaluator.ranks(constant).tolist() == [3, 4, 3]
    metrics = evaluator.evaluate(constant)
    assert metrics["hr@2"] == 0.0 and metrics["ndcg@2"] == 0.0


@pytest.mark.parametrize("repeats", [False, True])
def test_evaluator_matches_a_brute_force_loop(repeats):
    """Histories of mixed lengths (batched by length, ranks returned in the users' order), with
    repeated items and re-consumed targets when ``repeats``."""
    rng = np.random.default_rng(0)
    num_items, users = 40, 57
    pool = np.arange(1, 13 if repeats else num_items + 1)  # a small pool makes repeats common
    rows = [list(rng.choice(pool, size=rng.integers(1, 12), replace=repeats)) for _ in range(users)]
    targets = rng.integers(1, num_items + 1, size=users)
    if repeats:
        targets[::3] = [row[0] for row in rows[::3]]  # the target was seen before: still ranked
    cases = EvalCases(users=np.arange(users), history=Sequences.from_lists(rows), targets=targets)
    table = torch.from_numpy(rng.normal(size=(num_items, num_items))).float()
    table[:, :5] = 0.0  # plenty of ties
    got = FullRankingEvaluator(cases, max_len=6, ks=[10], batch_size=16).ranks(FixedScores(table))
    for u in range(users):
        scores = table[rows[u][-1] - 1].clone()
        seen = [i - 1 for i in rows[u] if i != targets[u]]
        scores[seen] = float("-inf")
        t = targets[u] - 1
        expected = 1 + sum(1 for j in range(num_items) if j != t and scores[j] >= scores[t])
        assert got[u].item() == expected, u


def test_the_evaluator_gives_the_model_each_users_last_max_len_items_left_padded():
    rows = [[1, 2], [3], [2, 4, 5], [1, 2, 3, 4, 5, 6]]
    cases = EvalCases(users=np.arange(4), history=Sequences.from_lists(rows), targets=np.array([3, 1, 6, 2]))
    windows = []

    class Recording:
        def score_next(self, input_ids):
            windows.extend(input_ids.tolist())
            return torch.zeros(len(input_ids), 6)

    FullRankingEvaluator(cases, max_len=4, batch_size=3).ranks(Recording())
    assert sorted(windows) == sorted([[0, 0, 1, 2], [0, 0, 0, 3], [0, 2, 4, 5], [3, 4, 5, 6]])


def test_a_rank_equal_to_k_counts_as_a_hit():
    # ranks 5 and 6 at k = 5: one hit; its gain 1 / log2(5 + 1), averaged over two users
    metrics = ranking_metrics(torch.tensor([5, 6]), [5])
    assert metrics["hr@5"] == 0.5
    assert metrics["ndcg@5"] == pytest.approx(0.5 / math.log2(6))  # 0.19343


def test_evaluator_scores_in_eval_mode_and_restores_training_mode():
    from conftest import build_tiny

    model = build_tiny("sasrec", "dot", "none", dropout=0.5).train()
    cases = EvalCases(users=np.arange(2), history=Sequences.from_lists([[1, 2, 3], [4, 5]]), targets=np.array([4, 6]))
    evaluator = FullRankingEvaluator(cases, max_len=8)
    during_training = evaluator.ranks(model)
    assert model.training  # training goes on after a validation pass
    model.eval()
    assert torch.equal(during_training, evaluator.ranks(model))  # dropout was off while it scored


def test_evaluation_batches_hold_histories_of_similar_lengths():
    """Users are batched shortest history first, so that each batch's window (its longest history)
    is as narrow as it can be; the ranks still come back in the users' order."""
    rows = [[1, 2, 3, 4, 5], [1], [2, 3, 4], [5], [1, 2, 3, 4, 5, 6], [2, 3]]
    cases = EvalCases(users=np.arange(6), history=Sequences.from_lists(rows), targets=np.array([6, 2, 5, 1, 1, 6]))
    evaluator = FullRankingEvaluator(cases, max_len=8, batch_size=2, filter_seen=False)
    widths = [int((batch.input_ids > 0).sum(1).max()) for batch in evaluator]
    assert widths == [1, 3, 6]  # lengths 1, 1 | 2, 3 | 5, 6: plain batches in user order would all be 5 or 6 wide
    table = torch.diag(torch.ones(5), 1)  # item l + 1 scores 1 after item l, everything else 0
    # users 0-2's target follows their last item (rank 1); the others' ties with four zeros count against it
    assert evaluator.ranks(FixedScores(table)).tolist() == [1, 1, 1, 6, 6, 6]


def test_validation_scores_in_float32_under_bf16_mixed_training():
    """bf16 scores would tie many items, and ties count against the target: the training module's
    validation step turns autocast off, so its ranks are the float32 evaluator's."""
    from conftest import build_tiny

    from awrsr.train.module import SequentialRecommenderModule

    torch.manual_seed(0)
    model = build_tiny("sasrec", "dot", "none", hidden_size=32).eval()
    rng = np.random.default_rng(0)
    rows = [list(rng.integers(1, 21, size=rng.integers(2, 9))) for _ in range(64)]
    cases = EvalCases(users=np.arange(64), history=Sequences.from_lists(rows), targets=rng.integers(1, 21, size=64))
    evaluator = FullRankingEvaluator(cases, max_len=8, filter_seen=False)
    module = SequentialRecommenderModule(model, loss="ce", num_negatives=0, lr=1e-3, weight_decay=0.0, ks=[10])
    with torch.autocast("cpu", dtype=torch.bfloat16):
        for batch in evaluator:
            module.validation_step(batch, 0)
        with torch.no_grad():
            bf16_scores = model.score_next(evaluator.batches[0].input_ids)
    assert bf16_scores.dtype == torch.bfloat16  # autocast was on around the step
    in_float32 = torch.cat([rank_batch(model, batch) for batch in evaluator])
    assert torch.equal(torch.cat(module._val_ranks), in_float32)
