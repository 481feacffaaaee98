import csv
import io
import json
import math
import re
import shutil
import warnings

import numpy as np
import pytest
import yaml
from rich.console import Console

import awrsr
from awrsr.errors import ArtifactError, ConfigError
from awrsr.experiments.compare import run_compare, tabulate
from awrsr.experiments.runs import check_collection_directory, option_args, parse_sets
from awrsr.experiments.stats import mean_std, paired_p_value, relative_improvement
from awrsr.experiments.tune import grid, load_search_space, run_tune, trial_id
from conftest import run_cli

QUIET = Console(quiet=True)
# the least of a finished run's metrics.json that the reports read
RECORD = {"selection": {"monitor": "valid ndcg@5", "best_epoch": 1, "epochs_trained": 1}, "valid": {"ndcg@5": 0.1},
          "test": {"ndcg@5": 0.1}, "protocol": {"filter_seen": True}, "time": {"mean_epoch_s": 1.0}}


def test_paired_t_test_by_hand():
    # differences 1, 2, 3: mean 2, sd 1, t = 2 / (1 / sqrt 3) = 3.4641 with 2 df -> p = 0.07418
    assert paired_p_value([2.0, 4.0, 6.0], [1.0, 2.0, 3.0]) == pytest.approx(0.07418, abs=1e-4)
    assert paired_p_value([1.0, 2.0], [1.0, 2.0]) == 1.0
    assert math.isnan(paired_p_value([1.0], [0.5]))
    # the same difference on every seed: no variance, no p-value (not p = 0, and no scipy warning)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert math.isnan(paired_p_value([0.0867, 0.1367, 0.2], [0.0767, 0.1267, 0.19]))
        assert paired_p_value([0.0867, 0.1367], [0.0767, 0.1268]) < 0.05  # one ten-thousandth apart is variance
    assert mean_std([0.2, 0.4])[0] == pytest.approx(0.3)
    assert relative_improvement(0.0654, 0.0616) == pytest.approx(6.1688, abs=1e-3)


def test_run_compare_checks_its_python_arguments(tmp_path):
    from pathlib import Path

    from awrsr.experiments.compare import seed_list

    assert seed_list(np.array([1, 2])) == [1, 2] and seed_list((np.int64(3),)) == [3]
    for seeds in (1, "12", ["1"], [1.0], [True], None):
        with pytest.raises(ConfigError, match="^seeds must be a list of integers"):
            seed_list(seeds)
    config = Path("configs/sasrec/synthetic.yaml")  # a Path, as run_tune takes one
    with pytest.raises(ConfigError, match="^variants must be a list of names .* got the string 'simp'"):
        run_compare(config, "simp", [1], tmp_path / "c", console=Console(quiet=True))
    with pytest.raises(ConfigError, match="^report_only must be true or false"):
        run_compare(config, ["simp"], [1], tmp_path / "c", console=Console(quiet=True), report_only="yes")
    with pytest.raises(ConfigError, match="^seeds must be a list of integers"):
        run_compare(config, ["simp"], 1, tmp_path / "c", console=Console(quiet=True))
    assert not (tmp_path / "c").exists()


def test_table_layout_values_by_hand():
    def rec(variant, seed, ndcg5):
        return {"variant": variant, "seed": seed, "metrics": {"test": {"ndcg@5": ndcg5}}}

    records = [rec("none", 1, 0.10), rec("none", 2, 0.12), rec("simp", 1, 0.11), rec("simp", 2, 0.14)]
    table = tabulate(records, base="none", metrics=["ndcg@5"])
    cell = table["simp"]["ndcg@5"]
    assert cell.mean == pytest.approx(0.125)
    assert cell.improvement == pytest.approx((0.125 - 0.11) / 0.11 * 100)
    assert cell.p_value == pytest.approx(paired_p_value([0.11, 0.14], [0.10, 0.12]))
    assert math.isnan(table["none"]["ndcg@5"].improvement)


def test_grid_and_trial_ids_are_stable():
    trials = grid({"train.lr": [0.1, 0.2], "model.dropout": [0.3]})
    assert trials == [{"train.lr": 0.1, "model.dropout": 0.3}, {"train.lr": 0.2, "model.dropout": 0.3}]
    assert trial_id(trials[0]) == trial_id(dict(reversed(list(trials[0].items()))))
    assert option_args({"model.refine": "simp", "evaluation.ks": [1, 5]}) == [
        "--model.refine", "simp", "--evaluation.ks", "[1, 5]",
    ]
    assert parse_sets(["train.max_epochs=3"]) == {"train.max_epochs": "3"}
    with pytest.raises(ConfigError, match="key=value"):
        parse_sets(["train.max_epochs"])
    # a list value stays one option; a comma before another key=value is two options in one --set
    assert parse_sets(["model.refine_blocks=[0,1]", "data.path=a,b=c.csv"]) == {"model.refine_blocks": "[0,1]", "data.path": "a,b=c.csv"}
    with pytest.raises(ConfigError, match=r"--set 'data.path=x.csv,train.patience=2' holds more than one option: give each "
                                          r"its own --set, or a list --set \[data.path=x.csv,train.patience=2\]"):
        parse_sets(["data.path=x.csv,train.patience=2"])
    # a list of options one of whose values is a list: the command line leaves it one string
    assert parse_sets(["[model.refine=simp,model.refine_blocks=[0, 1],evaluation.ks=[1,5]]", "train.lr=0.1"]) == {
        "model.refine": "simp", "model.refine_blocks": "[0, 1]", "evaluation.ks": "[1,5]", "train.lr": "0.1"}
    for item in ("[a.b=[0,c.d=1]", "[a.b=1]]", "[a.b=x]y,c.d=1]"):  # the hint would repeat them; one took "1]" as a value
        with pytest.raises(ConfigError, match=rf"^--set '{re.escape(item)}': its brackets do not pair up$"):
            parse_sets([item])
    for item in ("[train.lr=1", "lr=1", "=1", "[lr=1,train.seed=2]"):  # a broken list, an undotted or missing key
        with pytest.raises(ConfigError, match=r"--set expects key=value with a dotted key \(e.g. train.max_epochs=5\), got"):
            parse_sets([item])


def test_bad_search_space_is_a_clear_error(tmp_path):
    space = tmp_path / "space.yaml"
    space.write_text("lr: [0.1]\n")
    with pytest.raises(ConfigError, match="dotted"):
        load_search_space(space)
    space.write_text("model.hiden_size: [8]\n")
    with pytest.raises(ConfigError, match="model.hiden_size"):
        load_search_space(space)
    space.write_text("model: {hidden_size: 8}\ntrain: {lr: 0.1}\n")  # the base config, given in the space's place
    with pytest.raises(ConfigError, match=r"space.yaml: a fit config, not a search space .* the base config first"):
        load_search_space(space)
    space.write_text("data.synthetic.num_users: [10]\ntrain.lr: [0.1]\n")
    assert load_search_space(space) == {"data.synthetic.num_users": [10], "train.lr": [0.1]}
    space.write_text("train.lr: [0.001, 0.01\n")
    with pytest.raises(ConfigError, match=r"space.yaml, line 1, column \d+: not valid YAML"):
        load_search_space(space)
    space.write_text("train.lr: [0.001]\nmodel.dropout: [0.2]\ntrain.lr: [0.1]\n")
    with pytest.raises(ConfigError, match=r"space.yaml, line 3: 'train.lr' is given twice"):
        load_search_space(space)
    # a value twice is one trial twice: "2 trials" would run one, and max_trials would draw fewer
    space.write_text("train.lr: [0.001, 1.0e-3]\n")
    with pytest.raises(ConfigError, match=r"space.yaml: train.lr: 0.001 given twice"):
        load_search_space(space)
    space.write_text("model.refine_blocks: [[0], [0, 1], [0]]\ntrain.lr: [1, 1.0]\n")
    with pytest.raises(ConfigError, match=r"model.refine_blocks: \[0\] given twice"):
        load_search_space(space)


def test_what_would_fail_every_trial_fails_once_before_any_trains(tmp_path):
    base = tmp_path / "base.yaml"
    base.write_text("train: {max_epochs: 1}\n")
    space = {"train.lr": [0.001, 0.01]}
    for max_trials in (0, -1):
        with pytest.raises(ConfigError, match=f"max_trials must be >= 1, got {max_trials}"):
            run_tune(str(base), space, tmp_path / "t", max_trials=max_trials, console=QUIET)
    with pytest.raises(ConfigError, match="--set train.max_epoch: unknown config key; did you mean train.max_epochs"):
        run_tune(str(base), space, tmp_path / "t", extra={"train.max_epoch": "1"}, console=QUIET)
    base.write_text("train: {max_epochs: 1\n")
    with pytest.raises(ConfigError, match=r"base.yaml, line 1, column \d+: not valid YAML"):
        run_tune(str(base), space, tmp_path / "t", console=QUIET)
    base.write_text("train:\n  max_epochs: 1\n  max_epochs: 2\n")
    with pytest.raises(ConfigError, match="base.yaml, line 3: 'max_epochs' is given twice"):
        run_tune(str(base), space, tmp_path / "t", console=QUIET)
    # the base config's own keys and values: once, naming the file (each trial would skip on them)
    base.write_text("model: {nme: sasrec}\n")
    with pytest.raises(ConfigError, match=r"base.yaml, line 1: unknown key 'model.nme'; did you mean model.name\?"):
        run_tune(str(base), space, tmp_path / "t", console=QUIET)
    base.write_text("train: {max_epochs: 1}\n")
    with pytest.raises(ConfigError, match=r"base config .*base.yaml with --set: .*train.max_epochs"):
        run_tune(str(base), space, tmp_path / "t", extra={"train.max_epochs": "abc"}, console=QUIET)
    assert not (tmp_path / "t").exists()


