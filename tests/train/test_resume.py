"""Resuming a run from its last checkpoint continues it exactly where it stopped."""

import pickle

import polars as pl
import pytest
from rich.console import Console

from awrsr.errors import ArtifactError, AwrsrError, ConfigError, DataError
from awrsr.workflows import fit
from conftest import tiny_run_config

QUIET = Console(quiet=True)


def test_a_resumed_run_equals_the_uninterrupted_run(tmp_path):
    straight = fit(**tiny_run_config(tmp_path / "straight", max_epochs=4, patience=50), console=QUIET)
    interrupted = tmp_path / "interrupted"
    fit(**tiny_run_config(interrupted, max_epochs=2, patience=50), console=QUIET)
    resumed = fit(**tiny_run_config(interrupted, max_epochs=4, patience=50), console=QUIET, resume=True)

    # Same weights trajectory: shuffling, dropout and the optimiser state all carry over.
    assert resumed.metrics["valid"] == straight.metrics["valid"]
    assert resumed.metrics["test"] == straight.metrics["test"]
    assert resumed.metrics["selection"]["best_epoch"] == straight.metrics["selection"]["best_epoch"]
    assert resumed.metrics["selection"]["epochs_trained"] == 4
    history = pl.read_csv(interrupted / "history.csv")
    assert history["epoch"].to_list() == [1, 2, 3, 4]  # the earlier session's epochs are kept once


def test_an_adversarially_trained_run_resumes_exactly(tmp_path):
    """AC-TSR: two optimisers and the perturbation network's state carry over a resume too."""
    import dataclasses

    def calibrated(run_dir, **train):
        cfg = tiny_run_config(run_dir, patience=50, **train)
        cfg["data"].synthetic.num_users = 120
        cfg["model"] = dataclasses.replace(cfg["model"], attention="calibrated", hidden_size=16, max_len=10)
        return cfg

    straight = fit(**calibrated(tmp_path / "straight", max_epochs=4), console=QUIET)
    fit(**calibrated(tmp_path / "interrupted", max_epochs=2), console=QUIET)
    resumed = fit(**calibrated(tmp_path / "interrupted", max_epochs=4), console=QUIET, resume=True)
    assert resumed.metrics["valid"] == straight.metrics["valid"] and resumed.metrics["test"] == straight.metrics["test"]
    columns = ["epoch", "train/loss", "train/mask_norm", "train/grad_norm"]
    straight_history = pl.read_csv(tmp_path / "straight" / "history.csv").select(columns)
    assert pl.read_csv(tmp_path / "interrupted" / "history.csv").select(columns).equals(straight_history)


def test_resume_refuses_another_configuration_and_a_missing_checkpoint(tmp_path):
    run_dir = tmp_path / "run"
    fit(**tiny_run_config(run_dir, max_epochs=1), console=QUIET)
    with pytest.raises(ArtifactError, match=r"train\.lr"):
        fit(**tiny_run_config(run_dir, max_epochs=2, lr=0.5), console=QUIET, resume=True)
    with pytest.raises(AwrsrError, match="not a run that can be resumed"):
        fit(**tiny_run_config(tmp_path / "never-started", max_epochs=2), console=QUIET, resume=True)
    with pytest.raises(ConfigError, match=r"train.max_epochs \(1\) must be above the 1 epochs .* has trained"):
        fit(**tiny_run_config(run_dir, max_epochs=1), console=QUIET, resume=True)  # a finished run: nothing to continue
    (run_dir / "checkpoints" / "last.ckpt").write_bytes(b"truncated")
    with pytest.raises(AwrsrError, match="last.ckpt: not a readable training checkpoint") as caught:
        fit(**tiny_run_config(run_dir, max_epochs=2), console=QUIET, resume=True)
    # a pickle that holds code, not tensors: named, without torch's advice to unpickle it anyway (and run it)
    (run_dir / "checkpoints" / "last.ckpt").write_bytes(pickle.dumps({"epoch": print}, protocol=2))
    with pytest.raises(AwrsrError, match=r"last.ckpt: not a readable training checkpoint \(not plain saved tensors\)") as caught:
        fit(**tiny_run_config(run_dir, max_epochs=2), console=QUIET, resume=True)
    assert "weights_only" not in str(caught.value)


