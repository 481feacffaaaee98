"""Resuming a run from its last checkpoint continues it exactly where it stopped."""

import polars as pl
import pytest
from rich.console import Console

from awrsr.errors import AwrsrError, ConfigError
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


def test_resume_refuses_another_configuration_and_a_missing_checkpoint(tmp_path):
    run_dir = tmp_path / "run"
    fit(**tiny_run_config(run_dir, max_epochs=1), console=QUIET)
    with pytest.raises(ConfigError, match=r"train\.lr"):
        fit(**tiny_run_config(run_dir, max_epochs=2, lr=0.5), console=QUIET, resume=True)
    with pytest.raises(AwrsrError, match="not a run that can be resumed"):
        fit(**tiny_run_config(tmp_path / "never-started", max_epochs=2), console=QUIET, resume=True)
    (run_dir / "checkpoints" / "last.ckpt").write_bytes(b"truncated")
    with pytest.raises(AwrsrError, match="last.ckpt: not a readable training checkpoint"):
        fit(**tiny_run_config(run_dir, max_epochs=2), console=QUIET, resume=True)


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
    with pytest.raises(ConfigError, match="model.mask_prob"):
        fit(**cfg, console=QUIET, resume=True)
