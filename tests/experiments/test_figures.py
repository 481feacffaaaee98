"""awrsr plot (and evaluate, which shares its data loading): every bad input is one clear message,
checked before anything is written."""

import json
import shutil

import numpy as np
import polars as pl
import pytest
import torch
import yaml
from conftest import build_tiny, run_cli, tiny_run_config
from matplotlib.colors import to_hex
from rich.console import Console

from awrsr.data import SyntheticConfig, make_synthetic_interactions
from awrsr.errors import ArtifactError, ConfigError
from awrsr.experiments.figures import attention_case, attention_panels, draw_figures
from awrsr.workflows import fit

FRAME_MESSAGE = "this run was trained from a data frame; pass --data_path (or, from Python, evaluate(..., frame=...))"


def interactions(num_users: int) -> pl.DataFrame:
    syn = SyntheticConfig(num_users=num_users, num_items=30, min_length=8, max_length=16)
    return make_synthetic_interactions(syn).select(pl.col("user").alias("user_id"), pl.col("item").alias("item_id"))


@pytest.fixture(autouse=True)
def close_captured_figures():
    """captured_figures keeps figures open for inspection; close them after each test (pyplot warns
    once more than 20 are open)."""
    import matplotlib.pyplot as plt

    close = plt.close  # pyplot's own, taken before a test replaces it
    yield
    close("all")


def captured_figures(monkeypatch):
    """The figures figures.py closes, kept for inspection."""
    from awrsr.experiments import figures

    drawn = []
    monkeypatch.setattr(figures.plt, "close", drawn.append)
    return drawn


@pytest.fixture(scope="module")
def frame_run(tmp_path_factory):
    """A one-epoch run trained from a data frame, and that frame also written as a CSV file."""
    from awrsr.workflows import fit

    root = tmp_path_factory.mktemp("frame")
    frame = interactions(120)
    frame.write_csv(root / "data.csv")
    config = tiny_run_config(root / "run", max_epochs=1)
    config["data"].synthetic = SyntheticConfig(num_users=40, num_items=10)  # what a path-less reload would use
    fit(**config, frame=frame, console=Console(quiet=True))
    return root / "run", root / "data.csv", frame


def test_plot_user_out_of_range_names_the_option_and_writes_nothing(trained_run, tmp_path, capsys):
    for user in ("5000", "-1"):
        code, _, err = run_cli(capsys, "plot", str(trained_run.run_dir), "--user", user, "--output_dir", str(tmp_path / "f"))
        assert code == 2 and f"--user {user} is out of range" in err and "0-based index" in err, err
        assert "not an original user id" in err and "0..299" in err  # 300 synthetic users, all evaluated
    assert not (tmp_path / "f").exists()
    case = attention_case(trained_run.run_dir, user=299)
    assert case.title.startswith("test user 299 (user id 300)")  # synthetic user ids are 1..300


def test_plot_picks_a_user_by_original_id(trained_run, tmp_path, capsys):
    case = attention_case(trained_run.run_dir, user_id="300")
    assert case.title.startswith("test user 299 (user id 300)")  # the same user as index 299
    assert torch.equal(case.inputs, attention_case(trained_run.run_dir, user=299).inputs)
    for args, message in [
        (["--user_id", "301"], "--user_id '301': no such user in the run's data (its user ids read like 1, 2, 3)"),
        (["--user_id", "abc"], "--user_id 'abc': no such user"),
        (["--user", "3", "--user_id", "4"], "give --user (a test-user index) or --user_id"),
    ]:
        code, _, err = run_cli(capsys, "plot", str(trained_run.run_dir), *args, "--output_dir", str(tmp_path / "f"))
        assert code == 2 and message in " ".join(err.split()), err
    assert not (tmp_path / "f").exists()
    code, out, err = run_cli(capsys, "plot", str(trained_run.run_dir), "--user_id", "7", "--output_dir", str(tmp_path / "g"))
    assert code == 0 and (tmp_path / "g" / f"attention_{trained_run.run_dir.name}.png").is_file(), err


def test_pick_user_id_names_a_user_without_a_test_case():
    from awrsr.experiments.figures import _pick_user_id

    user_ids = ["u1", "007", 42]  # user index -> original id; text and integers alike
    test_users = np.array([0, 2])  # user 1 ("007") has fewer than 3 interactions
    assert _pick_user_id(user_ids, test_users, "42") == 1 and _pick_user_id(user_ids, test_users, " u1 ") == 0
    with pytest.raises(ConfigError, match="'007' has fewer than the 3 interactions"):
        _pick_user_id(user_ids, test_users, "007")
    with pytest.raises(ConfigError, match="'7': no such user"):  # ids are matched as written, not as numbers
        _pick_user_id(user_ids, test_users, "7")


def test_a_user_id_the_k_core_removed_is_named_as_possibly_removed(trained_run, tmp_path):
    from awrsr.data import DataConfig

    rows = [(u, 1 + (u * 7 + k) % 12) for u in range(1, 41) for k in range(6)] + [(99, 1), (99, 2), (99, 3)]
    data = tmp_path / "data.csv"
    data.write_text("user_id,item_id\n" + "".join(f"{u},{i}\n" for u, i in rows))
    config = tiny_run_config(tmp_path / "run", max_epochs=1)
    config["data"] = DataConfig(path=str(data), min_user_interactions=5)  # user 99 has 3: removed
    fit(**config, console=Console(quiet=True))
    with pytest.raises(ConfigError, match=r"'99': no such user in the run's data \(.*\); the data's k-core filter "
                                          r"\(5-core users.*\) removed 1 user\(s\), which may include this one"):
        attention_case(tmp_path / "run", user_id="99")
    with pytest.raises(ConfigError, match=r"'301': no such user") as caught:  # no k-core removal, no note
        attention_case(trained_run.run_dir, user_id="301")
    assert "k-core" not in str(caught.value)


def test_plot_on_a_missing_directory_creates_nothing(tmp_path, capsys):
    code, _, err = run_cli(capsys, "plot", str(tmp_path / "nope"))
    assert code == 2 and "run directory not found" in err and "nope" in err
    assert not (tmp_path / "nope").exists()