def test_compare_refuses_a_variant_that_differs_only_in_options_no_model_reads(tmp_path):
    base = tmp_path / "base.yaml"
    base.write_text("train: {max_epochs: 1}\n")
    # SASRec never reads BERT4Rec's mask probability: both runs would train the same model
    with pytest.raises(ConfigError, match="variant '0.5' differs from '0.2' only in model.mask_prob, which neither model reads"):
        run_compare(str(base), ["0.5"], [1], tmp_path / "c", key="model.mask_prob", base="0.2", console=QUIET)
    with pytest.raises(ConfigError, match="variant '0.1' is the same configuration as '0.10'"):
        run_compare(str(base), [0.1], [1], tmp_path / "c", key="train.lr", base="0.10", console=QUIET)
    with pytest.raises(ConfigError, match="only in model.refine_per_head"):
        run_compare(str(base), {"plain": {}, "per-head": {"model.refine_per_head": True}}, [1], tmp_path / "c", console=QUIET)
    # two variants alike, neither the other's reference: one model trained twice, +0% between them
    with pytest.raises(ConfigError, match="variant '0.010' is the same configuration as '0.01'"):
        run_compare(str(base), ["0.01", "0.010"], [1], tmp_path / "c", key="train.lr", base="0.1", console=QUIET)
    alike = {"plain": {}, "a": {"train.lr": 0.01, "model.mask_prob": 0.3}, "b": {"train.lr": 0.01, "model.mask_prob": 0.5}}
    with pytest.raises(ConfigError, match="variant 'b' differs from 'a' only in model.mask_prob, which neither model reads"):
        run_compare(str(base), alike, [1], tmp_path / "c", console=QUIET)
    assert not (tmp_path / "c").exists()
    # where a model reads it, the same option is a real variant (BERT4Rec's mask probability)
    from awrsr.experiments.compare import check_variant, check_variants_differ

    resolved = {name: check_variant(str(base), {"model.name": "bert4rec", "model.mask_prob": p}, name)
                for name, p in (("0.2", 0.2), ("0.5", 0.5))}
    check_variants_differ(resolved, {"0.2": "0.2", "0.5": "0.2"})


def test_inert_options_are_named_and_read_ones_are_not():
    from awrsr.models import ModelConfig
    from awrsr.run_config import inert_options
    from awrsr.train import TrainConfig

    assert inert_options(ModelConfig(), TrainConfig()) == {}
    assert set(inert_options(ModelConfig(refine_per_head=True, refine_value_form="literal"), TrainConfig(num_negatives=5, pvn_weight=0.1))) == {
        "model.refine_per_head", "model.refine_value_form", "train.num_negatives", "train.pvn_weight"}
    assert inert_options(ModelConfig(refine="value", refine_value_form="literal", refine_per_head=True), TrainConfig(loss="bce", num_negatives=5)) == {}
    assert inert_options(ModelConfig(attention="calibrated"), TrainConfig(adversarial_alpha=0.5)) == {}
    assert list(inert_options(ModelConfig(), TrainConfig(adversarial_alpha=0.5))) == ["train.adversarial_alpha"]


def test_matrix_options_are_inert_for_a_refinement_without_matrices(monkeypatch):
    """A refinement registered later that has no n x n matrices reads refine_per_head, refine_scale
    and refine_init_std no more than 'none' does (a compare of such variants would train one model
    three times); refine_blocks applies to every refinement."""
    from awrsr.models import ModelConfig, build_model
    from awrsr.nn.refine import REFINEMENTS
    from awrsr.nn.refine.none import NoRefinement
    from awrsr.run_config import inert_options
    from awrsr.train import TrainConfig

    class Sharpen(NoRefinement):  # no matrices: B = A squared and renormalised
        is_identity = False

        def forward(self, weights, mask):
            squared = weights**2
            return squared / squared.sum(-1, keepdim=True).clamp(min=1e-12)

    real_get = REFINEMENTS.get
    monkeypatch.setattr(REFINEMENTS, "get", lambda name: (lambda cfg, block: Sharpen()) if name == "simp" else real_get(name))
    options = dict(refine="simp", refine_per_head=True, refine_scale="length", refine_blocks=[1])
    assert set(inert_options(ModelConfig(**options), TrainConfig())) == {"model.refine_per_head", "model.refine_scale"}
    kinds = [type(block.attention.refinement).__name__ for block in build_model(ModelConfig(**options), 10).blocks]
    assert kinds == ["NoRefinement", "Sharpen"]  # refine_blocks honoured without the part knowing it
    monkeypatch.undo()
    assert inert_options(ModelConfig(**options), TrainConfig()) == {}  # M_simp reads them all


def test_compare_refuses_variant_names_that_are_not_directory_names_and_bad_seeds(tmp_path):
    base = tmp_path / "base.yaml"
    base.write_text("train: {max_epochs: 1}\n")
    for name in ("/data/books.csv", "..", "a/b"):
        with pytest.raises(ConfigError, match="cannot be a directory name under output_dir"):
            run_compare(str(base), {name: {"train.lr": 0.01}}, [1], tmp_path / "c", console=QUIET)
    with pytest.raises(ConfigError, match="cannot be a directory name under output_dir"):
        run_compare(str(base), ["/data/books.csv"], [1], tmp_path / "c", key="data.path", base="x", console=QUIET)
    with pytest.raises(ConfigError, match=r"seeds: each must be in 0..4294967295, got -1"):
        run_compare(str(base), ["simp"], [-1], tmp_path / "c", console=QUIET)
    with pytest.raises(ConfigError, match="variant 'b' sets train.seed; the comparison's seeds are given by --seeds"):
        run_compare(str(base), {"a": {}, "b": {"train.seed": 3}}, [1], tmp_path / "c", console=QUIET)
    with pytest.raises(ConfigError, match=r"seeds: none given; a comparison needs at least one"):
        run_compare(str(base), ["simp"], [], tmp_path / "c", console=QUIET)
    with pytest.raises(ConfigError, match=r"seeds: 3 given twice"):
        run_compare(str(base), ["simp"], [3, 4, 3], tmp_path / "c", console=QUIET)
    # --seeds gives every run's seed, so a fixed one would be ignored
    with pytest.raises(ConfigError, match="--set train.seed: --seeds sets it too"):
        run_compare(str(base), ["simp"], [1], tmp_path / "c", extra={"train.seed": "7"}, console=QUIET, report_only=True)
    # so is a --set of what every variant sets (--key's values, say): their own values win
    with pytest.raises(ConfigError, match=r"--set model.refine: every variant sets it \(their own value wins\)"):
        run_compare(str(base), ["simp"], [1], tmp_path / "c", extra={"model.refine": "add"}, console=QUIET, report_only=True)
    with pytest.raises(ConfigError, match=r"--set train.lr: every variant sets it"):
        run_compare(str(base), {"a": {"train.lr": 0.1}, "b": {"train.lr": 0.2}}, [1], tmp_path / "c",
                    extra={"train.lr": "0.3"}, console=QUIET, report_only=True)
    assert not (tmp_path / "c").exists()


def test_an_output_dir_that_is_a_file_is_named_by_compare_tune_and_plot(tmp_path):
    from awrsr.experiments.figures import draw_figures
    from awrsr.files import output_directory

    base = tmp_path / "base.yaml"
    base.write_text("train: {max_epochs: 1}\n")
    taken = tmp_path / "events.csv"
    taken.write_text("x")
    with pytest.raises(ConfigError, match=r"output_dir .*events.csv is a file; a comparison needs a directory"):
        run_compare(str(base), ["simp"], [1], taken, console=QUIET)
    with pytest.raises(ConfigError, match=r"output_dir .*events.csv/tune lies inside the file .*events.csv; a tune"):
        run_tune(str(base), {"train.lr": [0.1]}, taken / "tune", console=QUIET)
    with pytest.raises(ConfigError, match=r"output_dir .*events.csv is a file; the figures need a directory"):
        draw_figures(tmp_path / "no-run", taken)
    assert taken.read_text() == "x"
    assert output_directory(tmp_path / "new" / "deeper") == tmp_path / "new" / "deeper"  # not created
    assert not (tmp_path / "new").exists()



def test_a_run_that_fails_before_writing_leaves_none_of_the_folders_it_made(tmp_path):
    from awrsr.errors import DataError

    base = tmp_path / "base.yaml"
    base.write_text(f"data: {{path: {tmp_path / 'missing.txt'}}}\ntrain: {{max_epochs: 1}}\n")
    with pytest.raises(DataError, match="data file not found"):
        run_compare(str(base), ["simp"], [1], tmp_path / "new" / "c", console=QUIET)
    assert not (tmp_path / "new").exists()
    kept = tmp_path / "kept"  # folders that were there before stay, with what they hold
    (kept / "c" / "simp").mkdir(parents=True)
    (kept / "notes.txt").write_text("x")
    with pytest.raises(DataError):
        run_compare(str(base), ["simp"], [1], kept / "c", console=QUIET)
    assert sorted(p.relative_to(kept).as_posix() for p in kept.rglob("*")) == ["c", "c/simp", "notes.txt"]

TINY = [
    "data.synthetic.num_users=80", "data.synthetic.num_items=20", "model.max_len=10",
    "model.hidden_size=8", "model.num_blocks=1", "train.max_epochs=2",
]


@pytest.fixture(scope="module")
def base_config(tmp_path_factory):
    path = tmp_path_factory.mktemp("cfg") / "base.yaml"
    path.write_text("train:\n  monitor: ndcg@5\n")
    return str(path)


def test_tune_selects_on_validation_and_resumes(base_config, tmp_path):
    extra = parse_sets(TINY)
    space = {"train.lr": [0.01, 0.001], "model.num_heads": [1, 3]}  # 3 heads do not divide 8: skipped
    best = run_tune(base_config, space, tmp_path, extra=extra, console=QUIET)
    rows = (tmp_path / "trials.csv").read_text().splitlines()
    assert len(rows) == 1 + 2  # header + the two runnable trials
    valids = [json.loads(p.read_text())["valid"]["ndcg@5"] for p in tmp_path.glob("trial-*/metrics.json")]
    assert len(valids) == 2 and best["valid"] == pytest.approx(max(valids))
    assert (tmp_path / "best.yaml").is_file()
    skipped = [json.loads(p.read_text()) for p in tmp_path.glob("trial-*/skipped.json")]  # why, kept for later tunes and reports
    assert len(skipped) == 2 and all("must be divisible by model.num_heads (3)" in s["reason"] for s in skipped)
    stamps = {p: p.stat().st_mtime for p in tmp_path.glob("trial-*/*.json")}
    run_tune(base_config, space, tmp_path, extra=extra, console=QUIET)  # finished trials are reused, skipped ones not tried again
    assert stamps == {p: p.stat().st_mtime for p in tmp_path.glob("trial-*/*.json")}
    # ...but never a run made with another configuration in the same directory
    with pytest.raises(ArtifactError, match="another configuration"):
        run_tune(base_config, space, tmp_path, extra={**extra, "train.max_epochs": "3"}, console=QUIET)