def test_a_resume_on_other_threads_says_it_may_not_be_exact(tmp_path):
    import io

    run_dir = tmp_path / "run"
    fit(**tiny_run_config(run_dir, max_epochs=1, num_threads=1), console=QUIET)
    said = io.StringIO()
    fit(**tiny_run_config(run_dir, max_epochs=2, num_threads=2, flush_denormal=False), console=Console(file=said, width=300), resume=True)
    assert "note: train.num_threads (1 -> 2), train.flush_denormal (True -> False) since the run started" in said.getvalue()
    same = io.StringIO()
    fit(**tiny_run_config(run_dir, max_epochs=3, num_threads=1), console=Console(file=same, width=300), resume=True)
    assert "since the run started" not in same.getvalue()


def test_a_run_saved_before_a_config_field_existed_resumes_with_its_default(tmp_path):
    import yaml

    run_dir = tmp_path / "run"
    fit(**tiny_run_config(run_dir, max_epochs=1), console=QUIET)
    stored = yaml.safe_load((run_dir / "config.yaml").read_text())
    del stored["model"]["mask_prob"]  # as if written by an older awrsr
    (run_dir / "config.yaml").write_text(yaml.safe_dump(stored))
    fit(**tiny_run_config(run_dir, max_epochs=2), console=QUIET, resume=True)
    (run_dir / "config.yaml").write_text(yaml.safe_dump(stored))
    cfg = tiny_run_config(run_dir, max_epochs=3)
    cfg["model"].mask_prob = 0.5
    with pytest.raises(ArtifactError, match="model.mask_prob"):
        fit(**cfg, console=QUIET, resume=True)


def test_resume_equals_the_uninterrupted_run_when_validating_every_other_epoch(tmp_path):
    straight = fit(**tiny_run_config(tmp_path / "straight", max_epochs=4, patience=50, val_every=2), console=QUIET)
    interrupted = tmp_path / "interrupted"
    fit(**tiny_run_config(interrupted, max_epochs=3, patience=50, val_every=2), console=QUIET)
    resumed = fit(**tiny_run_config(interrupted, max_epochs=4, patience=50, val_every=2), console=QUIET, resume=True)
    assert resumed.metrics["test"] == straight.metrics["test"]
    assert resumed.metrics["time"]["mean_epoch_s"] < 60  # no epoch timed from a start it never saw
    assert pl.read_csv(interrupted / "history.csv")["epoch"].to_list() == [1, 2, 3, 4]


def test_set_aside_log_rows_survive_a_second_interruption(tmp_path):
    from awrsr.train.trainer import keep_earlier_log, merge_logs

    log, kept = tmp_path / "metrics.csv", tmp_path / "kept.csv"
    pl.DataFrame({"epoch": [0, 1], "loss": [3.0, 2.0]}).write_csv(log)
    keep_earlier_log(log, kept, epochs=2)  # first resume, from epoch 2
    pl.DataFrame({"epoch": [2, 3], "loss": [1.5, 1.4]}).write_csv(log)  # then killed during epoch 4
    keep_earlier_log(log, kept, epochs=3)  # second resume, from the checkpoint of epoch 3
    pl.DataFrame({"epoch": [3, 4], "loss": [1.3, 1.2]}).write_csv(log)
    merge_logs(kept, log)
    assert pl.read_csv(log)["epoch"].to_list() == [0, 1, 2, 3, 4]
    assert not kept.exists()