def test_plot_names_a_damaged_file_and_a_file_given_as_directory(trained_run, tmp_path, capsys):
    run_dir = tmp_path / "run"
    shutil.copytree(trained_run.run_dir, run_dir)
    (run_dir / "history.csv").write_text("")
    code, _, err = run_cli(capsys, "plot", str(run_dir), "--output_dir", str(tmp_path / "f"))
    assert code == 2 and "history.csv: cannot read it as the CSV awrsr writes" in " ".join(err.split()), err
    (run_dir / "history.csv").write_text("a,b\n1,2\n")
    code, _, err = run_cli(capsys, "plot", str(run_dir), "--output_dir", str(tmp_path / "f"))
    assert code == 2 and "no column 'epoch'" in err, err
    (run_dir / "test_ranks.npy").write_text("garbage")
    from awrsr.experiments.by_length import held_out_ranks

    with pytest.raises(ArtifactError, match="not a .npy array written by awrsr") as caught:
        held_out_ranks(run_dir)
    assert "pickle" not in str(caught.value)  # numpy's advice to unpickle is never passed on
    code, _, err = run_cli(capsys, "plot", str(run_dir / "metrics.json"))
    assert code == 2 and "is a file, not a run or compare directory" in err, err
    code, _, err = run_cli(capsys, "evaluate", str(run_dir / "metrics.json"))
    assert code == 2 and "is a file, not a run directory" in err, err


def fit_on_relative_path(work, monkeypatch) -> dict:
    """A one-epoch run in work/run, trained from work with data.path "d.csv" (relative); its metrics."""
    from awrsr.data import DataConfig
    from awrsr.workflows import fit

    work.mkdir()
    interactions(60).write_csv(work / "d.csv")
    monkeypatch.chdir(work)
    config = tiny_run_config(work / "run", max_epochs=1)
    config["data"] = DataConfig(path="d.csv", min_user_interactions=0, min_item_interactions=0)
    return fit(**config, console=Console(quiet=True)).metrics


def test_evaluate_finds_relative_data_from_elsewhere_and_names_its_option_when_it_is_gone(tmp_path, monkeypatch, capsys):
    work = tmp_path / "work"
    fit_on_relative_path(work, monkeypatch)
    monkeypatch.chdir(tmp_path)  # the relative path no longer leads to the data...
    code, out, err = run_cli(capsys, "evaluate", str(work / "run"))
    assert code == 0 and "NDCG@10" in out, err  # ...but the absolute path recorded at training does
    interactions(40).write_csv(tmp_path / "d.csv")  # and other data under the same relative name
    code, out, err = run_cli(capsys, "evaluate", str(work / "run"))
    assert code == 0 and "NDCG@10" in out, err
    (tmp_path / "d.csv").unlink()
    (work / "d.csv").rename(work / "moved.csv")
    code, _, err = run_cli(capsys, "evaluate", str(work / "run"))
    message = " ".join(err.split())
    assert code == 2 and "its training data d.csv is not there" in message and "--data_path" in message, err
    assert f"nor at {(work / 'd.csv').resolve()}, where fit read it" in message
    config = __import__("yaml").safe_load((work / "run" / "config.yaml").read_text())
    config["data"]["path"] = str(work / "d.csv")  # an absolute path that is gone says the same
    (work / "run" / "config.yaml").write_text(__import__("yaml").safe_dump(config))
    code, _, err = run_cli(capsys, "evaluate", str(work / "run"))
    assert code == 2 and "is not there; if the data moved" in " ".join(err.split()), err
    code, out, _ = run_cli(capsys, "evaluate", str(work / "run"), "--data_path", str(work / "moved.csv"))
    assert code == 0 and "NDCG@10" in out


def test_a_recorded_absolute_path_to_other_data_is_refused(tmp_path, monkeypatch):
    """The fallback to the recorded absolute path keeps the fingerprint check."""
    from awrsr.errors import ArtifactError
    from awrsr.workflows import evaluate

    work = tmp_path / "work"
    metrics = fit_on_relative_path(work, monkeypatch)
    assert metrics["dataset"]["resolved_path"] == str((work / "d.csv").resolve())
    interactions(40).write_csv(work / "d.csv")  # other data where the training file was
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ArtifactError, match="fingerprint"):
        evaluate(work / "run", console=Console(quiet=True))


def test_frame_run_needs_its_data_for_evaluate_and_plot(frame_run, tmp_path, capsys):
    run_dir, csv, frame = frame_run
    code, _, err = run_cli(capsys, "evaluate", str(run_dir))
    assert code == 2 and FRAME_MESSAGE in " ".join(err.split()), err
    code, _, err = run_cli(capsys, "plot", str(run_dir), "--output_dir", str(tmp_path / "none"))
    assert code == 2 and FRAME_MESSAGE in " ".join(err.split()), err
    assert "plot --figures [curves] draws the learning curves without it" in " ".join(err.split()), err
    assert not (tmp_path / "none").exists()
    # the learning curves alone need no data; attention and NDCG@N, asked for alone, need it still
    code, out, err = run_cli(capsys, "plot", str(run_dir), "--figures", "[curves]", "--output_dir", str(tmp_path / "curves"))
    assert code == 0, err
    assert sorted(p.name for p in (tmp_path / "curves").iterdir()) == ["grad_norm.png", "valid_ndcg5.png"]
    code, _, err = run_cli(capsys, "plot", str(run_dir), "--figures", "[attention]", "--output_dir", str(tmp_path / "att"))
    assert code == 2 and FRAME_MESSAGE in " ".join(err.split()) and not (tmp_path / "att").exists(), err
    # other data is refused by fingerprint, as evaluate refuses it
    other = tmp_path / "other.csv"
    interactions(100).write_csv(other)
    code, _, err = run_cli(capsys, "plot", str(run_dir), "--data_path", str(other), "--output_dir", str(tmp_path / "o"))
    assert code == 2 and "not the dataset this model was trained on" in err and not (tmp_path / "o").exists()
    # the same data, from its file or (Python) the frame itself
    code, out, _ = run_cli(capsys, "plot", str(run_dir), "--data_path", str(csv), "--output_dir", str(tmp_path / "ok"))
    assert code == 0 and (tmp_path / "ok" / "attention_run.png").is_file()
    code, out, _ = run_cli(capsys, "evaluate", str(run_dir), "--data_path", str(csv))
    assert code == 0 and "NDCG@10" in out
    from awrsr.workflows import evaluate

    stored = json.loads((run_dir / "metrics.json").read_text())["test"]["ndcg@10"]
    assert evaluate(run_dir, frame=frame, console=Console(quiet=True))["ndcg@10"] == pytest.approx(stored)
    # the same rows in another order (a query without ORDER BY) number the items otherwise: said so
    shuffled = frame.sample(fraction=1.0, shuffle=True, seed=1)
    with pytest.raises(ArtifactError, match="it holds the model's items, but its rows come in another order than at training"):
        evaluate(run_dir, frame=shuffled, console=Console(quiet=True))
    with pytest.raises(ArtifactError, match="fingerprint") as other_rows:  # other items: no such hint
        evaluate(run_dir, frame=frame.head(frame.height - 40), console=Console(quiet=True))
    assert "another order" not in str(other_rows.value)
    # kept as its three loadable files, it still says it needs its data (the weights say it was a frame)
    kept = tmp_path / "kept"
    kept.mkdir()
    for name in ("config.yaml", "vocab.json", "model.safetensors"):
        shutil.copy(run_dir / name, kept / name)
    code, _, err = run_cli(capsys, "evaluate", str(kept))
    assert code == 2 and FRAME_MESSAGE in " ".join(err.split()), err
    assert evaluate(kept, frame=frame, console=Console(quiet=True))["ndcg@10"] == pytest.approx(stored)


