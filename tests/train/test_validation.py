"""The validation a training logs each epoch is the evaluator's: scored in float32 whatever the
training precision, over that epoch's ranks only."""

import numpy as np
import torch

from awrsr.data.sequences import EvalCases, Sequences
from awrsr.eval import FullRankingEvaluator
from awrsr.models import ModelConfig, build_model
from awrsr.train.module import SequentialRecommenderModule

NUM_ITEMS = 3000  # many items with close scores: bf16's 8-bit mantissa ties some with each target


def _setting():
    torch.manual_seed(0)
    model = build_model(ModelConfig(max_len=8, hidden_size=16, num_heads=1, num_blocks=1, dropout=0.0), NUM_ITEMS)
    rng = np.random.default_rng(0)
    cases = EvalCases(
        users=np.arange(64), history=Sequences.from_lists(rng.integers(1, NUM_ITEMS + 1, (64, 6)).tolist()),
        targets=rng.integers(1, NUM_ITEMS + 1, 64),
    )
    evaluator = FullRankingEvaluator(cases, max_len=8, ks=[1, 5, 10, 20], batch_size=16)
    module = SequentialRecommenderModule(model, loss="ce", num_negatives=1, lr=1e-3, weight_decay=0.0, ks=[1, 5, 10, 20])
    return model, evaluator, module.eval()


def _validation_epoch(module: SequentialRecommenderModule, evaluator: FullRankingEvaluator) -> dict[str, float]:
    """One validation epoch as Lightning runs it (a step per batch, then the epoch's end), under
    bf16-mixed training's autocast; what it logs."""
    logged = {}
    module.log_dict = lambda values, **_: logged.update(values)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        for index, batch in enumerate(evaluator):
            module.validation_step(batch, index)
        module.on_validation_epoch_end()
    return {name.removeprefix("val/"): value for name, value in logged.items()}


def test_validation_under_bf16_mixed_training_ranks_as_the_float32_evaluator_does():
    model, evaluator, module = _setting()
    with torch.autocast("cpu", dtype=torch.bfloat16):  # the setting must tell bf16 from float32 scores
        bf16_ranks = evaluator.ranks(model)
    assert not torch.equal(bf16_ranks, evaluator.ranks(model))
    assert _validation_epoch(module, evaluator) == evaluator.evaluate(model)


def test_each_validation_epoch_is_scored_on_its_own_ranks():
    model, evaluator, module = _setting()
    first = _validation_epoch(module, evaluator)
    with torch.no_grad():  # the model moves on between two validations
        model.embedding.items.weight.mul_(-1.0)
    second = _validation_epoch(module, evaluator)
    assert second == evaluator.evaluate(model) != first