def test_a_tune_refuses_an_interrupted_trial_of_other_options_before_training_anything(base_config, tmp_path, monkeypatch):
    """A trial interrupted under other fixed options (another --set) could not be resumed, and the
    tune recorded that as a skipped trial (exit 0): best.yaml left its grid point out, and its
    skipped.json made every later tune skip it too. Now the tune stops before training any trial."""
    from awrsr.train.module import SequentialRecommenderModule

    extra = parse_sets(TINY)
    run_tune(base_config, {"train.lr": [0.001]}, tmp_path, extra=extra, console=QUIET)
    interrupted = tmp_path / f"trial-{trial_id({'train.lr': 0.001})}"
    (interrupted / "metrics.json").unlink()  # as if killed in its final evaluation: resumable
    assert (interrupted / "checkpoints" / "last.ckpt").is_file()
    monkeypatch.setattr(SequentialRecommenderModule, "training_step", lambda *args: pytest.fail("a trial trained"))
    with pytest.raises(ArtifactError, match=r"cannot resume .*trial-.* with another configuration: train\.batch_size \(128 -> 16\)"):
        run_tune(base_config, {"train.lr": [0.01, 0.001]}, tmp_path, extra={**extra, "train.batch_size": "16"}, console=QUIET)
    assert not (interrupted / "skipped.json").exists() and not (tmp_path / f"trial-{trial_id({'train.lr': 0.01})}").exists()


def test_tune_shows_validation_only(base_config, tmp_path):
    """Selection is on validation, so the trials' tables leave the test scores off the screen
    (they stay in each trial's metrics.json)."""
    shown = io.StringIO()
    run_tune(base_config, {"train.lr": [0.01]}, tmp_path, extra=parse_sets(TINY), console=Console(file=shown, width=200))
    assert "valid (epoch" in shown.getvalue() and "popularity (valid)" in shown.getvalue()
    assert "popularity (test)" not in shown.getvalue()
    assert not re.search(r"[┃│]\s*test\s*[┃│]", shown.getvalue())  # no test column in the table
    assert "test" in json.loads(next(tmp_path.glob("trial-*/metrics.json")).read_text())
    # each trial is named with its values as it starts (a log file shows no progress bar until the
    # end), whole on a narrow console too
    narrow = io.StringIO()
    run_tune(base_config, {"train.lr": [0.01]}, tmp_path, extra=parse_sets(TINY), console=Console(file=narrow, width=30))
    assert f"trial 1 of 1, trial-{trial_id({'train.lr': 0.01})}: train.lr=0.01\n" in narrow.getvalue()


def test_tune_and_compare_runs_show_one_line_per_epoch_unless_the_progress_bar_is_off(base_config, tmp_path, capsys, monkeypatch):
    """A trial or a compared run may train for hours: its epochs show as lines (on a terminal too,
    a record of each run), and train.progress_bar=false silences them."""
    import sys

    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)  # stdout a terminal; the tables go elsewhere
    tables = Console(file=io.StringIO())
    run_tune(base_config, {"train.lr": [0.01]}, tmp_path / "tune", extra=parse_sets(TINY), console=tables)
    out = capsys.readouterr().out
    assert "\r" not in out and "Epoch 1/2" not in out  # no nested bar
    lines = [line for line in out.splitlines() if line.startswith("epoch ")]
    assert len(lines) == 2 and re.fullmatch(r"epoch 2/2: valid ndcg@5 \d\.\d{4}, best \d\.\d{4}, .* \d+\.\d s", lines[1]), lines
    run_compare(base_config, ["simp"], [1], tmp_path / "compare", extra=parse_sets(TINY), console=tables)
    assert sum(line.startswith("epoch 2/2: ") for line in capsys.readouterr().out.splitlines()) == 2  # base and simp
    quiet = parse_sets([*TINY, "train.progress_bar=false"])
    run_tune(base_config, {"train.lr": [0.001]}, tmp_path / "tune2", extra=quiet, console=tables)
    assert "epoch " not in capsys.readouterr().out


def test_tune_report_only_tabulates_what_finished_and_writes_results_only_when_nothing_is_left(base_config, tmp_path):
    extra = parse_sets(TINY)
    space = {"train.lr": [0.01, 0.001], "model.num_heads": [1, 3]}  # 3 heads do not divide 8: never runs
    first, second = (f"trial-{trial_id({'train.lr': lr, 'model.num_heads': 1})}" for lr in (0.01, 0.001))
    search = tmp_path / "search"
    with pytest.raises(ConfigError) as err:
        run_tune(base_config, space, search, extra=extra, console=QUIET, report_only=True)
    assert "no finished trial of this search yet" in str(err.value)
    assert f"Not started: {first} (train.lr=0.01, model.num_heads=1); {second} (train.lr=0.001, model.num_heads=1)." in str(err.value)
    assert "Skipped: model.hidden_size (8) must be divisible by model.num_heads (3): trial-" in str(err.value)
    assert not search.exists()  # a report trains nothing and makes no folder

    run_tune(base_config, {"train.lr": [0.01], "model.num_heads": [1]}, tmp_path / "one", extra=extra, console=QUIET)
    shutil.copytree(tmp_path / "one" / first, search / first)  # one trial finished, as by another process
    shown = io.StringIO()
    row = run_tune(base_config, space, search, extra=extra, console=Console(file=shown, width=60), report_only=True)
    finished = json.loads((search / first / "metrics.json").read_text())
    assert row["trial"] == first and row["valid"] == finished["valid"]["ndcg@5"]
    assert f"| {first} | 0.01 | 1 | {finished['valid']['ndcg@5']:.4f} | {finished['selection']['best_epoch']} |" in shown.getvalue()
    assert "Partial: 1 of 4 trials finished" in shown.getvalue() and f"Not started: {second}" in shown.getvalue()
    assert not (search / "trials.csv").exists() and not (search / "best.yaml").exists()  # no best of a partial search
    assert not (search / second).exists()

    best = run_tune(base_config, space, search, extra=extra, console=QUIET)  # trains the other trial, writes the results
    written = {name: (search / name).read_text() for name in ("trials.csv", "best.yaml")}
    for name in written:
        (search / name).unlink()
    assert run_tune(base_config, space, search, extra=extra, console=QUIET, report_only=True) == best
    assert {name: (search / name).read_text() for name in written} == written  # the report of a finished search writes them again
    # a sample of it (--max_trials), reported or run, prints its choice and writes neither over the search's
    for report_only in (True, False):
        shown = io.StringIO()
        run_tune(base_config, space, search, max_trials=1, sample_seed=5, extra=extra, console=Console(file=shown, width=300),
                 report_only=report_only)
        assert "printed, not written: " in shown.getvalue() and "trials.csv holds trials this search leaves out" in shown.getvalue()
        assert {name: (search / name).read_text() for name in written} == written
    # a wider search holds every trial of the earlier one: its results are written, and until then
    # the earlier ones are said to be the earlier search's
    wider = {**space, "train.lr": [0.01, 0.001, 0.005]}
    for notes in (True, False):  # once all its trials have finished (or are skipped), no note
        shown = io.StringIO()
        run_tune(base_config, wider, search, extra=extra, console=Console(file=shown, width=300))
        assert ("are an earlier search's results; this search's replace them when its last trial finishes" in shown.getvalue()) == notes
    assert len((search / "trials.csv").read_text().splitlines()) == 4
    with pytest.raises(ConfigError, match="report_only must be true or false"):
        run_tune(base_config, space, search, extra=extra, console=QUIET, report_only="no")


def test_tune_shares_a_search_with_another_process(base_config, tmp_path):
    import threading

    from awrsr.workflows import run_lock

    extra, space = parse_sets(TINY), {"train.lr": [0.01, 0.001]}
    run_tune(base_config, space, tmp_path / "done", extra=extra, console=QUIET)
    busy = f"trial-{trial_id({'train.lr': 0.01})}"
    held, tune_waits = threading.Event(), threading.Event()

    class Watched(io.StringIO):
        def write(self, text):
            if "waiting for its result" in text:
                tune_waits.set()
            return super().write(text)

    def other_process():  # trains the lr = 0.01 trial (here: finishes it once tune waits for it)
        with run_lock(tmp_path / "shared" / busy):
            held.set()
            assert tune_waits.wait(120)
            shutil.copytree(tmp_path / "done" / busy, tmp_path / "shared" / busy, dirs_exist_ok=True)

    other = threading.Thread(target=other_process)
    other.start()
    assert held.wait(30)
    console = Console(file=Watched(), width=200)
    best = run_tune(base_config, space, tmp_path / "shared", extra=extra, console=console)
    other.join()
    rows = (tmp_path / "shared" / "trials.csv").read_text().splitlines()
    assert len(rows) == 1 + 2  # each trial once: the one trained here and the awaited one
    assert (tmp_path / "shared" / busy / "metrics.json").read_text() == (tmp_path / "done" / busy / "metrics.json").read_text()
    assert best == run_tune(base_config, space, tmp_path / "done", extra=extra, console=QUIET)