@pytest.mark.parametrize("legend", [False, True])
def test_a_saved_figure_keeps_its_title(tmp_path, legend):
    # The title names the user and seed of an attention figure: the tight crop must hold it.
    from PIL import Image

    from awrsr.experiments import figures
    from awrsr.experiments.figures import _save

    sizes = []
    for title in ("", "test user 3 (user id u7), last 15 positions"):
        fig, ax = figures.plt.subplots()
        ax.plot([0, 1], [0, 1], label="a")
        if legend:
            ax.legend()
        fig.suptitle(title)
        _save(fig, tmp_path / "f.png")
        figures.plt.close(fig)
        sizes.append(Image.open(tmp_path / "f.png").size[1])
    assert sizes[1] > sizes[0] + 10  # the title adds its line


def test_attention_without_refinement_is_drawn_as_a_alone(trained_run):
    case = attention_case(trained_run.run_dir)
    _, weights = case.model.encode(case.inputs, need_weights=True)
    rows = attention_panels(weights)
    assert [len(row) for row in rows] == [1, 1] and rows[0][0][0] == "layer 1: A (no refinement)"
    inputs = torch.tensor([[0, 0, 3, 4, 5, 6, 7, 8]])
    refined = build_tiny("sasrec", "dot", "simp").eval()
    rows = attention_panels(refined.encode(inputs, need_weights=True)[1])
    assert [name for row in rows for name, _ in row][1] == "layer 1: B (refined)"
    partly = build_tiny("sasrec", "dot", "simp", refine_blocks=[0]).eval()
    rows = attention_panels(partly.encode(inputs, need_weights=True)[1])
    assert [name for name, _ in rows[1]] == ["layer 2: A (base)", "layer 2: B = A (block not refined)"]


@pytest.mark.parametrize(("refine", "b_name"), [("none", "B (calibrated)"), ("simp", "B (calibrated, then refined)")])
def test_calibrated_attention_is_titled_by_its_calibration(refine, b_name):
    # Under refine: none, AC-TSR's B is A_comb: titling it "refined" would credit a refinement.
    inputs = torch.tensor([[0, 0, 3, 4, 5, 6, 7, 8]])
    model = build_tiny("sasrec", "calibrated", refine).eval()
    rows = attention_panels(model.encode(inputs, need_weights=True)[1])
    assert [name for name, _ in rows[0]] == ["layer 1: A (base)", f"layer 1: {b_name}"]
    lite = build_tiny("sasrec", "calibrated", "none", ac_lite=True).eval()  # serves as plain attention
    assert [name for row in attention_panels(lite.encode(inputs, need_weights=True)[1]) for name, _ in row] == [
        "layer 1: A (no refinement)", "layer 2: A (no refinement)"
    ]


def copy_run(trained_run, target):
    shutil.copytree(trained_run.run_dir, target, ignore=shutil.ignore_patterns("checkpoints", "figures"))
    return target


def test_compare_and_tune_directories_name_runs_to_pick(trained_run, tmp_path, capsys):
    compare = tmp_path / "compare"
    for variant in ("none", "add"):
        copy_run(trained_run, compare / variant / "seed-1")
    (compare / "runs.csv").write_text("variant,seed,run_dir\n")
    code, _, err = run_cli(capsys, "evaluate", str(compare))
    assert code == 2 and "comparison output directory" in err and "add/seed-1" in err and "none/seed-1" in err, err
    tune = tmp_path / "tune"
    copy_run(trained_run, tune / "trial-0123abcd")
    (tune / "trials.csv").write_text("trial\n")
    for command in (["evaluate"], ["plot", "--user", "0"], ["serve"], ["recommend", "--history", "1"]):
        code, _, err = run_cli(capsys, command[0], str(tune), *command[1:])
        assert code == 2 and "tune" in err and "trial-0123abcd" in err, (command, err)
    # a folder that merely holds runs two levels down (runs/<name>/) is no comparison
    project = tmp_path / "project"
    copy_run(trained_run, project / "runs" / "sasrec")
    code, _, err = run_cli(capsys, "evaluate", str(project))
    assert code == 2 and "a directory of runs, not a single run" in err and "runs/sasrec" in err, err
    # nor is a comparison without its runs.csv mistaken for one
    (compare / "runs.csv").unlink()
    code, _, err = run_cli(capsys, "evaluate", str(compare))
    assert code == 2 and "comparison output directory" in err, err
    assert not (tune / "figures").exists()
    # a compare directory is what plot draws side by side
    names = {f.name for f in draw_figures(compare, tmp_path / "figs")}
    assert {"attention_none.png", "attention_add.png", "ndcg_at_n.png"} <= names
    with pytest.raises(ArtifactError, match="not found"):
        from awrsr.infer import load_artifact

        load_artifact(tmp_path / "missing")


def test_ndcg_at_n_by_hand():
    from awrsr.experiments.figures import ndcg_at_n

    # ranks 1, 2, 30: NDCG@1 = 1/3; NDCG@2..20 = (1 + 1/log2(3)) / 3; rank 30 never counts
    curve = ndcg_at_n([1, 2, 30], max_n=20)
    assert curve.shape == (20,)
    assert curve[0] == pytest.approx(1 / 3)
    assert curve[1:] == pytest.approx([(1 + 1 / np.log2(3)) / 3] * 19)


def test_a_curve_of_one_epoch_is_drawn_as_a_point(tmp_path, monkeypatch):
    """A one-epoch run's curve is a single point: without a marker it drew nothing visible."""
    from awrsr.experiments import figures

    runs = {}
    for variant, epochs in (("short", [1]), ("long", [1, 2, 3])):
        run = tmp_path / variant / "seed-1"
        run.mkdir(parents=True)
        pl.DataFrame({"epoch": epochs, "val/ndcg@5": [0.1 * e for e in epochs]}).write_csv(run / "history.csv")
        runs[variant] = [run]
    drawn = captured_figures(monkeypatch)
    figures.plot_curves(runs, "val/ndcg@5", "validation NDCG@5", tmp_path / "curves.png")
    short, long = drawn[0].axes[0].get_lines()
    assert short.get_marker() == "o" and len(short.get_xdata()) == 1
    assert long.get_marker() in (None, "None", "")  # several epochs stay lines