def test_an_unfinished_runs_progress_is_read_from_its_log_and_the_rows_a_resume_set_aside(tmp_path):
    from awrsr.train.config import TrainConfig
    from awrsr.train.trainer import logged_progress

    train = TrainConfig(max_epochs=30, patience=7)
    assert logged_progress(tmp_path, train) == ""  # nothing logged yet
    (tmp_path / "checkpoints").mkdir()
    # Lightning's layout: a validation row and a training row per epoch, each null in the other's columns
    def log(epochs, values, train_s=30.0):
        none = [None] * len(epochs)
        val = pl.DataFrame({"epoch": epochs, "val/ndcg@10": values, "time/validation_s": [2.0] * len(epochs),
                            "train/loss": none, "time/train_epoch_s": none},
                           schema={"epoch": pl.Int64, "val/ndcg@10": pl.Float64, "time/validation_s": pl.Float64,
                                   "train/loss": pl.Float64, "time/train_epoch_s": pl.Float64})
        train_rows = val.with_columns(pl.lit(None, pl.Float64).alias("val/ndcg@10"), pl.lit(None, pl.Float64).alias("time/validation_s"),
                                      pl.lit(1.0).alias("train/loss"), pl.lit(train_s).alias("time/train_epoch_s"))
        return pl.concat([val, train_rows])

    log([0], [None]).write_csv(tmp_path / "metrics.csv")
    # 29 epochs left at 32 s (30 of training, 2 of validation): 928 s
    assert logged_progress(tmp_path, train) == "epoch 1/30, 32.0 s per epoch lately, the epoch cap in at most 15 min, not validated yet"
    log([0, 1, 2], [0.10, 0.30, 0.25]).write_csv(tmp_path / "checkpoints" / "earlier_metrics.csv")  # set aside by a resume
    # 0.30 again is no gain: the first best counts; one epoch slowed by work beside it does not move the median
    pl.concat([log([3], [0.30]), log([4], [0.28], train_s=300.0)]).write_csv(tmp_path / "metrics.csv")
    assert logged_progress(tmp_path, train) == (
        "epoch 5/30, 32.0 s per epoch lately, the epoch cap in at most 13 min, best valid ndcg@10 0.3000 at epoch 2, "
        "3 of patience 7 without a gain"
    )
    assert logged_progress(tmp_path, TrainConfig(max_epochs=300)).startswith("epoch 5/300, 32.0 s per epoch lately, "
                                                                           "the epoch cap in at most 2.6 h, ")  # 295 x 32 s
    assert logged_progress(tmp_path, TrainConfig(max_epochs=5)).startswith("epoch 5/5, 32.0 s per epoch lately, best")
    assert logged_progress(tmp_path, TrainConfig(max_epochs=6)).startswith(  # 32 s left: not "at most 0 min"
        "epoch 5/6, 32.0 s per epoch lately, the epoch cap in under a minute, best")
    # emptied, or a value that is no number
    for unreadable in ("", "epoch,val/ndcg@10\n3,0.3\n4,0.2x", "epoch,val/ndcg@10,time/train_epoch_s\n3,0.3,3x"):
        (tmp_path / "metrics.csv").write_text(unreadable)
        assert logged_progress(tmp_path, train) == ""  # no claim rather than a wrong one, and no error
    (tmp_path / "metrics.csv").unlink()
    assert logged_progress(tmp_path, TrainConfig(monitor="hr@5")) == ""  # validated on another metric: not this run's log
    (tmp_path / "checkpoints" / "earlier_metrics.csv").unlink()
    pl.DataFrame({"epoch": [0], "train/loss": [1.0]}).write_csv(tmp_path / "metrics.csv")  # train.val_every > 1
    assert logged_progress(tmp_path, train) == "epoch 1/30, not validated yet"


def test_a_failed_fit_leaves_the_finished_run_in_its_directory_usable(tmp_path):
    from awrsr.data import DataConfig
    from awrsr.infer import Recommender

    run_dir = tmp_path / "run"
    fit(**tiny_run_config(run_dir, max_epochs=1), console=QUIET)
    files = {p.relative_to(run_dir): p.read_bytes() for p in run_dir.rglob("*") if p.is_file()}
    before = Recommender.load(run_dir).recommend([1, 2], k=3)
    cfg = tiny_run_config(run_dir, max_epochs=1)
    cfg["data"] = DataConfig(path=str(tmp_path / "missing.txt"))
    # overwrite=True: the new run may replace the old one, but only once it can start; a data
    # file that cannot be read must leave the finished run as it was.
    with pytest.raises(DataError, match="missing.txt"):
        fit(**cfg, overwrite=True, console=QUIET)
    assert {p.relative_to(run_dir): p.read_bytes() for p in run_dir.rglob("*") if p.is_file()} == files
    assert Recommender.load(run_dir).recommend([1, 2], k=3) == before


