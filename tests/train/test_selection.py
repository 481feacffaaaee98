"""Model selection with scripted validation scores, so the best and the stopping epochs are known
by hand: early stopping on the monitor with its patience, the best epoch's weights saved (and
test-scored), a changed patience on resume, and interrupted compare/tune runs continued, not restarted."""

import pytest
import torch
from rich.console import Console

from awrsr.train.module import SequentialRecommenderModule
from awrsr.workflows import fit
from conftest import tiny_run_config

QUIET = Console(quiet=True)
# validation NDCG@10 by epoch: best at epoch 2, then no better; MRR rises every epoch
NDCG = [0.10, 0.30, 0.20, 0.25, 0.20, 0.20, 0.20, 0.20, 0.20, 0.20]
MRR = [0.01 * (e + 1) for e in range(10)]


@pytest.fixture
def scripted(monkeypatch):
    """Validation logs NDCG and MRR from the script; the weights at each validation are kept."""
    weights = {}

    def on_validation_epoch_end(self):
        self._val_ranks.clear()
        epoch = self.current_epoch + 1
        weights[epoch] = {k: v.detach().clone() for k, v in self.model.state_dict().items()}
        self.log_dict({"val/ndcg@10": NDCG[epoch - 1], "val/mrr": MRR[epoch - 1]}, prog_bar=False)

    monkeypatch.setattr(SequentialRecommenderModule, "on_validation_epoch_end", on_validation_epoch_end)
    return weights


def small(run_dir, **train):
    cfg = tiny_run_config(run_dir, **{"max_epochs": 8, **train})
    cfg["data"].synthetic.num_users = 120
    return cfg


def test_early_stopping_on_the_monitor_with_its_patience_and_the_best_epochs_weights(scripted, tmp_path):
    run = fit(**small(tmp_path / "run", patience=2), console=QUIET)
    sel = run.metrics["selection"]
    # epoch 2 is best; epochs 3 and 4 do not improve on it: 2 checks without improvement = patience
    assert sel == {"monitor": "valid ndcg@10", "best_epoch": 2, "best_value": pytest.approx(0.30),
                   "epochs_trained": 4, "stopped_by": "early stopping"}
    # the saved model (and so the test scores) are epoch 2's weights, not the last epoch's
    from awrsr.infer import load_artifact

    saved = load_artifact(run.run_dir).model.state_dict()
    assert set(saved) == set(scripted[2])
    assert all(torch.equal(saved[k], scripted[2][k]) for k in saved)
    assert not all(torch.equal(saved[k], scripted[4][k]) for k in saved)


def test_a_tie_with_the_best_is_no_gain_and_keeps_the_earlier_weights(scripted, tmp_path, monkeypatch):
    monkeypatch.setitem(globals(), "NDCG", [0.10, 0.30, 0.30, 0.20] + [0.20] * 6)
    run = fit(**small(tmp_path / "run", patience=2), console=QUIET)
    sel = run.metrics["selection"]
    assert (sel["best_epoch"], sel["epochs_trained"], sel["stopped_by"]) == (2, 4, "early stopping")
    from awrsr.infer import load_artifact

    saved = load_artifact(run.run_dir).model.state_dict()
    assert all(torch.equal(saved[k], scripted[2][k]) for k in saved)
    assert not all(torch.equal(saved[k], scripted[3][k]) for k in saved)  # epoch 3 tied; its weights differ


def test_a_run_stopped_early_resumes_with_the_patience_given_now(scripted, tmp_path):
    fit(**small(tmp_path / "run", patience=2), console=QUIET)  # stops after epoch 4
    resumed = fit(**small(tmp_path / "run", patience=10), console=QUIET, resume=True)
    sel = resumed.metrics["selection"]
    # 6 checks without improvement by epoch 8 < 10: runs to max_epochs, still selecting epoch 2
    assert (sel["epochs_trained"], sel["stopped_by"], sel["best_epoch"]) == (8, "max_epochs", 2)