def test_compare_figures_draw_every_finished_seed(tmp_path, monkeypatch):
    """A comparison's curves have one line per seed and its NDCG@N the mean over seeds, and each
    figure says how many seeds it shows (an unfinished seed is left out)."""
    from awrsr.experiments import figures

    rng = np.random.default_rng(0)
    ranks = {}
    for variant, seeds in (("none", ["seed-2", "seed-10", "seed-3"]), ("simp", ["seed-2"])):
        for seed in seeds:
            run = tmp_path / variant / seed
            run.mkdir(parents=True)
            (run / "metrics.json").write_text("{}")
            pl.DataFrame({"epoch": [1, 2, 3], "val/ndcg@5": rng.random(3)}).write_csv(run / "history.csv")
            ranks[run] = rng.integers(1, 40, size=50)
    (tmp_path / "none" / "seed-4").mkdir()  # still training: no metrics.json
    runs = figures._runs_to_draw(tmp_path, tmp_path / "figures")
    assert {k: [p.name for p in v] for k, v in runs.items()} == {"none": ["seed-2", "seed-3", "seed-10"], "simp": ["seed-2"]}

    drawn = captured_figures(monkeypatch)
    monkeypatch.setattr(figures, "_test_ranks", lambda run_dir, data_path: ranks[run_dir])
    figures.plot_curves(runs, "val/ndcg@5", "validation NDCG@5", tmp_path / "curves.png")
    figures.plot_ndcg_at_n(runs, tmp_path / "ndcg.png")
    curves, ndcg = (fig.axes[0] for fig in drawn)
    assert len(curves.get_lines()) == 4
    # the variants have different numbers of seeds: each label counts its own
    assert [t.get_text() for t in curves.get_legend().get_texts()] == ["none (3 seeds)", "simp (1 seed)"]
    assert curves.get_legend().get_title().get_text() == "one line per seed"
    assert [t.get_text() for t in ndcg.get_legend().get_texts()] == ["none (3 seeds)", "simp (1 seed)"]
    assert ndcg.get_legend().get_title().get_text() == "mean over seeds"
    assert ndcg.get_title() == "band: lowest to highest seed"
    mean = np.mean([figures.ndcg_at_n(ranks[p]) for p in runs["none"]], axis=0)
    np.testing.assert_allclose(ndcg.get_lines()[0].get_ydata(), mean)


def test_plot_never_averages_runs_that_are_not_seeds(tmp_path):
    """A folder holding runs two levels down that are not a comparison's seed-N (runs/<name>/)
    is refused, as evaluate refuses it: two models must not be drawn as one model's seeds."""
    from awrsr.experiments import figures

    for name in ("sasrec-base", "sasrec-simp"):
        run = tmp_path / "runs" / name
        run.mkdir(parents=True)
        (run / "config.yaml").write_text("model: {}\n")
        (run / "metrics.json").write_text("{}")
    with pytest.raises(ArtifactError, match="a directory of runs, not a single run"):
        figures.draw_figures(tmp_path)
    assert not (tmp_path / "figures").exists()


def test_a_comparison_draws_the_runs_its_table_holds_and_no_others(tmp_path):
    from awrsr.experiments.figures import _runs_to_draw

    # simp: a stale folder; 1e-05: a name a CSV reader would take for a number
    for variant, seed in [("none", 1), ("none", 2), ("add", 1), ("add", 2), ("simp", 1), ("1e-05", 1)]:
        run = tmp_path / variant / f"seed-{seed}"
        run.mkdir(parents=True)
        (run / "config.yaml").write_text("model: {}\n")
        (run / "metrics.json").write_text("{}")
    (tmp_path / "runs.csv").write_text("variant,seed\nnone,1\nadd,1\n1e-05,1\n")  # a table over --seeds [1]
    assert _runs_to_draw(tmp_path, tmp_path / "figures") == {
        "none": [tmp_path / "none" / "seed-1"], "add": [tmp_path / "add" / "seed-1"], "1e-05": [tmp_path / "1e-05" / "seed-1"]}
    (tmp_path / "runs.csv").unlink()  # without a table: every finished seed
    assert {k: [p.name for p in v] for k, v in _runs_to_draw(tmp_path, tmp_path / "figures").items()} == {
        "1e-05": ["seed-1"], "add": ["seed-1", "seed-2"], "none": ["seed-1", "seed-2"], "simp": ["seed-1"]}


def test_attention_heatmap_shows_the_users_last_positions(monkeypatch, tmp_path):
    from awrsr.experiments.figures import AttentionCase, plot_attention

    model = build_tiny("sasrec", "dot", "none", num_blocks=1).eval()
    inputs = torch.tensor([[0, 0, 0, 3, 4, 5, 6, 7]])  # 5 items after 3 padding slots
    drawn = captured_figures(monkeypatch)
    plot_attention(AttentionCase(model, inputs, 4, "t"), tmp_path / "a.png")
    with torch.no_grad():
        weights = model.encode(inputs, need_weights=True)[1][0].base[0, 0]
    shown = np.ma.filled(drawn[0].axes[0].images[0].get_array(), np.nan)
    assert shown.shape == (4, 4)
    expected = weights[-4:, -4:].numpy()
    # the last 4 items, no padding; a masked (later) key is no weight: blank (grey), not dark as a small one
    np.testing.assert_allclose(shown, np.where(expected == 0, np.nan, expected))
    assert np.isnan(shown[np.triu_indices(4, 1)]).all() and not np.isnan(shown[np.tril_indices(4)]).any()


def test_attention_panels_share_one_colour_scale_and_name_the_head(monkeypatch, tmp_path):
    """A and B on their own scales made one colour two weights: B's brightest looked like A's."""
    from awrsr.experiments.figures import AttentionCase, plot_attention

    model = build_tiny("sasrec", "dot", "simp", parameters="random", num_blocks=2, num_heads=2).eval()
    inputs = torch.tensor([[0, 0, 0, 3, 4, 5, 6, 7]])
    drawn = captured_figures(monkeypatch)
    # the last 4 of 5 items: the first item's row (its own weight 1) is left out, so panels' tops differ
    plot_attention(AttentionCase(model, inputs, 4, "test user 0"), tmp_path / "a.png")
    images = [ax.images[0] for ax in drawn[0].axes if ax.images]
    with torch.no_grad():
        weights = model.encode(inputs, need_weights=True)[1]
    tops = [float(m[0, 0, -4:, -4:].max()) for w in weights for m in (w.base, w.refined)]
    assert len(set(tops)) > 1  # else one scale could not be told from one per panel
    assert len(images) == 4 and [image.get_clim() for image in images] == [(0, pytest.approx(max(tops)))] * 4
    assert drawn[0]._suptitle.get_text() == "test user 0; head 1 of 2"