def test_compare_writes_table_runs_and_figures(base_config, tmp_path):
    from awrsr.experiments.figures import draw_figures, held_out_ranks

    shown = io.StringIO()
    table = run_compare(base_config, ["add"], [1, 2], tmp_path, extra=parse_sets(TINY), console=Console(file=shown, width=60))
    assert set(table) == {"none", "add"}
    md = (tmp_path / "table.md").read_text()
    assert "Recall@1" in md and "p=" in md
    assert all(line in shown.getvalue().splitlines() for line in md.splitlines())  # printed whole, not cut at 60 columns
    runs = list(csv.DictReader(open(tmp_path / "runs.csv")))
    assert len(runs) == 4 and {r["device"] for r in runs} == {"cpu"}  # each run says where it trained
    assert len({r["code_version"] for r in runs}) == 1 and runs[0]["code_version"].startswith(awrsr.__version__)
    files = draw_figures(tmp_path)
    assert {f.name for f in files} >= {"valid_ndcg5.png", "grad_norm.png", "ndcg_at_n.png", "attention_add.png"}
    assert all(f.stat().st_size > 1000 for f in files)
    # runs kept as records only (no model: copied back from a GPU lease, unpacked from an archive)
    # still get their curves and NDCG@N; only the attention figures need a model
    records = tmp_path.parent / f"{tmp_path.name}-records"
    shutil.copytree(tmp_path, records, ignore=shutil.ignore_patterns("model.safetensors", "vocab.json", "*.ckpt", "figures"))
    drawn = {f.name for f in draw_figures(records)}
    assert drawn == {f.name for f in files if not f.name.startswith("attention_")}
    # a run from before test ranks were stored: its ranks are computed again from the saved model
    stored = tmp_path / "add" / "seed-1" / "test_ranks.npy"
    expected = np.load(stored)
    stored.unlink()
    np.testing.assert_array_equal(held_out_ranks(stored.parent), expected)
    assert len(draw_figures(tmp_path, tmp_path / "again")) == len(files)
    # a run still training (its history, no metrics.json yet) is not drawn: seed 1 stands for "add"
    (tmp_path / "add" / "seed-0").mkdir()
    shutil.copy(tmp_path / "add" / "seed-1" / "history.csv", tmp_path / "add" / "seed-0" / "history.csv")
    assert len(draw_figures(tmp_path, tmp_path / "third")) == len(files)
    assert "several machines" not in md and "several code versions" not in md and "different machines" not in md
    # a table whose runs trained on different machines says so (its s / epoch column compares them)
    moved = tmp_path / "add" / "seed-2" / "metrics.json"
    record = json.loads(moved.read_text())
    record["machine"]["device"] = "NVIDIA H100 80GB HBM3"
    record["machine"]["subnormals"] = "kept"  # on a GPU, no matter: not noted
    record["code_version"] = "0.0.9"
    moved.write_text(json.dumps(record))
    kept = tmp_path / "none" / "seed-1" / "metrics.json"  # a CPU run with subnormals kept, as before session 57
    record = json.loads(kept.read_text())
    record["machine"]["subnormals"] = "kept"
    kept.write_text(json.dumps(record))
    run_compare(base_config, ["add"], [1, 2], tmp_path, extra=parse_sets(TINY), console=QUIET, report_only=True)
    md = (tmp_path / "table.md").read_text()
    assert "Runs trained on several machines (runs.csv names each run's): NVIDIA H100 80GB HBM3 (1), cpu (3)." in md
    assert "compare the machines as well as the models): add against none, 1 of 2 pairs (seed 2)." in md
    assert f"Runs made by several code versions (runs.csv names each run's): 0.0.9 (1), {runs[0]['code_version']} (3)." in md
    assert ("Runs on the CPU with subnormal floats treated differently, as train.flush_denormal sets (runs.csv names "
            f"each run's): {runs[0]['subnormals']} (2), kept (1).") in md
    assert [r["subnormals"] for r in csv.DictReader(open(tmp_path / "runs.csv"))].count("kept") == 2


def test_compare_tabulates_by_history_length(base_config, tmp_path):
    import polars as pl

    from awrsr.experiments.by_length import bucket_labels
    from awrsr.experiments.figures import draw_figures

    table = run_compare(base_config, ["add"], [1, 2], tmp_path, extra=parse_sets(TINY), console=QUIET)
    rows = pl.read_csv(tmp_path / "by_length.csv", schema_overrides={"improvement_pct": pl.Float64, "p_value": pl.Float64})
    assert set(rows["bucket"]) <= set(bucket_labels([5, 10, 20, 50, 100, 200])) and rows["users"].min() > 0
    for variant in ("none", "add"):
        mine = rows.filter(pl.col("variant") == variant)
        # the buckets partition the test users: their user-weighted means give the overall metric
        overall = (mine["users"] * mine["mean"]).sum() / mine["users"].sum()
        assert overall == pytest.approx(table[variant]["ndcg@10"].mean, abs=1e-12)
        assert mine["users"].sum() == rows.filter(pl.col("variant") == "none")["users"].sum()
    # an improvement is per bucket, paired over seeds with the base
    add, none = rows.filter(pl.col("variant") == "add"), rows.filter(pl.col("variant") == "none")
    assert add["improvement_pct"].to_list() == pytest.approx(((add["mean"] / none["mean"] - 1) * 100).to_list())
    assert none["improvement_pct"].is_nan().all()
    assert "users)" in (tmp_path / "by_length.md").read_text()
    assert "ndcg_by_length.png" in {f.name for f in draw_figures(tmp_path)}
    # ranks and lengths are aligned user by user: a "model" that ranks the target first exactly
    # for histories of at most 20 items scores 1 in those buckets and 0 in the others
    from awrsr.data import data_config_from_dict, leave_one_out, load_sequence_data
    from awrsr.experiments.by_length import length_table

    config = yaml.safe_load((tmp_path / "add" / "seed-1" / "config.yaml").read_text())
    lengths = leave_one_out(load_sequence_data(data_config_from_dict(config["data"]))).test.history.lengths
    assert (lengths <= 20).any() and (lengths > 20).any()
    for seed in (1, 2):
        np.save(tmp_path / "add" / f"seed-{seed}" / "test_ranks.npy", np.where(lengths <= 20, 1, 15).astype(np.int32))
    records = [{"variant": v, "seed": s, "run_dir": str(tmp_path / v / f"seed-{s}")} for v in ("none", "add") for s in (1, 2)]
    labels, rows, left_out = length_table(records, {"none": "none", "add": "none"}, "none", edges=[10, 20, 50])
    assert labels == ["1-10", "11-20", "21-50", ">50"] and not left_out
    counts = rows["add"].counts
    assert counts == [int(((lengths > lo) & (lengths <= hi)).sum()) for lo, hi in [(0, 10), (10, 20), (20, 50), (50, 10**9)]]
    assert [c["mean"] for c, n in zip(rows["add"].cells, counts) if n] == [1.0] * sum(1 for n in counts[:2] if n) + [0.0] * sum(1 for n in counts[2:] if n)
    # a run whose dataset is no longer the one it was trained on: the main table still comes,
    # the breakdown is skipped with the reason
    # a run without stored ranks is left out (no model is run again) and the table says so
    (tmp_path / "add" / "seed-2" / "test_ranks.npy").unlink()
    run_compare(base_config, ["add"], [1, 2], tmp_path, extra=parse_sets(TINY), console=QUIET, report_only=True)
    md = (tmp_path / "by_length.md").read_text()
    assert "Partial table, without these runs. No stored test ranks: add seed 2." in md and "| add | " in md and "| 1 |" in md
    metrics = tmp_path / "add" / "seed-1" / "metrics.json"
    original = metrics.read_text()
    record = json.loads(original)
    record["dataset"]["sha256"] = "0" * 64
    metrics.write_text(json.dumps(record))
    # the main table would pair it with runs on the current data: refused, naming it, in a report
    # and before anything trains
    for report_only in (True, False):
        with pytest.raises(ArtifactError, match=r"add/seed-1 holds a finished run trained on other data \(fingerprint 000000000000"):
            run_compare(base_config, ["add"], [1, 2], tmp_path, extra=parse_sets(TINY), console=QUIET, report_only=report_only)
    # where the data cannot be read (tabulating elsewhere), the runs are still not paired across data
    from awrsr.experiments.compare import check_one_dataset_per_data_config
    from awrsr.run_config import load_fit_config

    resolved = {v: load_fit_config(["--config", base_config]) for v in ("none", "add")}
    records = [{"variant": v, "seed": 1, "metrics": {"dataset": {"sha256": sha}}} for v, sha in (("none", "a" * 64), ("add", "0" * 64))]
    with pytest.raises(ConfigError, match=r"trained on different data .*none seed 1 on aaaaaaaaaaaa; add seed 1 on 000000000000"):
        check_one_dataset_per_data_config(records, resolved)
    # plot refuses it too (its attention figure would be drawn on other data), before writing anything
    with pytest.raises(ArtifactError, match="not the dataset this model was trained on"):
        draw_figures(tmp_path, tmp_path / "after")
    assert not (tmp_path / "after").exists()
    metrics.write_text(original)
    assert "ndcg_by_length.png" in {f.name for f in draw_figures(tmp_path, tmp_path / "after")}


def test_the_table_by_length_reads_the_data_where_the_comparison_finds_it_now(tmp_path, monkeypatch):
    """A comparison tabulated again after its data file moved (``--set data.path=NEW``), or from
    another directory than the one its relative data.path was given in, reuses its runs and keeps
    its table by history length: that table reads the data as the comparison does, then where
    the runs recorded it, and never removes itself for a file the main table found."""
    rng = np.random.default_rng(0)
    rows = [f"{user},{item}" for user in range(60) for item in rng.integers(0, 15, 8)]
    (tmp_path / "data.csv").write_text("user,item\n" + "\n".join(rows) + "\n")
    base = tmp_path / "base.yaml"
    base.write_text("data: {path: data.csv, user_col: user, item_col: item}\ntrain: {monitor: ndcg@5}\n")
    monkeypatch.chdir(tmp_path)
    extra = parse_sets(["model.max_len=10", "model.hidden_size=8", "model.num_blocks=1", "train.max_epochs=1"])
    run_compare(str(base), ["add"], [1], tmp_path / "c", extra=extra, console=QUIET)
    made = (tmp_path / "c" / "by_length.csv").read_text()
    (tmp_path / "moved").mkdir()
    (tmp_path / "data.csv").rename(tmp_path / "moved" / "data.csv")
    run_compare(str(base), ["add"], [1], tmp_path / "c", extra={**extra, "data.path": "moved/data.csv"},
                console=QUIET, report_only=True)
    assert (tmp_path / "c" / "by_length.csv").read_text() == made
    (tmp_path / "moved" / "data.csv").rename(tmp_path / "data.csv")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")  # data.csv is not here: the runs recorded where it was
    run_compare(str(base), ["add"], [1], tmp_path / "c", extra=extra, console=QUIET, report_only=True)
    assert (tmp_path / "c" / "by_length.csv").read_text() == made


