"""awrsr.workflows beyond a plain fit: the code version a run records, the checks made before
training, and the options of evaluate and resume (tiny runs, a few seconds each)."""

import io
import re
import shutil
import subprocess

import polars as pl
import pytest
import torch
from conftest import copy_run_with_data, tiny_run_config
from rich.console import Console

import awrsr
from awrsr.data import DataConfig
from awrsr.errors import ArtifactError, AwrsrError, ConfigError, DataError, TrainingDiverged
from awrsr.infer.artifact import REQUIRED_FILES
from awrsr.train.module import SequentialRecommenderModule
from awrsr.version import SOURCE_VERSION_VARIABLE, source_version
from awrsr.workflows import evaluate, fit, rank_artifact

QUIET = Console(quiet=True)


def test_only_the_packages_own_tracked_files_make_the_version_dirty(tmp_path, monkeypatch):
    """Not a file git does not track (a run's output written into the checkout, say), nor an edit
    elsewhere in the checkout (its docs, its tests): neither is the code that ran."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    monkeypatch.delenv(SOURCE_VERSION_VARIABLE, raising=False)

    def git(*args):
        return subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tmp_path, check=True, capture_output=True, text=True,
        ).stdout.strip()

    package = tmp_path / "package"
    package.mkdir()
    (package / "code.py").write_text("y = 1\n")
    (tmp_path / "README.md").write_text("notes\n")
    git("init", "-q")
    git("add", "package/code.py", "README.md")
    git("commit", "-q", "-m", "first")
    clean = f"{awrsr.__version__}+g{git('rev-parse', '--short', 'HEAD')}"
    (package / "output.csv").write_text("user,item\n")  # untracked, inside the package
    (tmp_path / "README.md").write_text("more notes\n")  # tracked and edited, outside it
    assert source_version(package) == clean
    (package / "code.py").write_text("y = 2\n")
    assert source_version(package) == f"{clean}.dirty"
    installed = tmp_path / ".venv" / "site" / "package"  # installed into a virtual environment inside the checkout
    shutil.copytree(package, installed)
    assert source_version(installed) == awrsr.__version__  # not the checkout's commit: git does not track this copy


def _frame(length: int, users: int = 30):
    """``users`` users with ``length`` interactions each, over 20 items."""
    rows = [(u, 1 + (u + i) % 20) for u in range(1, users + 1) for i in range(length)]
    return pl.DataFrame(rows, schema=["user_id", "item_id"], orient="row")


@pytest.mark.parametrize(("length", "expected"), [
    (2, "no user has the 3 interactions leave-one-out needs; nothing to validate on"),
    (3, "no user has 2 training interactions, so there is no next-item example to train on"),
])
def test_data_too_short_to_validate_or_train_on_is_refused_before_training(tmp_path, length, expected):
    cfg = tiny_run_config(tmp_path / "run", max_epochs=1)
    cfg["data"] = DataConfig(min_user_interactions=0, min_item_interactions=0)
    with pytest.raises(AwrsrError, match=f"^{expected}$"):
        fit(**cfg, frame=_frame(length), console=QUIET)
    assert not (tmp_path / "run").exists()


def test_a_run_resumes_with_a_new_budget_and_machine_and_without_its_run_record(tmp_path):
    """Every field RESUMABLE_CHANGES names may change on resume; a run started before
    checkpoints/run.yaml existed is checked against its config.yaml instead. The fit says its
    protocol as configured and seeds torch's global generator with train.seed."""
    run_dir, shown = tmp_path / "run", io.StringIO()
    fixed = dict(seed=11, weight_decay=0.01)
    fit(**tiny_run_config(run_dir, max_epochs=1, patience=50, **fixed), console=Console(file=shown, width=300))
    assert "seen items filtered, pessimistic ties" in shown.getvalue()
    assert torch.initial_seed() == 11
    state = torch.load(run_dir / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=True)
    assert state["optimizer_states"][0]["param_groups"][0]["weight_decay"] == 0.01  # the optimiser trained with it
    (run_dir / "checkpoints" / "run.yaml").unlink()  # as an older awrsr left it
    with pytest.raises(ArtifactError, match=r"cannot resume .* with another configuration: train\.lr"):
        fit(**tiny_run_config(run_dir, max_epochs=2, patience=50, lr=0.5, **fixed), console=QUIET, resume=True)
    budget = dict(max_epochs=3, patience=40, val_every=2, max_time="00:01:00:00", num_threads=1, accelerator="cpu")
    resumed = fit(**tiny_run_config(run_dir, **budget, **fixed), console=QUIET, resume=True)
    assert resumed.metrics["selection"]["epochs_trained"] == 3