def test_attention_case_holds_the_chosen_users_history(trained_run):
    from awrsr.data import leave_one_out
    from awrsr.infer import load_artifact
    from awrsr.workflows import load_run_data

    artifact = load_artifact(trained_run.run_dir)
    test = leave_one_out(load_run_data(artifact)).test
    lengths = test.history.lengths
    short = int(np.flatnonzero(lengths < 15)[0])  # a user with fewer items than the 15 drawn
    for user in (short, 299):
        case = attention_case(trained_run.run_dir, user=user)
        expected = test.history.select(np.array([user])).to_padded(artifact.model_config.max_len)
        assert torch.equal(case.inputs, torch.from_numpy(expected))
        k = min(15, int(lengths[user]))
        assert case.positions == k and case.title.endswith(f"last {k} positions")


def test_the_default_user_is_the_first_with_enough_items():
    from awrsr.experiments.figures import _pick_user

    assert _pick_user(np.array([3, 15, 20]), None, 15) == 1  # 15 items are enough for the last 15
    assert _pick_user(np.array([3, 9, 4]), None, 15) == 1  # none has 15: the longest
    assert _pick_user(np.array([3, 9, 4]), 2, 15) == 2
    for user in (3, -1):
        with pytest.raises(ConfigError, match=f"--user {user} is out of range"):
            _pick_user(np.array([3, 9, 4]), user, 15)


def test_ndcg_band_spans_the_lowest_to_the_highest_seed(tmp_path, monkeypatch):
    from awrsr.experiments import figures

    ranks = {tmp_path / "a": np.array([1, 1]), tmp_path / "b": np.array([2, 2]), tmp_path / "c": np.array([30, 30])}
    monkeypatch.setattr(figures, "_test_ranks", lambda run_dir, data_path: ranks[run_dir])
    drawn = captured_figures(monkeypatch)
    figures.plot_ndcg_at_n({"x": list(ranks)}, tmp_path / "n.png", max_n=3)
    ax = drawn[0].axes[0]
    np.testing.assert_allclose(ax.get_lines()[0].get_ydata(), [1 / 3, (1 + 1 / np.log2(3)) / 3, (1 + 1 / np.log2(3)) / 3])
    band = ax.collections[0].get_paths()[0].vertices
    # seed c never hits (0), seed a always does (1)
    assert band[:, 1].min() == pytest.approx(0.0) and band[:, 1].max() == pytest.approx(1.0)


def test_curves_draw_the_logged_series_per_epoch(tmp_path, monkeypatch):
    from awrsr.experiments import figures

    for seed, values in ((1, [0.3, 0.1, 0.2]), (2, [0.5, 0.4, 0.6])):
        run = tmp_path / "c" / "none" / f"seed-{seed}"
        run.mkdir(parents=True)
        (run / "metrics.json").write_text("{}")  # records only: no model, no test ranks
        pl.DataFrame({"epoch": [1, 2, 3], "val/ndcg@5": values, "val/ndcg@10": [0.9] * 3,
                      "train/grad_norm": [7.0, 8.0, 9.0 * seed], "train/loss": [2.0] * 3}).write_csv(run / "history.csv")
    drawn = captured_figures(monkeypatch)
    files = figures.draw_figures(tmp_path / "c")
    assert [f.name for f in files] == ["valid_ndcg5.png", "grad_norm.png"]
    valid, grad = (fig.axes[0] for fig in drawn)
    assert [list(line.get_xdata()) for line in valid.get_lines()] == [[1, 2, 3], [1, 2, 3]]
    assert [list(line.get_ydata()) for line in valid.get_lines()] == [[0.3, 0.1, 0.2], [0.5, 0.4, 0.6]]
    assert [list(line.get_ydata()) for line in grad.get_lines()] == [[7.0, 8.0, 9.0], [7.0, 8.0, 18.0]]


def test_curves_give_every_finished_seed_one_weight_put_runs_so_far_on_top_and_wide_norms_on_a_log_scale(tmp_path, monkeypatch):
    """A variant of one seed was drawn bolder than those of three (it read as the highlighted
    result); a seed still training lay hidden under its variant's finished lines; one variant's
    large gradient norms flattened every other into a line."""
    from awrsr.experiments import figures

    def run(path, values, grads):
        path.mkdir(parents=True)
        (path / "metrics.json").write_text("{}")
        pl.DataFrame({"epoch": [1, 2, 3], "val/ndcg@5": values, "train/grad_norm": grads}).write_csv(path / "history.csv")

    for seed in (1, 2):
        run(tmp_path / "c" / "none" / f"seed-{seed}", [0.3, 0.1, 0.2], [0.1, 0.2, 0.1])
    run(tmp_path / "c" / "simp" / "seed-1", [0.5, 0.4, 0.6], [3.0, 4.0, 5.0])  # 50 x the base's norms
    training = tmp_path / "c" / "simp" / "seed-2"
    (training / "checkpoints").mkdir(parents=True)
    lightning_log([0, 1], [0.45, 0.5], [3.0, 3.5]).write_csv(training / "metrics.csv")
    drawn = captured_figures(monkeypatch)
    figures.draw_figures(tmp_path / "c", figures=["curves"])
    valid, grad = (fig.axes[0] for fig in drawn)
    finished, so_far = valid.get_lines()[:3], valid.get_lines()[3]
    assert {(line.get_linewidth(), line.get_alpha()) for line in finished} == {(1.0, 0.7)}  # simp's one seed too
    assert so_far.get_zorder() > max(line.get_zorder() for line in finished)
    assert so_far.get_marker() == "o" and list(so_far.get_markevery()) == [1]  # marked where it stands now
    assert grad.get_yscale() == "log" and grad.get_ylabel() == "gradient norm (epoch mean) (log scale)"
    assert valid.get_yscale() == "linear"  # NDCG's own range is read as it is