def test_resume_refuses_other_data_at_a_moved_path(tmp_path):
    import random

    from awrsr.data import DataConfig
    from awrsr.errors import ArtifactError

    def write(path, seed):
        rng = random.Random(seed)
        path.write_text("".join(f"{u} {rng.randint(1, 30)}\n" for u in range(1, 80) for _ in range(12)))

    write(tmp_path / "a.txt", 1)
    write(tmp_path / "b.txt", 2)
    run_dir = tmp_path / "run"
    cfg = tiny_run_config(run_dir, max_epochs=1)
    cfg["data"] = DataConfig(path=str(tmp_path / "a.txt"), min_item_interactions=0, min_user_interactions=0)
    fit(**cfg, console=QUIET)
    cfg["data"].path = str(tmp_path / "b.txt")  # data.path may change on resume (the file moved)...
    cfg["train"].max_epochs = 2
    with pytest.raises(ArtifactError, match="not the dataset"):  # ...but not the data
        fit(**cfg, console=QUIET, resume=True)


def test_a_run_moved_to_another_directory_resumes_with_its_selection(tmp_path):
    """A run directory copied elsewhere (from another machine, say) and resumed there keeps its
    best epoch so far: the next epoch is not taken as best unless it is better."""
    import shutil

    settings = dict(max_epochs=6, patience=50, lr=0.03)  # validation peaks before the last epoch
    straight = fit(**tiny_run_config(tmp_path / "straight", **settings), console=QUIET)
    best = straight.metrics["selection"]["best_epoch"]
    assert best < settings["max_epochs"]  # else this test shows nothing
    # stopped exactly at its best epoch, then moved; the old directory is gone
    fit(**tiny_run_config(tmp_path / "there", **{**settings, "max_epochs": best}), console=QUIET)
    shutil.copytree(tmp_path / "there", tmp_path / "here")
    shutil.rmtree(tmp_path / "there")
    resumed = fit(**tiny_run_config(tmp_path / "here", **settings), console=QUIET, resume=True)
    assert resumed.metrics["selection"] == straight.metrics["selection"]
    assert resumed.metrics["test"] == straight.metrics["test"]


def test_the_relocatable_checkpoint_reads_the_state_of_lightnings_own(tmp_path):
    """Runs checkpointed before RelocatableModelCheckpoint existed keep their selection on resume:
    both classes store their state under the same key."""
    from lightning.pytorch.callbacks import ModelCheckpoint

    from awrsr.train.callbacks import RelocatableModelCheckpoint

    for options in (dict(filename="best", monitor="val/ndcg@10", mode="max"), dict(filename="last", save_on_train_epoch_end=True)):
        ours, theirs = RelocatableModelCheckpoint(dirpath=tmp_path, **options), ModelCheckpoint(dirpath=tmp_path, **options)
        assert ours.state_key == theirs.state_key


def test_checkpoint_paths_from_another_machine_land_in_this_directory(tmp_path):
    from awrsr.train.callbacks import RelocatableModelCheckpoint

    (tmp_path / "best.ckpt").touch()
    callback = RelocatableModelCheckpoint(dirpath=tmp_path, filename="best", monitor="val/ndcg@10", mode="max")
    saved = r"C:\Users\me\runs\x\checkpoints"  # a run trained on Windows
    callback.load_state_dict({
        "dirpath": saved, "monitor": "val/ndcg@10", "best_model_score": 0.5, "best_model_path": saved + r"\best.ckpt",
        "best_k_models": {saved + r"\best.ckpt": 0.5}, "kth_best_model_path": saved + r"\best.ckpt", "kth_value": 0.5,
        "last_model_path": "",
    })
    assert callback.best_model_path == str(tmp_path / "best.ckpt") and callback.best_model_score == 0.5
    assert list(callback.best_k_models) == [str(tmp_path / "best.ckpt")]


def test_a_moved_run_without_its_best_checkpoint_is_a_clear_error(tmp_path):
    import shutil

    from awrsr.errors import ArtifactError

    fit(**tiny_run_config(tmp_path / "there", max_epochs=2, patience=50), console=QUIET)
    shutil.copytree(tmp_path / "there", tmp_path / "here")
    (tmp_path / "here" / "checkpoints" / "best.ckpt").unlink()  # only part of the run was copied
    with pytest.raises(ArtifactError, match="best checkpoint so far is missing"):
        fit(**tiny_run_config(tmp_path / "here", max_epochs=3, patience=50), console=QUIET, resume=True)