def test_by_length_pairs_only_runs_on_the_same_data_and_seeds(base_config, tmp_path):
    extra = parse_sets(TINY)
    variants = {"base": {}, "fewer": {"data.synthetic.num_users": 60}}
    run_compare(base_config, variants, [1], tmp_path / "data", extra=extra, console=QUIET)
    md = (tmp_path / "data" / "by_length.md").read_text()
    assert "| fewer (other data than base) |" in md and "Trained on other data than the base" in md
    assert "%" not in md.split("\n| fewer")[1]  # no improvement across datasets
    # seeds that do not meet: the base has seed 1 only, the variant seed 2 only
    run_compare(base_config, ["add"], [1, 2], tmp_path / "full", extra=extra, console=QUIET)
    for run in ("none/seed-1", "add/seed-2"):
        shutil.copytree(tmp_path / "full" / run, tmp_path / "apart" / run)
    run_compare(base_config, ["add"], [1, 2], tmp_path / "apart", extra=extra, console=QUIET, report_only=True)
    md = (tmp_path / "apart" / "by_length.md").read_text()
    assert "| add (no seed shared with none) |" in md and "Partial table" in md
    assert "%" not in md.split("\n| add")[1].split("\n")[0]  # nothing to pair with
    # buckets of the user's choosing
    run_compare(base_config, ["add"], [1, 2], tmp_path / "full", extra=extra, console=QUIET, report_only=True, length_edges=[20])
    assert {line.split(",")[2] for line in (tmp_path / "full" / "by_length.csv").read_text().splitlines()[1:]} == {"1-20", ">20"}


def test_compare_report_only_tabulates_finished_runs_and_names_the_missing(base_config, tmp_path):
    with pytest.raises(ConfigError, match="no finished run"):
        run_compare(base_config, ["add"], [1, 2], tmp_path, extra=parse_sets(TINY), console=QUIET, report_only=True)
    full = run_compare(base_config, ["add"], [1, 2], tmp_path / "full", extra=parse_sets(TINY), console=QUIET)
    # a partial directory: both seeds of the base, one of the variant
    partial = tmp_path / "partial"
    for run in ("none/seed-1", "none/seed-2", "add/seed-1"):
        shutil.copytree(tmp_path / "full" / run, partial / run)
    stamps = {p: p.stat().st_mtime for p in partial.rglob("metrics.json")}
    table = run_compare(base_config, ["add"], [1, 2], partial, extra=parse_sets(TINY), console=QUIET, report_only=True)
    assert stamps == {p: p.stat().st_mtime for p in partial.rglob("metrics.json")}  # nothing trained
    assert not (partial / "add" / "seed-2").exists()
    assert table["none"]["ndcg@5"] == full["none"]["ndcg@5"]
    add, base_seed1 = table["add"]["ndcg@5"], json.loads((partial / "none/seed-1/metrics.json").read_text())
    assert add.runs == 1 and math.isnan(add.p_value)  # one pair: no test
    # the improvement is paired: against the base's seed 1 only, not the mean of both seeds
    assert add.improvement == pytest.approx(relative_improvement(add.mean, base_seed1["test"]["ndcg@5"]))
    md = (partial / "table.md").read_text()
    assert "Not started: add seed 2." in md and "p=n/a" in md and "Partial table" in md
    # a run with training records but no checkpoint (copied back from another machine) is not "not started"
    (partial / "add" / "seed-2").mkdir(parents=True)
    shutil.copy(tmp_path / "full" / "add" / "seed-2" / "metrics.csv", partial / "add" / "seed-2")
    run_compare(base_config, ["add"], [1, 2], partial, extra=parse_sets(TINY), console=QUIET, report_only=True)
    assert "Interrupted, with no checkpoint here (it starts again): add seed 2." in (partial / "table.md").read_text()
    # a report asking for more than a complete table holds prints its partial table, and leaves
    # the complete one (and its CSVs) as they were
    written = {name: (tmp_path / "full" / name).read_bytes() for name in ("table.md", "table.csv", "runs.csv")}
    out = io.StringIO()
    run_compare(base_config, ["add"], [1, 2, 3], tmp_path / "full", extra=parse_sets(TINY),
                console=Console(file=out, width=200), report_only=True)
    assert "Partial table: 2 run(s) not finished" in out.getvalue() and "printed, not written" in out.getvalue()
    assert written == {name: (tmp_path / "full" / name).read_bytes() for name in written}
    # nor is it replaced by a table of fewer seeds, reported or trained: it holds runs that one leaves out
    for report_only in (True, False):
        out = io.StringIO()
        run_compare(base_config, ["add"], [1], tmp_path / "full", extra=parse_sets(TINY),
                    console=Console(file=out, width=300), report_only=report_only)
        assert "printed, not written: " in out.getvalue()
        assert "holds a complete table (table.md) of runs this one leaves out (none seed 2, add seed 2)" in out.getvalue()
        assert written == {name: (tmp_path / "full" / name).read_bytes() for name in written}


def test_a_run_another_process_trains_is_awaited_not_trained_twice(base_config, tmp_path):
    import threading

    from awrsr.experiments.runs import run_or_reuse
    from awrsr.run_config import load_fit_config
    from awrsr.workflows import fit, run_lock

    run_compare(base_config, ["add"], [1], tmp_path / "done", extra=parse_sets(TINY), console=QUIET)
    done, shared = tmp_path / "done" / "add" / "seed-1", tmp_path / "shared"
    held, compare_waits = threading.Event(), threading.Event()

    class Watched(io.StringIO):  # compare's console: tells the other "process" when compare waits
        def write(self, text):
            if "waiting for its result" in text:
                compare_waits.set()
            return super().write(text)

    def other_process():  # holds the run; finishes it only once compare waits for it
        with run_lock(shared / "add" / "seed-1"):
            held.set()
            assert compare_waits.wait(120)
            shutil.copytree(done, shared / "add" / "seed-1", dirs_exist_ok=True, ignore=shutil.ignore_patterns("metrics.json"))
            shutil.copy(done / "metrics.json", shared / "add" / "seed-1" / "metrics.json")  # the "finished" mark last

    other = threading.Thread(target=other_process)
    other.start()
    assert held.wait(30)
    options = {**parse_sets(TINY), "model.refine": "add", "train.seed": 1}
    assert run_or_reuse(base_config, options, shared / "add" / "seed-1", QUIET, wait=False) is None
    with pytest.raises(ArtifactError, match="another process is training into this directory"):
        fit(**load_fit_config(["--config", base_config, *option_args(options), "--output_dir", str(shared / "add" / "seed-1")]), console=QUIET)
    assert {p.name for p in (shared / "add" / "seed-1").iterdir()} == {".awrsr.lock"}  # nothing trained there
    shutil.copytree(tmp_path / "done" / "none", shared / "none")  # a finished base, for a partial table
    run_compare(base_config, ["add"], [1], shared, extra=parse_sets(TINY), console=QUIET, report_only=True)
    assert "Training now: add seed 1." in (shared / "table.md").read_text()
    shutil.rmtree(shared / "none")
    console = Console(file=Watched(), width=200)
    table = run_compare(base_config, ["add"], [1], shared, extra=parse_sets(TINY), console=console)
    other.join()
    assert "coming back to it last" in console.file.getvalue()
    finished = json.loads((done / "metrics.json").read_text())
    assert table["add"]["ndcg@5"].mean == finished["test"]["ndcg@5"]
    # its result, not a second training (which would give the same metrics on a CPU, but new timings)
    assert (shared / "add" / "seed-1" / "metrics.json").read_bytes() == (done / "metrics.json").read_bytes()
    assert (shared / "none" / "seed-1" / "metrics.json").is_file()


def test_finished_runs_are_reused_across_machine_options_and_moved_data_but_not_changed_data(base_config, tmp_path):
    import polars as pl

    from awrsr.data import DataConfig, SyntheticConfig, load_sequence_data
    from awrsr.experiments.runs import DataFingerprints
    from awrsr.train.config import MACHINE_FIELDS

    events = load_sequence_data(DataConfig(synthetic=SyntheticConfig(num_users=80, num_items=20)))
    frame = pl.DataFrame({"user_id": np.repeat(np.arange(len(events.sequences)), events.sequences.lengths),
                          "item_id": events.sequences.items})
    frame.write_csv(tmp_path / "a.csv")
    base = tmp_path / "base.yaml"
    base.write_text(f"data: {{path: {tmp_path / 'a.csv'}}}\nmodel: {{max_len: 10, hidden_size: 8, num_blocks: 1}}\n"
                    "train: {max_epochs: 1}\n")
    run_compare(str(base), ["add"], [1], tmp_path / "c", console=QUIET)
    stored = {v: (tmp_path / "c" / v / "seed-1" / "metrics.json").read_bytes() for v in ("none", "add")}
    # another machine (every machine option changed), the same data at another path: reused, nothing trains
    (tmp_path / "moved").mkdir()
    shutil.copy(tmp_path / "a.csv", tmp_path / "moved" / "a.csv")
    machine = {"train.num_threads": "1", "train.flush_denormal": "false", "train.accelerator": "cpu", "train.progress_bar": "false"}
    assert {key.split(".")[1] for key in machine} == set(MACHINE_FIELDS)
    run_compare(str(base), ["add"], [1], tmp_path / "c", console=QUIET,
                extra={**machine, "data.path": str(tmp_path / "moved" / "a.csv")})
    assert {v: (tmp_path / "c" / v / "seed-1" / "metrics.json").read_bytes() for v in ("none", "add")} == stored
    # a record without its data's fingerprint is judged by its config alone: a moved path differs
    add_metrics = tmp_path / "c" / "add" / "seed-1" / "metrics.json"
    record = json.loads(stored["add"])
    del record["dataset"]["sha256"]
    add_metrics.write_text(json.dumps(record))
    with pytest.raises(ArtifactError, match=r"add/seed-1 holds a finished run of another configuration \(differs in data.path"):
        run_compare(str(base), ["add"], [1], tmp_path / "c", console=QUIET, extra={"data.path": str(tmp_path / "moved" / "a.csv")})
    add_metrics.write_bytes(stored["add"])
    # other data at the old path: refused before anything trains, also a run listed before the stale one
    frame.head(frame.height - 40).write_csv(tmp_path / "a.csv")
    shutil.rmtree(tmp_path / "c" / "none")
    with pytest.raises(ArtifactError, match=r"add/seed-1 holds a finished run trained on other data"):
        run_compare(str(base), ["add", "simp"], [1], tmp_path / "c", console=QUIET)
    assert not (tmp_path / "c" / "none").exists() and not (tmp_path / "c" / "simp").exists()
    fingerprints = DataFingerprints()
    assert fingerprints(DataConfig(path=str(tmp_path / "a.csv"))) != fingerprints(DataConfig(path=str(tmp_path / "moved" / "a.csv")))
    assert fingerprints(DataConfig(path=str(tmp_path / "nowhere.csv"))) is None  # no data here: judged by config