def test_compare_and_tune_continue_an_interrupted_run_instead_of_starting_it_again(tmp_path, monkeypatch):
    from awrsr.experiments.runs import run_or_reuse

    config = tmp_path / "base.yaml"
    config.write_text("train: {patience: 50}\n")
    options = {"data.synthetic.num_users": 80, "data.synthetic.num_items": 20, "model.max_len": 10,
               "model.hidden_size": 8, "model.num_blocks": 1, "train.max_epochs": 3}
    first = run_or_reuse(str(config), options, tmp_path / "run", QUIET)
    (tmp_path / "run" / "metrics.json").unlink()  # killed while evaluating: all 3 epochs are in last.ckpt
    epochs = []
    monkeypatch.setattr(SequentialRecommenderModule, "on_train_epoch_start", lambda self: epochs.append(self.current_epoch))
    again = run_or_reuse(str(config), options, tmp_path / "run", QUIET)
    assert epochs == []  # nothing trained again
    assert again["test"] == first["test"] and again["selection"]["epochs_trained"] == 3


def test_the_logged_gradient_norm_is_the_norm_of_all_gradients_together():
    from awrsr.train.callbacks import global_norm

    # sqrt(3^2 + 4^2 + 12^2) = 13, whichever of torch's ways computes it
    grads = [torch.tensor([3.0, 4.0]), torch.tensor([[12.0]])]
    assert global_norm(grads).item() == pytest.approx(13.0)


def test_the_epoch_training_loss_is_a_mean_per_scored_position():
    from awrsr.models import ModelConfig, build_model

    module = SequentialRecommenderModule(
        build_model(ModelConfig(max_len=3, hidden_size=4), 5), loss="ce", num_negatives=1, lr=1e-3,
        weight_decay=0.0, ks=[1],
    )
    logged = {}
    module.log = lambda name, value, **kwargs: logged.__setitem__(name, float(value))
    module.on_train_epoch_start()
    module._accumulate({"loss": torch.tensor(2.0)}, torch.tensor([[0, 1, 2]]))  # two scored positions
    module._accumulate({"loss": torch.tensor(5.0)}, torch.tensor([[0, 0, 3], [0, 0, 0]]))  # one
    module.on_train_epoch_end()
    assert logged["train/loss"] == pytest.approx((2 * 2.0 + 1 * 5.0) / 3)  # not (2 + 5) / 2
    module.on_train_epoch_start()  # the next epoch starts afresh
    module._accumulate({"loss": torch.tensor(1.0)}, torch.tensor([[0, 0, 0]]))  # none: weight 1, no 0 / 0
    module.on_train_epoch_end()
    assert logged["train/loss"] == 1.0


def test_epoch_lines_count_a_tie_as_no_gain_and_go_on_from_early_stoppings_count(capsys):
    from types import SimpleNamespace

    from awrsr.train.callbacks import EpochLines

    early_stopping = SimpleNamespace(best_score=torch.tensor(0.3), wait_count=1, patience=3)  # as restored on resume
    lines = EpochLines("val/ndcg@10", early_stopping)
    trainer = SimpleNamespace(sanity_checking=False, max_epochs=10, current_epoch=4, callback_metrics={})
    lines.on_train_start(trainer, None)
    for epoch, value in [(4, 0.3), (5, 0.25), (6, 0.4)]:
        trainer.current_epoch, trainer.callback_metrics = epoch, {"val/ndcg@10": torch.tensor(value)}
        lines.on_validation_end(trainer, None)
    trainer.sanity_checking = True  # a sanity check's value is no epoch
    lines.on_validation_end(trainer, None)
    out = [line.rsplit(",", 1)[0] for line in capsys.readouterr().out.splitlines()]
    assert out == [
        "epoch 5/10: valid ndcg@10 0.3000, best 0.3000, 2 of patience 3 without a gain",
        "epoch 6/10: valid ndcg@10 0.2500, best 0.3000, 3 of patience 3 without a gain",
        "epoch 7/10: valid ndcg@10 0.4000, best 0.4000, 0 of patience 3 without a gain",
    ]
