"""tune selects on validation only: trials whose validation and test rankings disagree are run
by a stand-in with scripted metrics; best.yaml, trials.csv and max_trials are checked by hand."""

import csv
import json

import pytest
import yaml
from rich.console import Console

from awrsr.errors import ConfigError, TrainingDiverged
from awrsr.experiments.tune import run_tune

QUIET = Console(quiet=True)
#            lr:   valid ndcg@10, test ndcg@10 -- the best on test is the worst-but-one on validation
SCRIPT = {0.1: (0.30, 0.10), 0.01: (0.20, 0.50), 0.001: (0.25, 0.00), 0.0001: (0.10, 0.20)}
BEST_EPOCH = {0.1: 4, 0.01: 7, 0.001: 2, 0.0001: 5}  # each trains 3 epochs past its best
# any other lr diverges (a learning rate too high), as run_or_reuse reports it: nothing is written


@pytest.fixture
def trials(monkeypatch, tmp_path):
    calls = []

    def run_or_reuse(config, options, run_dir, console, wait=True, print_test=True, fingerprints=None):
        calls.append(options["train.lr"])
        if options["train.lr"] not in SCRIPT:
            raise TrainingDiverged("training diverged in epoch 1")
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "config.yaml").write_text(yaml.safe_dump({"train": {"lr": options["train.lr"]}}))
        valid, test = SCRIPT[options["train.lr"]]
        epoch = BEST_EPOCH[options["train.lr"]]
        metrics = {"selection": {"monitor": "valid ndcg@10", "best_epoch": epoch, "epochs_trained": epoch + 3},
                   "valid": {"ndcg@10": valid},
                   "test": {"ndcg@10": test}, "protocol": {"filter_seen": True}, "time": {"mean_epoch_s": 1.0}}
        (run_dir / "metrics.json").write_text(json.dumps(metrics))
        return metrics

    monkeypatch.setattr("awrsr.experiments.tune.run_or_reuse", run_or_reuse)
    base = tmp_path / "base.yaml"
    base.write_text("train: {max_epochs: 1}\n")
    return str(base), calls


def test_the_best_validation_trial_is_selected_and_written_to_best_yaml(trials, tmp_path):
    base, calls = trials
    best = run_tune(base, {"train.lr": [0.1, 0.01, 0.001]}, tmp_path / "t", console=QUIET)
    assert sorted(calls) == [0.001, 0.01, 0.1]
    assert best["train.lr"] == 0.1 and best["valid"] == 0.30
    assert yaml.safe_load((tmp_path / "t" / "best.yaml").read_text()) == {"train": {"lr": 0.1}}
    rows = list(csv.DictReader((tmp_path / "t" / "trials.csv").read_text().splitlines()))
    assert [float(r["train.lr"]) for r in rows] == [0.1, 0.001, 0.01]  # best validation first
    assert [float(r["valid"]) for r in rows] == [0.30, 0.25, 0.20]


def test_max_trials_runs_exactly_that_many_and_the_same_ones_for_the_same_seed(trials, tmp_path):
    base, calls = trials
    space = {"train.lr": [0.1, 0.01, 0.001, 0.0001]}
    run_tune(base, space, tmp_path / "a", max_trials=2, sample_seed=3, console=QUIET)
    first = list(calls)
    assert len(first) == 2 and len(set(first)) == 2
    assert len(list(csv.DictReader((tmp_path / "a" / "trials.csv").read_text().splitlines()))) == 2
    calls.clear()
    run_tune(base, space, tmp_path / "b", max_trials=2, sample_seed=3, console=QUIET)
    assert sorted(calls) == sorted(first)
    calls.clear()
    best = run_tune(base, space, tmp_path / "c", max_trials=1, console=QUIET)
    assert len(calls) == 1 and best["train.lr"] == calls[0]
    calls.clear()
    run_tune(base, space, tmp_path / "d", max_trials=4, console=QUIET)  # the whole grid
    assert sorted(calls) == sorted(space["train.lr"])


def test_trials_csv_holds_each_trials_values_best_first(trials, tmp_path):
    from awrsr.experiments.tune import trial_id

    base, _ = trials
    run_tune(base, {"train.lr": [0.01, 0.1]}, tmp_path / "t", console=QUIET)
    lines = (tmp_path / "t" / "trials.csv").read_text().splitlines()
    assert lines == [
        "trial,train.lr,monitor,valid,best_epoch,filter_seen",
        f"trial-{trial_id({'train.lr': 0.1})},0.1,ndcg@10,0.3,4,True",
        f"trial-{trial_id({'train.lr': 0.01})},0.01,ndcg@10,0.2,7,True",
    ]


def test_a_skipped_trial_is_tried_once_not_again_in_the_second_pass(trials, tmp_path):
    import io

    base, calls = trials
    shown = io.StringIO()
    best = run_tune(base, {"train.lr": [0.5, 0.1, 0.01]}, tmp_path / "t", console=Console(file=shown, width=300))
    assert best["train.lr"] == 0.1
    assert sorted(calls) == [0.01, 0.1, 0.5]  # the diverging lr = 0.5 trained once
    assert shown.getvalue().count("skipped {'train.lr': 0.5}: training diverged in epoch 1") == 1


def test_the_sample_seed_decides_which_trials_run(trials, tmp_path):
    base, calls = trials
    space = {"train.lr": [0.1, 0.01, 0.001, 0.0001]}
    samples = set()
    for seed in range(3):
        calls.clear()
        run_tune(base, space, tmp_path / f"seed-{seed}", max_trials=2, sample_seed=seed, console=QUIET)
        samples.add(frozenset(calls))
    # 6 possible pairs: three seeds all drawing the same one would mean the seed is not used
    assert len(samples) > 1


def test_a_key_both_in_the_grid_and_fixed_for_every_trial_is_refused_before_any_trial(trials, tmp_path):
    base, calls = trials
    # one of the two would be ignored, and the trial's directory names only the grid's value
    with pytest.raises(ConfigError, match="--set train.lr: the search space sets it too"):
        run_tune(base, {"train.lr": [0.1, 0.01]}, tmp_path / "t", extra={"train.lr": "0.001"}, console=QUIET)
    assert calls == []


def test_a_tie_goes_to_the_trial_first_in_the_search_whatever_order_the_trials_finished_in():
    # processes sharing a search (or a report) collect the rows in different orders: the best must not depend on it
    from awrsr.experiments.tune import best_first, trial_id

    trials = [{"train.lr": lr} for lr in (0.1, 0.01, 0.001)]
    rows = [{"trial": f"trial-{trial_id(t)}", "train.lr": t["train.lr"], "valid": v} for t, v in zip(reversed(trials), (0.2, 0.3, 0.3))]
    assert [row["train.lr"] for row in best_first(rows, trials)] == [0.1, 0.01, 0.001]