def test_a_run_killed_after_its_last_epoch_resumes_into_its_evaluation(tmp_path):
    run_dir = tmp_path / "run"
    first = fit(**tiny_run_config(run_dir, max_epochs=2, patience=50), console=QUIET)
    (run_dir / "metrics.json").unlink()  # killed while evaluating or saving: every epoch is in last.ckpt
    again = fit(**tiny_run_config(run_dir, max_epochs=2, patience=50), console=QUIET, resume=True)
    assert again.metrics["selection"]["epochs_trained"] == 2
    assert again.metrics["test"] == first.metrics["test"]


def test_an_interrupted_run_is_not_resumed_with_fewer_epochs_than_it_has_trained(tmp_path):
    """Lightning refused a cap below the checkpoint's epoch from deep inside, and one epoch below
    it ended the run with more epochs than its cap: both are refused, up front, naming the least."""
    run_dir = tmp_path / "run"
    fit(**tiny_run_config(run_dir, max_epochs=3, patience=50), console=QUIET)
    (run_dir / "metrics.json").unlink()  # interrupted after its third epoch
    for cap in (1, 2):
        with pytest.raises(ArtifactError, match=rf"^cannot resume {run_dir} with train.max_epochs {cap}: it has trained 3 "
                                                r"epochs already; give at least 3 \(3 goes straight to its evaluation\)"):
            fit(**tiny_run_config(run_dir, max_epochs=cap, patience=50), console=QUIET, resume=True)
    assert fit(**tiny_run_config(run_dir, max_epochs=3, patience=50), console=QUIET,
               resume=True).metrics["selection"]["epochs_trained"] == 3


def test_a_run_killed_after_early_stopping_resumes_into_its_evaluation(tmp_path):
    """Killed after its stopping epoch's checkpoint, before its results: resuming trains no further
    epoch (an uninterrupted run trains none, and one more could become the selected epoch); with a
    larger patience it goes on, counting the epochs it has waited already."""
    run_dir = tmp_path / "run"
    first = fit(**tiny_run_config(run_dir, max_epochs=40, patience=1), console=QUIET)
    stopped = first.metrics["selection"]
    assert stopped["stopped_by"] == "early stopping" and stopped["epochs_trained"] < 40
    (run_dir / "metrics.json").unlink()
    again = fit(**tiny_run_config(run_dir, max_epochs=40, patience=1), console=QUIET, resume=True)
    assert again.metrics["selection"] == stopped
    assert again.metrics["test"] == first.metrics["test"]
    assert pl.read_csv(run_dir / "history.csv")["epoch"].to_list() == list(range(1, stopped["epochs_trained"] + 1))

    # finished, and its patience unchanged: it would stop at once and write the same results again
    with pytest.raises(ConfigError, match=r"train.patience \(1\) is spent: .* stopped after 1 validations without improvement"):
        fit(**tiny_run_config(run_dir, max_epochs=41, patience=1), console=QUIET, resume=True)
    longer = fit(**tiny_run_config(run_dir, max_epochs=40, patience=3), console=QUIET, resume=True)
    selection = longer.metrics["selection"]
    assert selection["stopped_by"] == "early stopping" and selection["epochs_trained"] > stopped["epochs_trained"]
    assert selection["epochs_trained"] - selection["best_epoch"] == 3  # the epoch it had waited counts