def test_compare_checks_its_options_before_training(base_config, tmp_path, capsys):
    from awrsr.experiments.compare import variant_options

    with pytest.raises(ConfigError, match=r"base 'plian' is not a variant of the variants file \(add, plain\)"):
        variant_options({"add": {"model.refine": "add"}, "plain": {}}, "model.refine", "plian")
    assert variant_options({"add": {"model.refine": "add"}, "plain": {}}, "model.refine", "plain")[0] == "plain"
    ks = tmp_path / "ks.yaml"
    ks.write_text("evaluation: {ks: [10, 20]}\n")
    with pytest.raises(ConfigError, match=r"evaluation.ks \[10, 20\] lacks \[1, 5\], which the table reports"):
        run_compare(str(ks), ["add"], [1], tmp_path / "c", console=QUIET)
    assert not (tmp_path / "c").exists()
    variants = tmp_path / "v.yaml"
    variants.write_text("plain: {}\nadd: {model.refine: add}\n")
    code, _, err = run_cli(capsys, "compare", base_config, "--variants_file", str(variants), "--variants", "[simp]")
    assert code == 2 and "give it without --variants and --key" in err


def test_compare_named_variants_from_a_file(base_config, tmp_path):
    from awrsr.experiments.compare import load_variants_file

    variants_path = tmp_path / "models.yaml"
    variants_path.write_text(
        "sasrec: {}\n"
        "fparec: {model.attention: positional, model.positional_rank: 2}\n"
        "bert4rec+simp: {model.name: bert4rec, model.refine: simp}\n"
    )
    table = run_compare(base_config, load_variants_file(variants_path), [1, 2], tmp_path / "out", extra=parse_sets(TINY), console=QUIET)
    assert list(table) == ["sasrec", "fparec", "bert4rec+simp"]  # the first entry is the base
    assert math.isnan(table["sasrec"]["ndcg@5"].improvement)
    assert not math.isnan(table["fparec"]["ndcg@5"].improvement)
    stored = (tmp_path / "out" / "bert4rec+simp" / "seed-1" / "config.yaml").read_text()
    assert "bert4rec" in stored and "refine: simp" in stored
    assert "| model |" in (tmp_path / "out" / "table.md").read_text()
    variants_path.write_text("sasrec: {}\nbert-linear: {model.name: bert4rec, model.attention: linear}\n")
    with pytest.raises(ConfigError, match="variant 'bert-linear'"):
        run_compare(base_config, load_variants_file(variants_path), [1], tmp_path / "never", extra=parse_sets(TINY), console=QUIET)
    assert not (tmp_path / "never").exists()  # nothing trained
    variants_path.write_text("- not a mapping\n")
    with pytest.raises(ConfigError, match="models.yaml"):
        load_variants_file(variants_path)
    variants_path.write_text("sasrec: {}\nsasrec: {model.refine: simp}\n")  # a copy-paste left unrenamed
    with pytest.raises(ConfigError, match="models.yaml, line 2: 'sasrec' is given twice"):
        load_variants_file(variants_path)


def test_a_variant_can_be_compared_with_another_than_the_base(base_config, tmp_path):
    variants = {
        "L1": {"model.num_blocks": 1},
        "L2": {"model.num_blocks": 2, "compare_to": "L2"},
        "L2+add": {"model.num_blocks": 2, "model.refine": "add", "compare_to": "L2"},
    }
    extra = {key: value for key, value in parse_sets(TINY).items() if key != "model.num_blocks"}  # every variant sets it
    table = run_compare(base_config, variants, [1, 2], tmp_path, extra=extra, console=QUIET)
    assert math.isnan(table["L1"]["ndcg@5"].improvement) and math.isnan(table["L2"]["ndcg@5"].improvement)
    l2, l2_add = table["L2"]["ndcg@5"].mean, table["L2+add"]["ndcg@5"].mean
    assert table["L2+add"]["ndcg@5"].improvement == pytest.approx(relative_improvement(l2_add, l2))
    assert "L2+add (vs L2)" in (tmp_path / "table.md").read_text()
    assert "compare_to" not in (tmp_path / "L2+add" / "seed-1" / "config.yaml").read_text()
    with pytest.raises(ConfigError, match="compare_to 'L9'"):
        run_compare(base_config, {"L1": {}, "x": {"compare_to": "L9"}}, [1], tmp_path / "bad", console=QUIET)


def test_tune_refuses_a_key_no_trial_reads_before_training(tmp_path):
    """model.refine_init_std with refine none: every value would train the same model again."""
    base = tmp_path / "base.yaml"
    base.write_text("train: {max_epochs: 1}\n")
    for space, message in (
        ({"model.refine_init_std": [0.05, 0.02]}, r"search space model.refine_init_std: no trial reads it \(only a refinement "
                                                  r"built on n x n matrices does\), so its 2 values would train the same models again"),
        ({"model.mask_prob": [0.2, 0.4], "train.lr": [0.1, 0.01]}, r"search space model.mask_prob: no trial reads it \(only model.name 'bert4rec' does\)"),
    ):
        with pytest.raises(ConfigError, match=message):
            run_tune(str(base), space, tmp_path / "t", console=QUIET)
    assert not (tmp_path / "t").exists()
    # read by some trials of the grid (those with a refinement): a grid like any other
    from awrsr.experiments.tune import check_grid_is_read, grid

    space = {"model.refine_init_std": [0.05, 0.02], "model.refine": ["none", "simp"]}
    check_grid_is_read(str(base), space, grid(space), {})


def test_tune_with_a_missing_base_config_fails_at_once(tmp_path):
    with pytest.raises(ConfigError, match="base config not found: .*nope.yaml"):
        run_tune(str(tmp_path / "nope.yaml"), {"train.lr": [0.01, 0.001]}, tmp_path / "t", console=QUIET)
    assert not (tmp_path / "t").exists()


def test_a_run_directory_that_never_finished_is_trained_again(base_config, tmp_path):
    """An unreadable metrics.json without a checkpoint (a write cut short) is not a finished run
    and not one to resume: compare and tune train it afresh instead of refusing the directory."""
    from awrsr.experiments.runs import run_or_reuse

    run_dir = tmp_path / "run"
    first = run_or_reuse(base_config, parse_sets(TINY), run_dir, QUIET)
    shutil.rmtree(run_dir / "checkpoints")
    (run_dir / "metrics.json").write_text("")
    again = run_or_reuse(base_config, parse_sets(TINY), run_dir, QUIET)
    assert again["test"] == first["test"]  # the same seed trains the same run


def test_a_finished_run_with_a_damaged_config_is_a_clear_error(base_config, tmp_path):
    from awrsr.experiments.runs import run_or_reuse

    run_dir = tmp_path / "run"
    run_or_reuse(base_config, parse_sets(TINY), run_dir, QUIET)
    (run_dir / "config.yaml").write_text("model: {max_len: [\n")
    with pytest.raises(ArtifactError, match=r"run/config.yaml, line 2, column 1: not valid YAML: .*; delete that run to train it again"):
        run_or_reuse(base_config, parse_sets(TINY), run_dir, QUIET)
    (run_dir / "config.yaml").write_bytes(b"model: {}\n# \xe9\n")
    with pytest.raises(ArtifactError, match=r"run/config.yaml:2: not valid UTF-8"):
        run_or_reuse(base_config, parse_sets(TINY), run_dir, QUIET)


@pytest.mark.parametrize("record, problem", [
    ([1, 2], "a JSON list, not an object"),
    ({}, "no 'valid' section"),
    ({**RECORD, "test": None}, "no 'test' section"),
    ({**RECORD, "selection": {"monitor": "valid ndcg@5", "best_epoch": 1}}, "no selection.epochs_trained"),
    ({**RECORD, "protocol": {}}, "no protocol.filter_seen"),
    ({**RECORD, "time": {}}, "no time.mean_epoch_s"),
    ({**RECORD, "valid": {"hr@5": 0.1}}, "selection.monitor 'valid ndcg@5' is not among the valid scores"),
    ({**RECORD, "test": {"ndcg@5": "0.1"}}, "test.ndcg@5 is not a number"),
    ({**RECORD, "test": {}}, "no test scores"),
    ({**RECORD, "dataset": "x"}, "its dataset is no mapping with a text sha256"),  # an AttributeError in the reuse check
    ({**RECORD, "dataset": {"sha256": 7}}, "its dataset is no mapping with a text sha256"),
])
def test_a_finished_runs_damaged_record_is_a_clear_error(tmp_path, record, problem):
    # the reports failed on it with a KeyError deep inside, or ({}) blamed the data
    from dataclasses import asdict

    from awrsr.experiments.runs import RESOLVED_SECTIONS, finished_run

    base = tmp_path / "base.yaml"
    base.write_text("train: {max_epochs: 1}\n")
    run_dir = tmp_path / "run"
    resolved = finished_run(str(base), {}, run_dir)[0]
    run_dir.mkdir()
    (run_dir / "config.yaml").write_text(yaml.safe_dump({s: asdict(resolved[s]) for s in RESOLVED_SECTIONS}))
    (run_dir / "metrics.json").write_text(json.dumps(record))
    with pytest.raises(ArtifactError, match=rf"run/metrics.json: not a finished run's record \({re.escape(problem)}\); delete that run"):
        finished_run(str(base), {}, run_dir)


