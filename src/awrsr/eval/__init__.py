"""Full-ranking evaluation: metrics, ranks and the evaluator."""

from awrsr.eval.config import EvalConfig
from awrsr.eval.evaluator import EvalBatch, FullRankingEvaluator, build_eval_batches, mask_items_, rank_batch
from awrsr.eval.metrics import per_user_metric, pessimistic_ranks, ranking_metrics

__all__ = [
    "EvalBatch", "EvalConfig", "FullRankingEvaluator", "build_eval_batches", "mask_items_", "per_user_metric",
    "pessimistic_ranks", "rank_batch", "ranking_metrics",
]