def test_a_run_stopped_by_its_time_budget_before_any_validation_is_a_clear_error(tmp_path, monkeypatch):
    import time

    from awrsr.train.module import SequentialRecommenderModule

    original = SequentialRecommenderModule.training_step

    def slow_first_step(self, batch, batch_idx):  # the first epoch outlasts the one-second budget
        if self.current_epoch == 0 and batch_idx == 0:
            time.sleep(1.2)
        return original(self, batch, batch_idx)

    monkeypatch.setattr(SequentialRecommenderModule, "training_step", slow_first_step)
    cfg = tiny_run_config(tmp_path / "run", max_epochs=2, val_every=2, max_time="00:00:00:01")
    with pytest.raises(AwrsrError, match=r"before any validation \(train.val_every=2, train.max_time=00:00:00:01\); no epoch can be selected"):
        fit(**cfg, console=QUIET)


def test_evaluate_refuses_a_split_it_does_not_hold_and_two_sources_of_data(trained_run, tmp_path):
    with pytest.raises(ConfigError, match="^split must be 'valid' or 'test', got 'train'$"):
        rank_artifact(trained_run.run_dir, split="train")
    frame = pl.DataFrame({"user_id": [1, 1, 1], "item_id": [1, 2, 3]})
    with pytest.raises(ConfigError, match="^give data_path or frame, not both$"):
        evaluate(trained_run.run_dir, data_path=str(tmp_path / "events.csv"), frame=frame, console=QUIET)


def test_a_moved_data_file_in_another_format_is_named_as_such(trained_run, tmp_path):
    # check_options_apply told to remove data.time_col or set data.format: options evaluate and
    # plot take from the run, not from their caller
    run = copy_run_with_data(trained_run.run_dir, tmp_path / "run", path="events.csv", time_col="ts")
    moved = tmp_path / "events.txt"
    moved.write_text("1 2 3\n")
    with pytest.raises(DataError, match=rf"^{re.escape(str(moved))}: reads as whitespace, which has no place for the run's "
                                        rf"data.time_col \({re.escape(str(run))}/config.yaml\); give --data_path"):
        evaluate(run, data_path=str(moved), console=QUIET)


def test_a_console_that_is_no_console_is_refused_before_any_work(trained_run, tmp_path):
    """console=False printed all the same, and console=True failed on an attribute deep inside."""
    from awrsr.experiments.compare import run_compare
    from awrsr.experiments.tune import run_tune

    for wrong in (False, True, "quiet"):
        with pytest.raises(ConfigError, match=rf"^fit: console must be a rich Console \(Console\(quiet=True\) prints nothing\), got {type(wrong).__name__}"):
            fit(**tiny_run_config(tmp_path / "run"), console=wrong)
        with pytest.raises(ConfigError, match="^evaluate: console must be a rich Console"):
            evaluate(trained_run.run_dir, console=wrong)
    assert not (tmp_path / "run").exists()
    base = tmp_path / "base.yaml"
    base.write_text("train: {max_epochs: 1}\n")
    with pytest.raises(ConfigError, match="^compare: console must be a rich Console"):
        run_compare(str(base), ["simp"], [1], tmp_path / "c", console=False)
    with pytest.raises(ConfigError, match="^tune: console must be a rich Console"):
        run_tune(str(base), {"train.lr": [0.1, 0.01]}, tmp_path / "t", console=False)
    assert not (tmp_path / "c").exists() and not (tmp_path / "t").exists()


def test_a_replacing_run_that_fails_leaves_no_finished_run_behind(trained_run, tmp_path, monkeypatch):
    """With overwrite, the old run's model and metrics go once the new run starts training: a new
    run that then fails must not leave the old model passing for a finished run beside its checkpoints."""

    def blown_up(self, batch, batch_idx):
        raise FloatingPointError("the model produced NaN scores")

    run_dir = tmp_path / "run"
    shutil.copytree(trained_run.run_dir, run_dir)
    monkeypatch.setattr(SequentialRecommenderModule, "validation_step", blown_up)
    with pytest.raises(TrainingDiverged):
        fit(**tiny_run_config(run_dir, max_epochs=1), console=QUIET, overwrite=True)
    old_records = ("metrics.json", "test_ranks.npy", "history.csv", *REQUIRED_FILES)  # history.csv: the old run's curves
    assert {name for name in old_records if (run_dir / name).exists()} == set()


def test_val_every_group_by_length_and_precision_reach_the_trainer(tmp_path):
    """Each option changes what a fit does: train.val_every validates every second epoch only and
    trains exactly as validating every epoch does, train.group_by_length trains on other batches
    (another loss, same seed), and bf16-mixed computes in bfloat16 (another loss)."""

    def trained(name, **options):
        config = tiny_run_config(tmp_path / name, max_epochs=2, patience=50, **options)
        history = fit(**config, console=QUIET).history
        return history["train/loss"].to_list(), history.filter(pl.col("val/ndcg@10").is_not_null())["epoch"].to_list()

    plain_loss, validated = trained("plain")
    assert validated == [1, 2]
    every_second_loss, validated = trained("every-second", val_every=2)
    assert validated == [2] and every_second_loss == plain_loss  # validating draws nothing from training's RNG
    grouped_loss, _ = trained("grouped", group_by_length=True)
    bf16_loss, _ = trained("bf16", precision="bf16-mixed")
    assert grouped_loss[0] != plain_loss[0] and bf16_loss[0] != plain_loss[0]