def test_curves_mark_each_finished_runs_selected_epoch_and_say_what_chose_it(tmp_path, monkeypatch):
    """Validation NDCG@5 may peak at another epoch than the monitored NDCG@10, which chose the
    weights a run kept and tested: each finished seed's curve marks that epoch, the legend names
    the monitor, and a record without a selection (an older run) draws a plain line."""
    from awrsr.experiments import figures

    def run(path, best_epoch):
        path.mkdir(parents=True)
        selection = {} if best_epoch is None else {"selection": {"monitor": "valid ndcg@10", "best_epoch": best_epoch}}
        (path / "metrics.json").write_text(json.dumps(selection))
        pl.DataFrame({"epoch": [1, 2, 3, 4], "val/ndcg@5": [0.1, 0.3, 0.2, 0.25]}).write_csv(path / "history.csv")

    run(tmp_path / "c" / "none" / "seed-1", 3)
    run(tmp_path / "c" / "none" / "seed-2", 1)
    run(tmp_path / "c" / "simp" / "seed-1", None)
    run(tmp_path / "c" / "simp" / "seed-2", 9)  # not among the logged epochs: nothing to mark
    (tmp_path / "c" / "simp" / "seed-1" / "metrics.json").write_text('{"selection": "epoch 2"}')  # not ours: no mark
    drawn = captured_figures(monkeypatch)
    figures.draw_figures(tmp_path / "c", figures=["curves"])
    valid = drawn[0].axes[0]
    lines = valid.get_lines()
    assert [(line.get_marker(), line.get_markevery()) for line in lines[:2]] == [("x", [2]), ("x", [0])]
    assert all(line.get_marker() in (None, "None", "") for line in lines[2:])
    assert len(lines) == 4  # the legend's key is no line on the axes
    assert [t.get_text() for t in valid.get_legend().get_texts()][-1] == "selected epoch (best valid ndcg@10)"


def test_ndcg_at_n_ticks_its_ends_and_the_tables_cut_offs(tmp_path, monkeypatch):
    from awrsr.experiments import figures

    runs = {"none": [tmp_path / "a"]}
    monkeypatch.setattr(figures, "_test_ranks", lambda run_dir, data_path: np.array([1, 3, 12]))
    drawn = captured_figures(monkeypatch)
    figures.plot_ndcg_at_n(runs, tmp_path / "n.png")
    assert list(drawn[0].axes[0].get_xticks()) == [1, 5, 10, 15, 20]


def lightning_log(epochs, ndcg, grad):
    """A training's log in Lightning's layout (metrics.csv): a validation row, then a training row, per epoch."""
    rows = [[(e, 10 * e, v, None, None), (e, 10 * e, None, g, 1.0)] for e, v, g in zip(epochs, ndcg, grad)]
    return pl.DataFrame([r for pair in rows for r in pair], orient="row",
                        schema=["epoch", "step", "val/ndcg@5", "train/grad_norm", "train/loss"])


def test_an_unfinished_run_draws_its_curves_so_far(tmp_path, monkeypatch, capsys):
    """Hours into a run: its learning curves from the log, with the epochs a resume set aside; no
    attention or NDCG@N, which need the selected model."""
    from awrsr.experiments import figures

    run = tmp_path / "trial"
    (run / "checkpoints").mkdir(parents=True)
    lightning_log([0, 1], [0.1, 0.3], [5.0, 4.0]).write_csv(run / "checkpoints" / "earlier_metrics.csv")
    lightning_log([2], [0.2], [3.0]).write_csv(run / "metrics.csv")
    drawn = captured_figures(monkeypatch)
    files = figures.draw_figures(run, tmp_path / "figs")
    assert [f.name for f in files] == ["valid_ndcg5.png", "grad_norm.png"]
    valid, grad = (fig.axes[0] for fig in drawn)
    assert [(list(line.get_xdata()), list(line.get_ydata())) for line in valid.get_lines()] == [([1, 2, 3], [0.1, 0.3, 0.2])]
    assert [list(line.get_ydata()) for line in grad.get_lines()] == [[5.0, 4.0, 3.0]]
    assert [t.get_text() for t in valid.get_legend().get_texts()] == ["trial (so far)"]
    (run / "metrics.csv").write_text("epoch,step,val/ndcg@5\n2,20,0.2x\n")  # a value that is no number
    code, _, err = run_cli(capsys, "plot", str(run), "--output_dir", str(tmp_path / "figs2"))
    assert code == 2 and f"{run}: its epoch log cannot be read now" in err and "try again" in err, err
    # finished, it draws its history.csv and no longer reads the log
    (run / "metrics.json").write_text("{}")
    pl.DataFrame({"epoch": [1], "val/ndcg@5": [0.5]}).write_csv(run / "history.csv")
    figures.draw_figures(run, tmp_path / "figs3")
    assert list(drawn[-1].axes[0].get_lines()[0].get_ydata()) == [0.5]


def test_a_comparisons_seeds_still_training_join_its_learning_curves_so_far(tmp_path, monkeypatch, capsys):
    """Hours into a comparison: its finished seeds as the table has them, and the seeds still
    training (a variant with none finished too) dotted in their variant's colour, named "so far";
    NDCG@N waits for them."""
    from awrsr.experiments import figures

    compare = tmp_path / "c"
    done = compare / "none" / "seed-1"
    done.mkdir(parents=True)
    (done / "config.yaml").write_text("model: {}\n")
    (done / "metrics.json").write_text("{}")
    pl.DataFrame({"epoch": [1, 2], "val/ndcg@5": [0.1, 0.2], "train/grad_norm": [3.0, 2.0]}).write_csv(done / "history.csv")
    np.save(done / "test_ranks.npy", np.array([1, 2]))
    (compare / "runs.csv").write_text("variant,seed\nnone,1\n")
    for variant, seed, ndcg in (("none", 2, [0.15]), ("simp", 1, [0.05, 0.25]), ("simp", 2, [0.3])):
        run = compare / variant / f"seed-{seed}"
        (run / "checkpoints").mkdir(parents=True)
        lightning_log(list(range(len(ndcg))), ndcg, [1.0] * len(ndcg)).write_csv(run / "metrics.csv")
    (compare / "simp" / "seed-3").mkdir()  # not started: nothing to draw
    drawn = captured_figures(monkeypatch)
    files = figures.draw_figures(compare)
    assert [f.name for f in files] == ["valid_ndcg5.png", "grad_norm.png", "ndcg_at_n.png"]
    valid, ndcg = drawn[0].axes[0], drawn[2].axes[0]
    assert [t.get_text() for t in valid.get_legend().get_texts()] == [
        "none", "none: seed-2 so far", "simp: seed-1, seed-2 so far"]
    looks = [(to_hex(line.get_color()), line.get_linestyle(), list(line.get_ydata())) for line in valid.get_lines()]
    assert looks == [("#1f77b4", "-", [0.1, 0.2]), ("#1f77b4", ":", [0.15]), ("#ff7f0e", ":", [0.05, 0.25]),
                     ("#ff7f0e", ":", [0.3])]
    # up to 40 variants keep their own look; none is drawn like a seed so far
    assert figures.SO_FAR_LINE_STYLE not in {style.linestyle for style in figures.variant_styles([f"v{i}" for i in range(40)]).values()}
    assert [t.get_text() for t in ndcg.get_legend().get_texts()] == ["none"]  # finished seeds only
    drawn[0].canvas.draw()  # short labels: the legend stays inside the axes
    assert valid.get_legend().get_window_extent().x1 < valid.get_window_extent().x1
    # before any seed finished: the curves so far, and nothing else
    shutil.rmtree(done.parent)
    (compare / "runs.csv").unlink()
    drawn.clear()
    assert [f.name for f in figures.draw_figures(compare, tmp_path / "figs")] == ["valid_ndcg5.png", "grad_norm.png"]
    assert [t.get_text() for t in drawn[0].axes[0].get_legend().get_texts()] == ["simp: seed-1, seed-2 so far"]
    for seed in (1, 2):
        shutil.rmtree(compare / "simp" / f"seed-{seed}")  # left: seed-3, not started
    code, _, err = run_cli(capsys, "plot", str(compare))
    assert code == 2 and f"{compare}: neither a run directory nor a compare directory with a run that has logged an epoch" in err, err


