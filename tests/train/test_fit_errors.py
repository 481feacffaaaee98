"""What fit refuses, and how it fails: a finished run is never deleted by a repeated command, and
what goes wrong in training (divergence, Ctrl-C, a foreign checkpoint, a missing device) is said
in one clear line."""

import re
import shutil
import stat

import pytest
import torch
from rich.console import Console

from awrsr.errors import ArtifactError, ConfigError, TrainingDiverged
from awrsr.train.module import SequentialRecommenderModule
from awrsr.train.process_state import flushed_share
from awrsr.train.trainer import check_accelerator
from awrsr.workflows import fit
from conftest import tiny_run_config

QUIET = Console(quiet=True)


def test_a_finished_run_is_kept_unless_overwrite_is_asked(trained_run, tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(trained_run.run_dir, run_dir)
    before = sorted(p.name for p in run_dir.iterdir())
    # and it says how such a run trains for longer: its checkpoints are there
    with pytest.raises(ArtifactError, match=r"holds a finished run \(to train it for longer, --resume true with a larger "
                                            r"train.max_epochs, patience or max_time; resume=True in Python\); "
                                            "choose another output_dir, or pass --overwrite true"):
        fit(**tiny_run_config(run_dir, max_epochs=1), console=QUIET)
    assert sorted(p.name for p in run_dir.iterdir()) == before  # nothing was deleted
    again = fit(**tiny_run_config(run_dir, max_epochs=1), console=QUIET, overwrite=True)
    assert again.metrics["selection"]["epochs_trained"] == 1


def test_fit_takes_true_or_false_not_a_string(trained_run, tmp_path):
    # overwrite="false" is a true string: it deleted a finished run and trained another
    run_dir = tmp_path / "run"
    shutil.copytree(trained_run.run_dir, run_dir)
    weights = (run_dir / "model.safetensors").read_bytes()
    for name in ("overwrite", "resume", "print_test"):
        with pytest.raises(ConfigError, match=f"^fit: {name} must be true or false, got 'false'"):
            fit(**tiny_run_config(run_dir, max_epochs=1), console=QUIET, **{name: "false"})
    assert (run_dir / "model.safetensors").read_bytes() == weights


def test_a_path_given_as_frame_is_refused_not_recorded_as_a_frame(tmp_path):
    data = tmp_path / "events.csv"
    data.write_text("user_id,item_id\n1,2\n")
    with pytest.raises(ConfigError, match=r"^frame takes a polars or pandas DataFrame, got str; a file goes to data.path"):
        fit(**tiny_run_config(tmp_path / "run", max_epochs=1), frame=str(data), console=QUIET)
    assert not (tmp_path / "run").exists()


def test_fit_leaves_the_process_as_it_found_it(tmp_path):
    """Deterministic mode, the flushing of subnormal floats, Lightning's environment variables, log
    levels and warning filters are the fit's own; a notebook's later torch code must not warn or
    behave differently."""
    import logging
    import os
    import warnings

    def state():
        return (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled(),
                torch.utils.deterministic.fill_uninitialized_memory, torch.get_num_threads(), flushed_share(),
                {k: os.environ.get(k) for k in ("PL_GLOBAL_SEED", "PL_SEED_WORKERS", "CUBLAS_WORKSPACE_CONFIG")},
                [logging.getLogger(n).level for n in ("lightning.pytorch", "lightning.fabric", "lightning")],
                list(warnings.filters))

    # a known start, whatever the tests before left (fit's own settings would look unchanged)
    torch.use_deterministic_algorithms(False)
    torch.utils.deterministic.fill_uninitialized_memory = True
    torch.set_flush_denormal(False)  # the fit flushes subnormals by default (train.flush_denormal)
    before = state()
    fit(**tiny_run_config(tmp_path / "run", max_epochs=1, num_threads=1), console=QUIET)
    assert state() == before


def test_a_run_without_its_run_record_is_still_called_a_run(trained_run, tmp_path):
    run_dir = tmp_path / "run"  # records copied back from another machine: metrics and config, no checkpoints
    shutil.copytree(trained_run.run_dir, run_dir, ignore=shutil.ignore_patterns("checkpoints"))
    with pytest.raises(ArtifactError, match="holds a finished run; choose another") as caught:
        fit(**tiny_run_config(run_dir, max_epochs=1), console=QUIET)
    assert "--resume" not in str(caught.value)  # without checkpoints it cannot be continued


def test_an_interrupted_run_is_kept_and_the_error_says_how_to_continue(trained_run, tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(trained_run.run_dir, run_dir)
    (run_dir / "metrics.json").unlink()  # as if stopped before the end; its last.ckpt remains
    with pytest.raises(ArtifactError, match=r"holds an interrupted run \(continue it with --resume true, resume=True in Python\)"):
        fit(**tiny_run_config(run_dir, max_epochs=1), console=QUIET)
    assert (run_dir / "checkpoints" / "last.ckpt").is_file()


def test_files_awrsr_did_not_write_are_never_replaced(tmp_path):
    run_dir = tmp_path / "project"  # output_dir: . in a folder that holds the user's own config.yaml
    run_dir.mkdir()
    (run_dir / "config.yaml").write_text("# my notes\nmodel: {name: sasrec}\n")
    with pytest.raises(ArtifactError, match=r"files that awrsr did not write and a run would replace \(config.yaml\)"):
        fit(**tiny_run_config(run_dir, max_epochs=1), console=QUIET)
    assert (run_dir / "config.yaml").read_text().startswith("# my notes")
    assert sorted(p.name for p in run_dir.iterdir()) == ["config.yaml"]


@pytest.mark.parametrize(("layout", "kind"), [
    ("none/seed-42", "a comparison output directory"), ("trial-0001", "a tune output directory"),
    ("a/b", "a directory of runs"),
])
@pytest.mark.parametrize("overwrite", [False, True])
def test_a_tune_or_comparison_directory_is_never_a_runs_output_dir(trained_run, tmp_path, layout, kind, overwrite):
    collection = tmp_path / "compare"
    shutil.copytree(trained_run.run_dir, collection / layout)
    with pytest.raises(ArtifactError, match=f"compare is {kind}.*; a run cannot be written into it: choose another output_dir"):
        fit(**tiny_run_config(collection, max_epochs=1), console=QUIET, overwrite=overwrite)
    assert sorted(p.name for p in collection.iterdir()) == [layout.split("/")[0]]  # nothing written beside its runs
    # its runs are runs all the same: one of them can be continued or replaced
    again = fit(**tiny_run_config(collection / layout, max_epochs=1), console=QUIET, overwrite=True)
    assert again.metrics["selection"]["epochs_trained"] == 1


def test_the_training_data_is_never_a_file_the_run_writes(tmp_path):
    from awrsr.data import DataConfig

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    log = run_dir / "history.csv"  # a log that happens to share a name with the run's epoch history
    log.write_text("user_id,item_id\n1,2\n")
    cfg = tiny_run_config(run_dir, max_epochs=1)
    cfg["data"] = DataConfig(path=str(log), format="csv")
    with pytest.raises(ConfigError, match="is a file that the run writes into output_dir"):
        fit(**cfg, console=QUIET, overwrite=True)  # not even when asked to overwrite
    assert log.read_text() == "user_id,item_id\n1,2\n"
    kept = run_dir / "checkpoints" / "events.csv"  # a fresh run deletes its old checkpoint directory
    kept.parent.mkdir()
    kept.write_text("user_id,item_id\n1,2\n")
    cfg["data"] = DataConfig(path=str(kept), format="csv")
    with pytest.raises(ConfigError, match="is a file that the run writes into output_dir"):
        fit(**cfg, console=QUIET, overwrite=True)
    assert kept.is_file()


def test_output_dir_that_is_a_file_is_a_clear_error(tmp_path):
    taken = tmp_path / "events.csv"
    taken.write_text("x")
    with pytest.raises(ConfigError, match="output_dir .*events.csv is a file; a run needs a directory"):
        fit(**tiny_run_config(taken, max_epochs=1), console=QUIET)


@pytest.mark.parametrize("output_dir", [None, "", " "])
def test_an_empty_output_dir_is_refused_not_the_current_directory(tmp_path, monkeypatch, output_dir):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match="output_dir is empty; name the directory to write into"):
        fit(**tiny_run_config(output_dir, max_epochs=1), console=QUIET)
    assert list(tmp_path.iterdir()) == []  # nothing written where the command ran


def test_a_tilde_output_dir_keeps_the_whole_run_in_one_place(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    fit(**tiny_run_config("~/run", max_epochs=1), console=QUIET)
    run_dir = tmp_path / "run"  # Lightning expands "~" itself: the checkpoints must land beside the model
    assert (run_dir / "metrics.json").is_file() and (run_dir / "checkpoints" / "last.ckpt").is_file()
    assert not (tmp_path / "~").exists()


def test_num_threads_holds_for_the_fit_only(tmp_path):
    import torch

    before = torch.get_num_threads()
    wanted = 1 if before > 1 else 2
    try:
        result = fit(**tiny_run_config(tmp_path / "run", max_epochs=1, num_threads=wanted), console=QUIET)
        assert result.metrics["machine"]["torch_threads"] == wanted  # the fit ran with them
        assert torch.get_num_threads() == before  # the caller's process gets its threads back
    finally:
        torch.set_num_threads(before)


def test_a_run_that_failed_is_replaced_by_the_repeated_command(tmp_path, monkeypatch):
    def blown_up(self, batch, batch_idx):
        raise FloatingPointError("the model produced NaN scores")

    monkeypatch.setattr(SequentialRecommenderModule, "validation_step", blown_up)
    run_dir = tmp_path / "run"
    with pytest.raises(TrainingDiverged):
        fit(**tiny_run_config(run_dir, max_epochs=1), console=QUIET)
    monkeypatch.undo()
    assert fit(**tiny_run_config(run_dir, max_epochs=1), console=QUIET).metrics["selection"]["epochs_trained"] == 1


def test_divergence_is_one_clear_error_naming_the_epoch_and_the_learning_rate(tmp_path, monkeypatch):
    def blown_up(self, batch, batch_idx):  # what validation meets once the weights are NaN
        raise FloatingPointError("the model produced NaN scores")

    monkeypatch.setattr(SequentialRecommenderModule, "validation_step", blown_up)
    with pytest.raises(TrainingDiverged, match=r"training diverged in epoch 1 \(the model produced NaN scores\); start afresh with a lower train.lr \(now 0.003\) and --overwrite true"):
        fit(**tiny_run_config(tmp_path / "run", max_epochs=2), console=QUIET)


def test_ctrl_c_says_where_the_run_can_continue(tmp_path, monkeypatch, capsys):
    def interrupt_in_the_second_epoch(self):
        if self.current_epoch == 1:
            raise KeyboardInterrupt

    monkeypatch.setattr(SequentialRecommenderModule, "on_train_epoch_start", interrupt_in_the_second_epoch, raising=False)
    run_dir = tmp_path / "run"
    with pytest.raises(SystemExit) as exit_info:  # Lightning's way out after Ctrl-C
        fit(**tiny_run_config(run_dir, max_epochs=2, patience=50), console=QUIET)
    # an interrupted fit does not report success; 130 as Ctrl-C between epochs and runs (Lightning's is 1)
    assert exit_info.value.code == 130
    err = capsys.readouterr().err
    assert "interrupted in epoch 2" in err and "--resume true continues from it" in err
    monkeypatch.undo()
    resumed = fit(**tiny_run_config(run_dir, max_epochs=2, patience=50), console=QUIET, resume=True)
    assert resumed.metrics["selection"]["epochs_trained"] == 2


def test_sigterm_exits_with_143_and_says_where_the_run_can_continue(tmp_path, monkeypatch, capsys):
    """Lightning turns SIGTERM (kill, a scheduler, docker stop) into a SystemExit without a code,
    which would exit 0, as if the run had finished: `compare && plot` went on."""
    from lightning.pytorch.utilities.exceptions import SIGTERMException

    def terminated_in_the_second_epoch(self):
        if self.current_epoch == 1:
            raise SIGTERMException

    monkeypatch.setattr(SequentialRecommenderModule, "on_train_epoch_start", terminated_in_the_second_epoch, raising=False)
    run_dir = tmp_path / "run"
    with pytest.raises(SystemExit) as exit_info:
        fit(**tiny_run_config(run_dir, max_epochs=2, patience=50), console=QUIET)
    assert exit_info.value.code == 143
    err = " ".join(capsys.readouterr().err.split())
    assert "awrsr: stopped by SIGTERM in epoch 2; the last completed epoch is saved in" in err
    assert "awrsr fit: the same command with --resume true continues from it; awrsr tune and compare: the same command again" in err
    monkeypatch.undo()
    resumed = fit(**tiny_run_config(run_dir, max_epochs=2, patience=50), console=QUIET, resume=True)
    assert resumed.metrics["selection"]["epochs_trained"] == 2


def test_resuming_from_a_checkpoint_of_another_shape_is_refused_by_name(trained_run, tmp_path):
    small, other = tmp_path / "small", tmp_path / "other"
    fit(**tiny_run_config(small, max_epochs=1), console=QUIET)
    cfg = tiny_run_config(other, max_epochs=1)
    cfg["model"].hidden_size = 16
    fit(**cfg, console=QUIET)
    shutil.copy(other / "checkpoints" / "last.ckpt", small / "checkpoints" / "last.ckpt")
    with pytest.raises(ArtifactError, match=r"last.ckpt: tensor .* has shape \(\d+, 16\), but the configured model expects \(\d+, 32\)"):
        fit(**tiny_run_config(small, max_epochs=2), console=QUIET, resume=True)


@pytest.mark.parametrize("num_negatives", [None, 60])  # sampled_softmax's default is 100
def test_more_negatives_than_items_trains_with_a_note(tmp_path, num_negatives):
    import io

    shown = io.StringIO()
    cfg = tiny_run_config(tmp_path / "run", max_epochs=1, loss="sampled_softmax", num_negatives=num_negatives)
    fit(**cfg, console=Console(file=shown, width=300))
    expected = num_negatives or 100
    assert f"train.num_negatives ({expected}) is more than the 50 items; negatives are drawn with replacement" in shown.getvalue()


def test_another_process_training_is_named_before_any_interrupted_run(trained_run, tmp_path):
    import multiprocessing

    from awrsr.workflows import RUN_LOCK_FILE

    run_dir = tmp_path / "run"
    shutil.copytree(trained_run.run_dir, run_dir)
    (run_dir / "metrics.json").unlink()  # looks interrupted: last.ckpt, no metrics
    holding, release = multiprocessing.Event(), multiprocessing.Event()
    holder = multiprocessing.get_context("fork").Process(target=_hold_lock, args=(run_dir / RUN_LOCK_FILE, holding, release))
    holder.start()
    try:
        assert holding.wait(30)
        with pytest.raises(ArtifactError, match="another process is training into this directory"):
            fit(**tiny_run_config(run_dir, max_epochs=1), console=QUIET)
    finally:
        release.set()
        holder.join(30)


def _hold_lock(path, holding, release):
    from filelock import FileLock

    with FileLock(path):
        holding.set()
        release.wait(30)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_a_missing_accelerator_is_a_config_error():
    with pytest.raises(ConfigError, match="train.accelerator 'cuda': torch finds no such device"):
        check_accelerator("cuda")
    check_accelerator("cpu")
    check_accelerator("auto")


def test_the_weights_file_gets_the_same_permissions_as_the_other_artifact_files(trained_run):
    mode = lambda name: stat.S_IMODE((trained_run.run_dir / name).stat().st_mode)
    assert mode("model.safetensors") == mode("config.yaml")


@pytest.mark.parametrize(
    "model_options, train_options, expected",
    [
        ({"refine": "stoc"}, {}, "stoc"),
        ({"attention": "wasserstein"}, {}, "wasserstein"),
        ({}, {"loss": "stosa"}, "train.loss 'stosa'"),
    ],
)
def test_parts_that_do_not_fit_fail_before_the_data_is_read(tmp_path, monkeypatch, model_options, train_options, expected):
    import awrsr.workflows

    def no_data(*args, **kwargs):
        raise AssertionError("the data was read before the configuration was checked")

    monkeypatch.setattr(awrsr.workflows, "load_sequence_data", no_data)
    cfg = tiny_run_config(tmp_path / "runs" / "run", **train_options)
    for key, value in model_options.items():
        setattr(cfg["model"], key, value)
    with pytest.raises(ConfigError, match=expected):
        fit(**cfg, console=QUIET)
    assert not (tmp_path / "runs").exists()  # a fit that failed before writing anything leaves no folder it made


def test_fit_from_python_refuses_swapped_parts_a_forgotten_source_and_two_sources(tmp_path):
    import polars as pl

    from awrsr.data import DataConfig, load_sequence_data, read_interactions
    from awrsr.models import ModelConfig

    cfg = tiny_run_config(tmp_path / "run")
    with pytest.raises(ConfigError, match="^fit: data must be a DataConfig, got ModelConfig$"):
        fit(**{**cfg, "data": ModelConfig(), "model": cfg["data"]}, console=QUIET)
    # column names for a file or frame, but neither given: never the synthetic data in their place
    with pytest.raises(ConfigError, match="^data.user_col, data.time_col set, but there is no data.path and no frame"):
        fit(**{**cfg, "data": DataConfig(user_col="customer", time_col="ts")}, console=QUIET)
    frame = pl.DataFrame({"user_id": [1, 1, 1], "item_id": [1, 2, 3]})
    with pytest.raises(ConfigError, match=r"^fit: give data.path \(events.csv\) or a frame, not both$"):
        fit(**{**cfg, "data": DataConfig(path="events.csv")}, frame=frame, console=QUIET)
    with pytest.raises(ConfigError, match=r"^fit: give resume \(continue the run in output_dir\) or overwrite"):
        fit(**cfg, resume=True, overwrite=True, console=QUIET)
    for call in (lambda: load_sequence_data(None, frame=frame), lambda: read_interactions(frame, None)):
        with pytest.raises(ConfigError, match=r"^(load_sequence_data|read_interactions): config must be a DataConfig, got NoneType$"):
            call()
    # a file's reading options mean nothing for a frame; recorded, they would read a file given to evaluate it later
    with pytest.raises(ConfigError, match=r"^fit: data.format, data.has_header set, but a frame has no file format, "
                                          r"separator or header line: remove them$"):
        fit(**{**cfg, "data": DataConfig(format="whitespace", has_header=False)}, frame=frame, console=QUIET)
    with pytest.raises(ConfigError, match=r"^fit: data.separator set, but a frame"):
        fit(**{**cfg, "data": DataConfig(separator=";")}, frame=frame, console=QUIET)
    assert not (tmp_path / "run").exists()


def test_fields_set_after_construction_are_checked_again_by_fit(tmp_path):
    # a grid loop's t.lr = np.float64(...) failed in YAML; t.batch_size = 0 in torch's sampler
    import numpy as np
    import yaml

    cfg = tiny_run_config(tmp_path / "bad", max_epochs=1)
    cfg["train"].batch_size = 0
    with pytest.raises(ConfigError, match=r"^train.batch_size must be >= 1, got 0$"):
        fit(**cfg, console=QUIET)
    assert not (tmp_path / "bad").exists()
    cfg = tiny_run_config(tmp_path / "bad", max_epochs=1)
    cfg["data"].synthetic.num_users = 0  # a section in a section, checked too
    with pytest.raises(ConfigError, match=r"^data.synthetic.num_users must be >= 1, got 0$"):
        fit(**cfg, console=QUIET)
    cfg = tiny_run_config(tmp_path / "run", max_epochs=1)
    cfg["train"].lr = np.float64(0.002)
    result = fit(**cfg, console=QUIET)
    assert yaml.safe_load((result.run_dir / "config.yaml").read_text())["train"]["lr"] == 0.002


def test_a_log_file_gets_one_line_per_epoch_not_a_progress_bar(tmp_path, capfd):
    # stdout here is a pipe, as in `awrsr fit ... > fit.log`: a bar would fill it with carriage returns
    fit(**tiny_run_config(tmp_path / "run", max_epochs=2, progress_bar=True), console=QUIET)
    err = capfd.readouterr().out
    assert "\r" not in err
    lines = [line for line in err.splitlines() if line.startswith("epoch ")]
    assert len(lines) == 2 and re.fullmatch(
        r"epoch 1/2: valid ndcg@10 \d\.\d{4}, best \d\.\d{4}, 0 of patience 3 without a gain, \d+\.\d s", lines[0]
    ), lines