def test_compare_needs_a_variant_besides_the_base():
    from awrsr.experiments.compare import variant_options

    # [none] was dropped as the base itself, and the "comparison" ran the base alone
    with pytest.raises(ConfigError, match=r"variants: none besides the base \(model.refine: none\)"):
        variant_options(["none"], "model.refine", "none")
    # nor may a variants file name the base alone
    with pytest.raises(ConfigError, match=r"the variants file names only 'sasrec'; a comparison needs a base and at least one"):
        variant_options({"sasrec": {}}, "model.refine", "none")
    assert list(variant_options(["none", "simp", "simp"], "model.refine", "none")[1]) == ["none", "simp"]


@pytest.mark.parametrize("space, expected", [
    ({"model.refine": ["none", "smp"]}, r"search space model.refine: 'smp': model.refine: unknown refinement 'smp'"),
    ({"train.loss": ["ce", "bcee"]}, r"search space train.loss: 'bcee': train.loss: unknown loss 'bcee'"),
    ({"train.lr": [0.01, "abc"]}, r"search space train.lr: 'abc': --train.lr expects a number, got 'abc'$"),
    # a field's own range, wrong whatever the other keys of the grid are
    ({"model.dropout": [0.1, 1.5], "train.lr": [0.01]}, r"search space model.dropout: 1.5: model.dropout must be in \[0, 1\), got 1.5"),
    ({"train.lr": [-1]}, r"search space train.lr: -1: train.lr must be > 0"),
    ({"train.max_time": ["1:30"]}, r"search space train.max_time: '1:30': train.max_time must look like DD:HH:MM:SS"),
    # trials ranked on different metrics or protocols would not be comparable
    ({"train.monitor": ["ndcg@10", "hr@20"]}, r"search space train.monitor: trials are ranked against each other"),
    ({"evaluation.filter_seen": [True, False]}, r"search space evaluation.filter_seen: trials are ranked"),
    ({"data.synthetic.min_length": [3, 5]}, r"search space data.synthetic.min_length: .* scored on the same data"),
])
def test_tune_refuses_a_value_wrong_on_its_own_before_training(base_config, tmp_path, space, expected):
    # its trials were skipped one by one, and the search ran without it, exiting 0
    with pytest.raises(ConfigError, match=expected):
        run_tune(base_config, space, tmp_path / "t", extra=parse_sets(TINY), console=QUIET)
    assert not any((tmp_path / "t").glob("trial-*"))  # nothing trained


def test_tune_skips_a_trial_that_diverges(base_config, tmp_path, monkeypatch):
    from awrsr.train.module import SequentialRecommenderModule

    def blown_up(self, batch, batch_idx):
        if self.lr > 0.05:  # the "too high" learning rate of this grid
            raise FloatingPointError("the model produced NaN scores")
        return original(self, batch, batch_idx)

    original = SequentialRecommenderModule.validation_step
    monkeypatch.setattr(SequentialRecommenderModule, "validation_step", blown_up)
    shown = io.StringIO()
    best = run_tune(base_config, {"train.lr": [0.1, 0.01]}, tmp_path, extra=parse_sets(TINY), console=Console(file=shown, width=300))
    assert best["train.lr"] == 0.01
    assert "skipped {'train.lr': 0.1}: training diverged in epoch 1" in shown.getvalue()
    # the report agrees: nothing is left to train, so it writes what the tune wrote
    written = {name: (tmp_path / name).read_text() for name in ("trials.csv", "best.yaml")}
    for name in written:
        (tmp_path / name).unlink()
    shown = io.StringIO()
    assert run_tune(base_config, {"train.lr": [0.1, 0.01]}, tmp_path, extra=parse_sets(TINY),
                    console=Console(file=shown, width=300), report_only=True) == best
    assert {name: (tmp_path / name).read_text() for name in written} == written
    assert f"| trial-{trial_id({'train.lr': 0.01})} | 0.01 |" in shown.getvalue()  # the table, on a finished search too
    # the end says what trials.csv leaves out, and where to read why
    diverged = f"trial-{trial_id({'train.lr': 0.1})}"
    assert (f"1 of 2 trials ran; 1 skipped, not in trials.csv (values that cannot go together, or a training that "
            f"diverged, as said above): {diverged}\n") in shown.getvalue()
    assert "Skipped: training diverged in epoch 1" in shown.getvalue().split("1 of 2 trials ran")[0]  # said above
    # and a later tune does not train the diverged trial again (the same values diverge the same way)
    monkeypatch.setattr(SequentialRecommenderModule, "validation_step", lambda *args: pytest.fail("trained again"))
    shown = io.StringIO()
    assert run_tune(base_config, {"train.lr": [0.1, 0.01]}, tmp_path, extra=parse_sets(TINY), console=Console(file=shown, width=300)) == best
    assert "skipped {'train.lr': 0.1}: training diverged in epoch 1" in shown.getvalue()


def test_a_finished_run_is_reused_only_with_the_same_evaluation_protocol(tmp_path):
    """Evaluation settings are part of a run's configuration: a finished run evaluated without
    seen-item filtering must not stand in for one that filters (its metrics mean something else)."""
    from dataclasses import asdict

    from awrsr.experiments.runs import RESOLVED_SECTIONS, finished_run

    base = tmp_path / "base.yaml"
    base.write_text("train: {max_epochs: 1}\n")
    run_dir = tmp_path / "run"
    resolved, metrics = finished_run(str(base), {"train.seed": 1}, run_dir)
    assert metrics is None  # nothing there yet
    stored = {s: asdict(resolved[s]) for s in RESOLVED_SECTIONS}
    run_dir.mkdir()
    (run_dir / "metrics.json").write_text(json.dumps(RECORD))
    (run_dir / "config.yaml").write_text(yaml.safe_dump(stored))
    assert finished_run(str(base), {"train.seed": 1}, run_dir)[1] == RECORD  # the same config: reused
    stored["evaluation"]["filter_seen"] = False
    (run_dir / "config.yaml").write_text(yaml.safe_dump(stored))
    with pytest.raises(ArtifactError, match=r"another configuration \(differs in evaluation.filter_seen"):
        finished_run(str(base), {"train.seed": 1}, run_dir)


def test_reports_say_how_far_a_run_that_will_go_on_has_come(base_config, tmp_path):
    extra = parse_sets(TINY)
    run_tune(base_config, {"train.lr": [0.01, 0.001]}, tmp_path / "done", extra=extra, console=QUIET)
    first, second = (f"trial-{trial_id({'train.lr': lr})}" for lr in (0.01, 0.001))
    search = tmp_path / "search"
    # the second trial interrupted after its last epoch (checkpoint and log, no results); the first not started
    shutil.copytree(tmp_path / "done" / second, search / second, ignore=shutil.ignore_patterns("metrics.json"))
    selection = json.loads((tmp_path / "done" / second / "metrics.json").read_text())["selection"]
    so_far = re.escape(f"So far: {second} at epoch 2/2, ") + r"\d+\.\d s per epoch lately, " + re.escape(
        f"best valid ndcg@5 {selection['best_value']:.4f} at epoch {selection['best_epoch']}, "
        f"{2 - selection['best_epoch']} of patience 20 without a gain.")
    with pytest.raises(ConfigError) as err:
        run_tune(base_config, {"train.lr": [0.01, 0.001]}, search, extra=extra, console=QUIET, report_only=True)
    assert re.search(re.escape(f"Not started: {first} (train.lr=0.01). ") + so_far + "$", str(err.value)), str(err.value)
    shutil.copytree(tmp_path / "done" / first, search / first)
    shown = io.StringIO()
    run_tune(base_config, {"train.lr": [0.01, 0.001]}, search, extra=extra, console=Console(file=shown, width=80),
             report_only=True)
    assert re.search(re.escape(f"Interrupted (it resumes): {second} (train.lr=0.001). ") + so_far, " ".join(shown.getvalue().split()))
    shutil.rmtree(search / second / "checkpoints")  # it starts again: what it logged does not count
    with pytest.raises(ConfigError) as err:
        run_tune(base_config, {"train.lr": [0.001]}, search, extra=extra, console=QUIET, report_only=True)
    assert "it starts again" in str(err.value) and "So far" not in str(err.value)

    run_compare(base_config, ["add"], [1], tmp_path / "compared", extra=extra, console=QUIET)
    partial = tmp_path / "partial"
    shutil.copytree(tmp_path / "compared" / "none", partial / "none")
    shutil.copytree(tmp_path / "compared" / "add", partial / "add", ignore=shutil.ignore_patterns("metrics.json"))
    shown = io.StringIO()
    run_compare(base_config, ["add"], [1], partial, extra=extra, console=Console(file=shown, width=300), report_only=True)
    assert re.search(r"So far: add seed 1 at epoch 2/2, \d+\.\d s per epoch lately, best valid ndcg@5 \d\.\d{4} at epoch [12], [01] of patience 20 "
                     r"without a gain\.", shown.getvalue()), shown.getvalue()
    assert "So far" not in (partial / "table.md").read_text()  # results files hold results, not a moment's progress


def test_an_unfinished_runs_status(tmp_path):
    from awrsr.experiments.runs import run_status

    run_dir = tmp_path / "run"
    assert run_status(run_dir) == "not started"
    run_dir.mkdir()
    (run_dir / "metrics.csv").write_text("epoch\n")
    assert run_status(run_dir) == "interrupted, with no checkpoint here (it starts again)"
    (run_dir / "checkpoints").mkdir()
    (run_dir / "checkpoints" / "last.ckpt").write_bytes(b"x")
    assert run_status(run_dir) == "interrupted (it resumes)"


def test_unfinished_runs_are_described_by_status_then_variant():
    from awrsr.experiments.runs import describe_runs

    runs = [("none", 43, "not started"), ("none", 44, "not started"), ("add", 42, "training now"),
            ("add", 43, "not started"), ("simp", 42, "interrupted (it resumes)")]
    # statuses and variants in the order first met, runs not started last; a variant's seeds in the order given
    assert describe_runs(runs) == (
        "Training now: add seed 42. Interrupted (it resumes): simp seed 42. Not started: none seeds 43, 44; add seed 43."
    )
    assert describe_runs([]) == ""