def test_a_tunes_figures_are_its_trials_learning_curves(tmp_path, monkeypatch, capsys):
    """Every trial that has logged epochs, finished or not, labelled with the values that set it
    apart; no test metric per trial (a tune selects on validation) and no attention."""
    from awrsr.experiments import figures

    tune = tmp_path / "tune"
    def settings(lr, threads):
        return yaml.safe_dump({"model": {"hidden_size": 8}, "train": {"lr": lr, "num_threads": threads}})

    done = tune / "trial-aaa"
    done.mkdir(parents=True)
    (done / "config.yaml").write_text(settings(0.01, 1))
    (done / "metrics.json").write_text("{}")
    pl.DataFrame({"epoch": [1, 2], "val/ndcg@5": [0.1, 0.2], "train/grad_norm": [3.0, 2.0]}).write_csv(done / "history.csv")
    training = tune / "trial-bbb"
    (training / "checkpoints").mkdir(parents=True)
    (training / "checkpoints" / "run.yaml").write_text(settings(0.001, 2))  # other threads: a machine option, not shown
    pl.DataFrame({"epoch": [0, 0], "step": [5, 5], "val/ndcg@5": [0.05, None], "train/grad_norm": [None, 4.0]}).write_csv(
        training / "metrics.csv")
    (tune / "trial-ccc").mkdir()  # not started: nothing to draw
    copied = tune / "trial-ddd"  # records copied back without config or checkpoints: named only
    copied.mkdir()
    pl.DataFrame({"epoch": [0], "step": [5], "val/ndcg@5": [0.07]}).write_csv(copied / "metrics.csv")
    drawn = captured_figures(monkeypatch)
    files = figures.draw_figures(tune)
    assert [f.name for f in files] == ["valid_ndcg5.png", "grad_norm.png"]
    valid = drawn[0].axes[0]
    assert [t.get_text() for t in valid.get_legend().get_texts()] == [
        "trial-aaa (train.lr=0.01)", "trial-bbb (train.lr=0.001, so far)", "trial-ddd (so far)"]
    assert [list(line.get_ydata()) for line in valid.get_lines()] == [[0.1, 0.2], [0.05], [0.07]]
    drawn[0].canvas.draw()  # labels this long would hide the curves: the legend goes beside them
    assert valid.get_legend().get_window_extent().x0 > valid.get_window_extent().x1
    code, _, err = run_cli(capsys, "plot", str(tune), "--user_id", "7")
    assert code == 2 and "a tune's output" in err and "--user_id" in err and "trial-aaa" in err, err
    assert [f.name for f in figures.draw_figures(tune, tmp_path / "curves", figures=["curves"])] == ["valid_ndcg5.png", "grad_norm.png"]
    with pytest.raises(ConfigError, match="a tune's output: .* where --figures attention has no use"):
        figures.draw_figures(tune, tmp_path / "att", figures=["curves", "attention"])
    assert not (tmp_path / "att").exists()


def test_plot_draws_only_the_figures_asked_for_and_names_a_wrong_kind(trained_run, tmp_path, capsys):
    from awrsr.experiments import figures

    trained_run = trained_run.run_dir

    assert [f.name for f in figures.draw_figures(trained_run, tmp_path / "a", figures=["attention", "ndcg_at_n"])] == [
        "ndcg_at_n.png", f"attention_{trained_run.name}.png"]
    assert [f.name for f in figures.draw_figures(trained_run, tmp_path / "b", figures=["curves"])] == ["valid_ndcg5.png", "grad_norm.png"]
    with pytest.raises(ArtifactError, match=r"none of the figures asked for \(by_length\) can be drawn from it"):
        figures.draw_figures(trained_run, tmp_path / "c", figures=["by_length"])  # a comparison's figure
    assert not (tmp_path / "c").exists()
    for wrong, message in ((["heatmap"], "unknown kind 'heatmap'; choose from curves, ndcg_at_n, attention, by_length"),
                           ("curves", "a list of one or more of"), ([], "a list of one or more of")):
        with pytest.raises(ConfigError, match=message):
            figures.draw_figures(trained_run, tmp_path / "d", figures=wrong)
    code, _, err = run_cli(capsys, "plot", str(trained_run), "--figures", "[heatmap]", "--output_dir", str(tmp_path / "e"))
    assert code == 2 and "unknown kind 'heatmap'" in err and not (tmp_path / "e").exists(), err


def test_bars_by_length_show_each_variants_mean_and_std(tmp_path, monkeypatch):
    from awrsr.experiments import figures

    (tmp_path / "by_length.csv").write_text(
        "variant,metric,bucket,users,mean,std,improvement_pct,p_value,runs,pairs\n"
        "none,ndcg@10,1-5,10,0.2,0.01,,,2,0\n"
        "none,ndcg@10,>5,4,0.4,0.02,,,2,0\n"
        "1e-05,ndcg@10,1-5,10,0.3,0.03,50.0,0.1,2,2\n"
        "1e-05,ndcg@10,>5,4,0.5,0.04,25.0,0.2,2,2\n"
    )
    drawn = captured_figures(monkeypatch)
    figures.plot_by_length(tmp_path / "by_length.csv", tmp_path / "b.png")
    ax = drawn[0].axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["none", "1e-05"]
    heights = [round(bar.get_height(), 6) for bar in ax.patches]
    assert heights == [0.2, 0.4, 0.3, 0.5]  # none's buckets, then 1e-05's
    # error bars: each one's segment spans mean - std to mean + std
    spans = [tuple(np.round(seg[:, 1], 6)) for c in ax.collections for seg in c.get_segments()]
    assert spans == [(0.19, 0.21), (0.38, 0.42), (0.27, 0.33), (0.46, 0.54)]
    assert ax.get_ylabel() == "test NDCG@10, mean over seeds"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1-5\n(10)", ">5\n(4)"]
    assert ax.get_legend().get_title().get_text() == "mean ± std of 2 seeds"  # what the error bars are