def test_a_run_stopped_by_its_time_budget_resumes_exactly(tmp_path, monkeypatch):
    """The budget stops a run only between epochs. Lightning's own check, after every batch, cut an
    epoch short and counted it as complete (validated, checkpointed), so a resumed run skipped the
    rest of that epoch and differed from an uninterrupted one."""
    import itertools
    import types

    from lightning.pytorch.callbacks import timer

    clock = itertools.count()  # one second per reading of Lightning's clock, whatever the machine's speed
    monkeypatch.setattr(timer, "time", types.SimpleNamespace(monotonic=lambda: float(next(clock))))
    straight = fit(**tiny_run_config(tmp_path / "straight", max_epochs=6, patience=50), console=QUIET)
    budgeted = tmp_path / "budgeted"
    first = fit(**tiny_run_config(budgeted, max_epochs=6, patience=50, max_time="00:00:00:10"), console=QUIET)
    assert first.metrics["selection"]["stopped_by"] == "max_time"
    assert 1 < first.metrics["selection"]["epochs_trained"] < 6
    # killed after its last epoch: resumed with the same budget, it goes straight to its evaluation
    (budgeted / "metrics.json").unlink()
    again = fit(**tiny_run_config(budgeted, max_epochs=6, patience=50, max_time="00:00:00:10"), console=QUIET, resume=True)
    assert again.metrics["selection"] == first.metrics["selection"]  # the epochs counted from the checkpoint
    # finished: a spent budget is an error, whatever else is raised
    with pytest.raises(ConfigError, match=r"train.max_time \(00:00:00:10\) is spent: .* has trained for \d+ s"):
        fit(**tiny_run_config(budgeted, max_epochs=7, patience=50, max_time="00:00:00:10"), console=QUIET, resume=True)
    resumed = fit(**tiny_run_config(budgeted, max_epochs=6, patience=50), console=QUIET, resume=True)
    assert resumed.metrics["test"] == straight.metrics["test"]
    columns = ["epoch", "train/loss", "val/ndcg@10"]
    assert pl.read_csv(budgeted / "history.csv").select(columns).equals(
        pl.read_csv(tmp_path / "straight" / "history.csv").select(columns))


def test_the_progress_bar_counts_epochs_from_one_and_goes_on_after_a_resume(tmp_path, capsys, monkeypatch):
    import re
    import sys

    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)  # the bar is for a terminal
    run_dir = tmp_path / "run"
    fit(**tiny_run_config(run_dir, max_epochs=2, patience=50, progress_bar=True), console=QUIET)
    first = set(re.findall(r"Epoch \d+(?:/\d+)?", capsys.readouterr().out))
    fit(**tiny_run_config(run_dir, max_epochs=3, patience=50, progress_bar=True), console=QUIET, resume=True)
    resumed = set(re.findall(r"Epoch \d+(?:/\d+)?", capsys.readouterr().out))
    assert first == {"Epoch 1/2", "Epoch 2/2"}  # Lightning's own bar says "Epoch 0", then "Epoch 1"
    assert resumed == {"Epoch 3/3"}


def test_the_epoch_timer_adds_up_every_session_and_skips_an_epoch_end_replayed_on_resume(monkeypatch):
    from types import SimpleNamespace

    from awrsr.train import callbacks

    now = [100.0]
    monkeypatch.setattr(callbacks, "time", SimpleNamespace(perf_counter=lambda: now[0]))
    logged = []
    module = SimpleNamespace(log=lambda name, value, **kwargs: logged.append((name, float(value))))
    first = callbacks.EpochTimer()
    first.on_fit_start(None, module)
    first.on_train_epoch_start(None, module)
    now[0] += 3.0
    first.on_train_epoch_end(None, module)
    first.on_validation_epoch_start(None, module)
    now[0] += 1.0
    first.on_validation_epoch_end(SimpleNamespace(sanity_checking=False), module)
    assert logged == [("time/train_epoch_s", 3.0), ("time/validation_s", 1.0)]
    saved = first.state_dict()  # in the epoch's checkpoint
    assert saved == {"train_seconds": [3.0], "elapsed_seconds": 4.0}

    second = callbacks.EpochTimer()  # made before the data is read
    now[0] += 50.0  # between the sessions and before the fit starts: not training time
    second.load_state_dict(saved)
    second.on_fit_start(None, module)
    second.on_validation_epoch_start(None, module)
    now[0] += 0.5
    second.on_validation_epoch_end(SimpleNamespace(sanity_checking=True), module)  # the sanity check: not logged
    second.on_train_epoch_end(None, module)  # the restored epoch's end, replayed with no start in this session
    second.on_train_epoch_start(None, module)
    now[0] += 2.0
    second.on_train_epoch_end(None, module)
    assert logged[2:] == [("time/train_epoch_s", 2.0)]
    assert second.train_seconds == [3.0, 2.0]
    assert second.elapsed_seconds == 4.0 + 2.5  # both sessions' time, not the time between them