def test_compare_accepts_a_variant_that_also_sets_an_option_no_model_reads(tmp_path):
    """Only a variant whose every change is inert is refused: one that changes the refinement and,
    besides, an option SASRec never reads still trains another model."""
    from awrsr.experiments.compare import check_variant, check_variants_differ

    base = tmp_path / "base.yaml"
    base.write_text("train: {max_epochs: 1}\n")
    options = {"plain": {}, "simp": {"model.refine": "simp", "model.mask_prob": 0.5}}
    resolved = {name: check_variant(str(base), variant, name) for name, variant in options.items()}
    check_variants_differ(resolved, {"plain": "plain", "simp": "plain"})


def test_a_runs_lengths_come_from_the_data_it_was_trained_on(tmp_path):
    """by_length reads the run's data again; data other than the fingerprint stored with the run
    is refused (its users' history lengths would not match the stored ranks)."""
    from awrsr.data import DataConfig, SyntheticConfig, load_sequence_data
    from awrsr.experiments.by_length import held_out_history_lengths

    data = DataConfig(synthetic=SyntheticConfig(num_users=40, num_items=10))
    sha = load_sequence_data(data).fingerprint.sha256
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "config.yaml").write_text(yaml.safe_dump({"data": {"synthetic": {"num_users": 40, "num_items": 10}}}))
    (run_dir / "metrics.json").write_text(json.dumps({"dataset": {"sha256": sha}}))
    fingerprint, lengths = held_out_history_lengths(run_dir)
    assert fingerprint == sha and len(lengths) == 40
    (run_dir / "metrics.json").write_text(json.dumps({"dataset": {"sha256": "0" * 64}}))
    with pytest.raises(ArtifactError, match="not the dataset this run was trained on"):
        held_out_history_lengths(run_dir)


def test_a_moved_data_path_is_excused_only_where_the_data_can_be_checked(tmp_path):
    """data.path may differ from a finished run's when the data read now has the run's
    fingerprint; where the data cannot be read here, the path is compared as any option is."""
    from dataclasses import asdict

    from awrsr.experiments.runs import RESOLVED_SECTIONS, DataFingerprints, finished_run

    base = tmp_path / "base.yaml"
    base.write_text(f"data: {{path: {tmp_path / 'a.csv'}}}\ntrain: {{max_epochs: 1}}\n")
    run_dir = tmp_path / "run"
    resolved = finished_run(str(base), {}, run_dir)[0]
    run_dir.mkdir()
    (run_dir / "config.yaml").write_text(yaml.safe_dump({s: asdict(resolved[s]) for s in RESOLVED_SECTIONS}))
    (run_dir / "metrics.json").write_text(json.dumps({**RECORD, "dataset": {"sha256": "a" * 64}}))
    moved = {"data.path": str(tmp_path / "elsewhere" / "a.csv")}  # no file there: no fingerprint now
    with pytest.raises(ArtifactError, match=r"another configuration \(differs in data.path"):
        finished_run(str(base), moved, run_dir, DataFingerprints())


def test_run_options_are_written_as_the_config_reads_them():
    """A variant's options become command-line arguments: null must come back as None (a variants
    file's ``data.path: null`` for synthetic data), not as the path 'None'."""
    from awrsr.run_config import load_fit_config

    args = option_args({"data.path": None, "model.refine_per_head": True, "train.lr": 0.01})
    assert args == ["--data.path", "null", "--model.refine_per_head", "true", "--train.lr", "0.01"]
    resolved = load_fit_config(args)
    assert resolved["data"].path is None and resolved["model"].refine_per_head is True and resolved["train"].lr == 0.01
    assert parse_sets([" train.lr = 0.1 "]) == {"train.lr": "0.1"}
    with pytest.raises(ConfigError, match="key=value"):
        parse_sets(["=0.1"])


def test_tune_still_skips_values_that_fail_only_in_combination(base_config, tmp_path):
    # 3 heads do not divide the hidden size of 8, but a grid may hold a size they do divide
    from awrsr.experiments.tune import check_grid_values

    check_grid_values(base_config, {"model.num_heads": [1, 3]}, parse_sets(TINY))  # no error: judged per trial
    # but data is no value to tune: trials would be ranked on different validation sets, and the
    # easiest would win
    for key, values in (("data.min_item_interactions", [0, 5]), ("data.path", ["a.csv", None])):
        with pytest.raises(ConfigError, match=rf"search space {key}: trials are ranked against each other .* "
                                              "so every trial must be scored on the same data"):
            check_grid_values(base_config, {key: values}, parse_sets(TINY))


def test_compare_finds_a_variants_missing_data_file_before_any_run_trains(base_config, tmp_path):
    from awrsr.errors import DataError

    variants = {"none": {}, "simp": {"model.refine": "simp", "data.path": str(tmp_path / "missing.csv")}}
    with pytest.raises(DataError, match=r"variant 'simp': data file not found: .*missing.csv \(mend the variant's data.path\)$"):
        run_compare(base_config, variants, [1], tmp_path / "c", extra=parse_sets(TINY), console=QUIET)
    # a relative path is looked for in the current directory, which the message names; the base
    # config's path is mended with --set (a run's config.yaml holds the path it was trained from)
    with pytest.raises(DataError, match=r"variant 'none': data file not found: missing.csv \(relative to the current directory .+; give it with --set \[data.path=FILE\]\)$"):
        run_compare(base_config, ["simp"], [1], tmp_path / "c", extra={**parse_sets(TINY), "data.path": "missing.csv"}, console=QUIET)
    assert not (tmp_path / "c" / "none").exists()  # the base did not train first


def test_compare_finds_a_variants_loss_that_does_not_fit_its_model_before_any_run_trains(base_config, tmp_path):
    """The loss is a part too: STOSA's ranks by distance, which SASRec has not. A variant asking
    for it failed only after the base's runs had trained (fit's own check, run per run)."""
    with pytest.raises(ConfigError, match=r"^variant 'stosa': train.loss 'stosa' ranks by Wasserstein distance; "
                                          r"model.name 'sasrec' is not stochastic \(use model.name: stosa with "
                                          r"model.attention: wasserstein, or another train.loss: bce, ce, sampled_softmax\)$"):
        run_compare(base_config, ["stosa"], [1], tmp_path / "c", key="train.loss", base="ce",
                    extra=parse_sets(TINY), console=QUIET)
    assert not (tmp_path / "c" / "ce").exists()  # the base did not train first
    from awrsr.run_config import load_fit_config
    from awrsr.workflows import fit

    args = load_fit_config(["--config", base_config, "--train.loss", "stosa", "--data.path", str(tmp_path / "none.csv")])
    with pytest.raises(ConfigError, match=r"^train.loss 'stosa' ranks by Wasserstein distance"):  # before the data is read
        fit(args["data"], args["model"], args["train"], args["evaluation"], tmp_path / "run", console=QUIET)


def test_tune_and_compare_never_share_a_directory(base_config, tmp_path):
    # trial-* beside a comparison's variants made plot call the comparison a tune, and the reverse
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "runs.csv").write_text("variant,seed\n")
    with pytest.raises(ConfigError, match=r"c holds a comparison \(runs.csv\); give the tune a directory of its own"):
        run_tune(base_config, {"train.lr": [0.01]}, tmp_path / "c", extra=parse_sets(TINY), console=QUIET)
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "trials.csv").write_text("trial\n")
    with pytest.raises(ConfigError, match=r"t holds a tune \(trials.csv\); give the comparison a directory of its own"):
        run_compare(base_config, ["simp"], [1], tmp_path / "t", extra=parse_sets(TINY), console=QUIET, report_only=True)
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["c", "runs.csv", "t", "trials.csv"]  # nothing trained


@pytest.mark.parametrize("kind", ["tune", "comparison"])
def test_tune_and_compare_refuse_a_run_other_runs_or_the_users_files(base_config, tmp_path, kind):
    # a tune into a finished run's directory made it a tune (plot drew trials, fit refused it),
    # and the user's own table.md or best.yaml was replaced without a word
    def start(directory):
        if kind == "tune":
            run_tune(base_config, {"train.lr": [0.01]}, directory, extra=parse_sets(TINY), console=QUIET, report_only=True)
        else:
            run_compare(base_config, ["simp"], [1], directory, extra=parse_sets(TINY), console=QUIET, report_only=True)

    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "metrics.json").write_text("{}")
    (tmp_path / "run" / "config.yaml").write_text("model: {}\n")
    with pytest.raises(ConfigError, match=rf"run holds a run \(metrics.json, config.yaml\); give the {kind} a directory of its own"):
        start(tmp_path / "run")
    (tmp_path / "runs" / "sasrec").mkdir(parents=True)  # fit's runs side by side
    (tmp_path / "runs" / "sasrec" / "config.yaml").write_text("model: {}\n")
    with pytest.raises(ConfigError, match=rf"runs holds runs that are not a {kind}'s \(e.g. .*sasrec\)"):
        start(tmp_path / "runs")
    mine = "best.yaml" if kind == "tune" else "table.md"
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / mine).write_text("my own\n")
    with pytest.raises(ConfigError, match=rf"mine holds {mine} but none of a {kind}'s runs: files that awrsr did not write"):
        start(tmp_path / "mine")
    assert (tmp_path / "mine" / mine).read_text() == "my own\n"
    # beside its own runs, its tables are its own: written again
    own_run = tmp_path / "own" / ("trial-x" if kind == "tune" else "simp/seed-1")
    own_run.mkdir(parents=True)
    (own_run / "config.yaml").write_text("model: {}\n")
    (tmp_path / "own" / mine).write_text("an earlier table\n")
    check_collection_directory(tmp_path / "own", kind)


def test_compare_with_another_key_asks_for_the_base_by_name(base_config, tmp_path):
    # the base defaults to "none", model.refine's; --key train.lr without --base named a variant never given
    with pytest.raises(ConfigError, match=r"variant 'none': .* \(the base's value of train.lr: give it with --base\)"):
        run_compare(base_config, ["0.01"], [1], tmp_path / "c", key="train.lr", extra=parse_sets(TINY), console=QUIET)