def test_a_run_in_the_table_that_is_training_again_is_not_drawn(tmp_path):
    """runs.csv names none seeds 1 and 2, but seed 2 is being trained again (its metrics.json gone,
    its history growing): only finished runs are drawn."""
    from awrsr.experiments.figures import _runs_to_draw

    for seed in (1, 2):
        run = tmp_path / "none" / f"seed-{seed}"
        run.mkdir(parents=True)
        (run / "config.yaml").write_text("model: {}\n")
        (run / "history.csv").write_text("epoch\n1\n")
    (tmp_path / "none" / "seed-1" / "metrics.json").write_text("{}")
    (tmp_path / "runs.csv").write_text("variant,seed\nnone,1\nnone,2\n")
    assert _runs_to_draw(tmp_path, tmp_path / "figures") == {"none": [tmp_path / "none" / "seed-1"]}


def test_bars_by_length_count_the_bases_users_as_the_table_does(tmp_path, monkeypatch):
    """A variant on other data has other bucket sizes; the axis names the base's (the first
    variant's), as by_length.md heads its columns, whatever variant comes last."""
    from awrsr.experiments import figures

    (tmp_path / "by_length.csv").write_text(
        "variant,metric,bucket,users,mean,std,improvement_pct,p_value,runs,pairs\n"
        "none,ndcg@10,1-5,10,0.2,0.0,,,1,0\n"
        "fewer,ndcg@10,1-5,3,0.3,0.0,,,1,0\n"
        "fewer,ndcg@10,>5,2,0.5,0.0,,,1,0\n"
    )
    drawn = captured_figures(monkeypatch)
    figures.plot_by_length(tmp_path / "by_length.csv", tmp_path / "b.png")
    assert [t.get_text() for t in drawn[0].axes[0].get_xticklabels()] == ["1-5\n(10)", ">5\n(2)"]


def test_seed_counts_are_said_once_when_every_variant_has_the_same():
    from awrsr.experiments.figures import _seed_labels

    assert _seed_labels({"none": 3, "simp": 3}) == ({"none": "none", "simp": "simp"}, 3)
    assert _seed_labels({"none": 2, "simp": 1}) == ({"none": "none (2 seeds)", "simp": "simp (1 seed)"}, None)


def test_every_variant_of_a_large_comparison_keeps_its_own_look_in_every_figure(tmp_path, monkeypatch):
    """17 variants (the neighbours' table) with ten colours: no two share a colour and line style
    (bars: colour and hatch), each keeps its look across figures, and the legend sits beside the
    axes, in the saved file, not over the data."""
    from matplotlib.image import imread

    from awrsr.experiments import figures

    names = [f"v{i}" for i in range(17)]
    runs, ranks, rows = {}, {}, ["variant,metric,bucket,users,mean,std,improvement_pct,p_value,runs,pairs"]
    for i, name in enumerate(names):
        run = tmp_path / name / "seed-1"
        run.mkdir(parents=True)
        pl.DataFrame({"epoch": [1, 2], "val/ndcg@5": [0.1, 0.2 + i / 100]}).write_csv(run / "history.csv")
        runs[name], ranks[run] = [run], np.array([1 + i, 2])
        rows.append(f"{name},ndcg@10,1-5,10,{0.1 + i / 100},0.0,,,1,0")
    (tmp_path / "by_length.csv").write_text("\n".join(rows) + "\n")
    monkeypatch.setattr(figures, "_test_ranks", lambda run_dir, data_path: ranks[run_dir])
    drawn = captured_figures(monkeypatch)
    styles = figures.variant_styles(names)
    figures.plot_curves(runs, "val/ndcg@5", "validation NDCG@5", tmp_path / "curves.png", styles)
    figures.plot_ndcg_at_n(runs, tmp_path / "ndcg.png", styles=styles)
    figures.plot_by_length(tmp_path / "by_length.csv", tmp_path / "bars.png", styles)
    # a variant left out of one figure (a seed without test ranks) shifts no other variant's look
    figures.plot_ndcg_at_n({k: v for k, v in runs.items() if k != "v0"}, tmp_path / "fewer.png", styles=styles)
    curves, ndcg, bars, fewer = (fig.axes[0] for fig in drawn)
    assert [line.get_color() for line in fewer.get_lines()] == [line.get_color() for line in ndcg.get_lines()][1:]
    for ax in (curves, ndcg):
        looks = [(to_hex(line.get_color()), line.get_linestyle()) for line in ax.get_lines()]
        assert len(set(looks)) == 17
        assert looks[0] == ("#1f77b4", "-") and looks[10] == ("#1f77b4", "--")  # C0 again, dashed
    bar_looks = [(to_hex(bar.get_facecolor()), bar.get_hatch()) for bar in bars.patches]
    assert len(set(bar_looks)) == 17
    assert [look[0] for look in bar_looks] == [to_hex(line.get_color()) for line in curves.get_lines()]
    for fig, ax, name in zip(drawn, (curves, ndcg, bars), ("curves", "ndcg", "bars")):  # (fewer: the same)
        fig.canvas.draw()
        legend, axes = ax.get_legend().get_window_extent(), ax.get_window_extent()
        assert legend.x0 > axes.x1, name  # beside the axes, hiding no data
        width = imread(tmp_path / f"{name}.png").shape[1]
        assert width / 120 > fig.get_figwidth() * 1.1, name  # the file grew to hold the legend


def test_a_single_seed_has_no_error_bar(tmp_path, monkeypatch):
    """One seed's std is 0 by definition: no bar claims a spread of zero; two seeds' is drawn."""
    from awrsr.experiments import figures

    (tmp_path / "by_length.csv").write_text(
        "variant,metric,bucket,users,mean,std,improvement_pct,p_value,runs,pairs\n"
        "none,ndcg@10,1-5,10,0.2,0.01,,,2,0\n"
        "simp,ndcg@10,1-5,10,0.3,0.0,,,1,0\n"
    )
    drawn = captured_figures(monkeypatch)
    figures.plot_by_length(tmp_path / "by_length.csv", tmp_path / "b.png")
    segments = [seg for c in drawn[0].axes[0].collections for seg in c.get_segments()]
    drawn_bars = [tuple(np.round(np.asarray(seg)[:, 1], 6)) for seg in segments if len(seg)]
    assert drawn_bars == [(0.19, 0.21)]
