"""The awrsr command: every bad input gets one clear message and a non-zero exit, no traceback."""

import json

import pytest

from awrsr.train.process_state import flushed_share
from conftest import run_cli


def test_recommend_prints_original_ids(trained_run, capsys):
    code, out, _ = run_cli(capsys, "recommend", str(trained_run.run_dir), "--history", "1,2,3", "--k", "4", "--json_output", "true")
    assert code == 0
    recs = json.loads(out)
    assert len(recs) == 4 and not {r["item"] for r in recs} & {1, 2, 3}
    blocked = f"{recs[0]['item']},{recs[1]['item']}"
    code, out, _ = run_cli(capsys, "recommend", str(trained_run.run_dir), "--history", "1,2,3", "--k", "2", "--exclude", blocked, "--json_output", "true")
    assert code == 0 and [r["item"] for r in json.loads(out)] == [r["item"] for r in recs[2:4]]
    # a JSON list gives the same ids (and can hold ids with commas, which the model here lacks)
    code, out, _ = run_cli(capsys, "recommend", str(trained_run.run_dir), "--history", "[1, 2, 3]", "--k", "4", "--json_output", "true")
    assert code == 0 and json.loads(out) == recs
    code, _, err = run_cli(capsys, "recommend", str(trained_run.run_dir), "--history", '["a,b", "c"]', "--ignore_unknown", "true")
    assert code == 2 and "no known item id" in err and "'a,b'" in err, err
    code, _, err = run_cli(capsys, "recommend", str(trained_run.run_dir), "--history", "[1, 2")
    assert code == 2 and "--history: not a JSON list of ids" in err
    # a short list says why (the model knows 50 items; 3 are seen, 45 excluded)
    code, out, err = run_cli(capsys, "recommend", str(trained_run.run_dir), "--history", "1,2,3", "--k", "5",
                             "--exclude", ",".join(str(i) for i in range(4, 49)))
    assert code == 0 and "top 2 after 3 item(s)" in out and "only 2 of the model's items are neither" in err, err
    # ids left out are named, and not counted as read
    code, out, err = run_cli(capsys, "recommend", str(trained_run.run_dir), "--history", "1,999999,2", "--ignore_unknown", "true")
    assert code == 0 and "after 2 item(s)" in out and "left out 1 id(s) the model does not know: 999999" in err, err
    assert "neither in the history nor excluded" not in err  # a full list of 10 is not called short
    # JSON true is no item id (nor item 1), as the server refuses it too
    code, _, err = run_cli(capsys, "recommend", str(trained_run.run_dir), "--history", "[true, 2]")
    assert code == 2 and "--history: a JSON list must hold ids (strings or integers), got '[true, 2]'" in err, err
    code, _, err = run_cli(capsys, "recommend", str(trained_run.run_dir), "--history", "1,2", "--device", "tpu")
    assert code == 2 and "device must be cpu, cuda, cuda:N, mps or auto, got 'tpu'" in err, err


def test_tune_and_compare_pass_every_option_on(tmp_path, capsys, monkeypatch):
    import awrsr.experiments.compare
    import awrsr.experiments.tune

    calls = {}
    monkeypatch.setattr(awrsr.experiments.tune, "run_tune", lambda *args, **kwargs: calls.update(tune=(args, kwargs)))
    monkeypatch.setattr(awrsr.experiments.compare, "run_compare", lambda *args, **kwargs: calls.update(compare=(args, kwargs)))
    base, space = tmp_path / "base.yaml", tmp_path / "space.yaml"
    base.write_text("model:\n  max_len: 10\n")
    space.write_text("train.lr: [0.001, 0.01]\n")
    code, _, err = run_cli(capsys, "tune", str(base), str(space), "--output_dir", "t", "--max_trials", "3", "--sample_seed", "5",
                           "--set", "[train.max_epochs=2]", "--report_only", "true")
    assert code == 0, err
    assert calls["tune"] == ((str(base), {"train.lr": [0.001, 0.01]}, "t", 3, 5), {"extra": {"train.max_epochs": "2"}, "report_only": True})
    code, _, err = run_cli(capsys, "compare", str(base), "--variants", "[0.01]", "--seeds", "[1,2]", "--output_dir", "c",
                           "--key", "train.lr", "--base", "0.001", "--set", "[train.max_epochs=2]", "--report_only", "true",
                           "--length_edges", "[3,9]")
    assert code == 0, err
    assert calls["compare"] == ((str(base), [0.01], [1, 2], "c"), dict(
        key="train.lr", base="0.001", extra={"train.max_epochs": "2"}, report_only=True, length_edges=[3, 9],
    ))
    # --set once per option adds to the list, a whole list too; given plainly, jsonargparse would
    # refuse a bare key=value and let a second --set replace the first
    for sets in (["--set", "train.max_epochs=2", "--set=train.patience=1"], ["--set", "train.max_epochs=2", "--set", "[train.patience=1]"],
                 ["--set", "[train.max_epochs=2]", "--set", "train.patience=1"]):
        for command in (["tune", str(base), str(space)], ["compare", str(base)]):
            code, _, err = run_cli(capsys, *command, *sets, "--report_only", "true")
            assert code == 0, (sets, err)
            assert calls[command[0]][1]["extra"] == {"train.max_epochs": "2", "train.patience": "1"}, sets
    variants = tmp_path / "variants.yaml"  # a variants file names its options: --key with it is a mistake
    variants.write_text("plain: {}\nadd: {model.refine: add}\n")
    code, _, err = run_cli(capsys, "compare", str(base), "--variants_file", str(variants), "--key", "train.lr")
    assert code == 2 and "give it without --variants and --key" in err, err


def test_evaluate_prints_the_metrics_table(trained_run, capsys):
    import torch

    threads = torch.get_num_threads()
    try:
        code, out, _ = run_cli(capsys, "evaluate", str(trained_run.run_dir), "--split", "valid", "--num_threads", "1")
        assert code == 0 and "NDCG@10" in out and torch.get_num_threads() == 1
        # the title on one line above the table, not wrapped to the table's width
        lines = out.splitlines()
        title = lines[next(i for i, line in enumerate(lines) if line.startswith("┏")) - 1]
        assert title.startswith(f"{trained_run.run_dir} on ") and title.endswith("(seen items filtered)"), out
    finally:
        torch.set_num_threads(threads)
    code, _, err = run_cli(capsys, "evaluate", str(trained_run.run_dir), "--num_threads", "0")
    assert code == 2 and "--num_threads must be >= 1" in err


@pytest.mark.parametrize("command", [["recommend", "--history", "1,2"], ["plot"], ["serve", "--port", "0"]])
def test_every_command_that_runs_the_model_takes_num_threads(trained_run, capsys, command, tmp_path):
    import torch

    name, *options = command
    code, _, err = run_cli(capsys, name, str(trained_run.run_dir), *options, "--num_threads", "0")
    assert code == 2 and "--num_threads must be >= 1" in err, err
    if name != "recommend":
        return
    threads = torch.get_num_threads()
    try:
        code, out, err = run_cli(capsys, name, str(trained_run.run_dir), *options, "--num_threads", "1")
        assert code == 0 and "top 10 after 2 item(s)" in out and torch.get_num_threads() == 1, err
    finally:
        torch.set_num_threads(threads)


@pytest.mark.parametrize("command", [["evaluate", "--split", "valid"], ["recommend", "--history", "1,2"], ["serve", "--port", "0"]])
def test_every_command_that_scores_flushes_subnormals_unless_told_not_to(trained_run, capsys, command, monkeypatch):
    import uvicorn

    monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets=None: None)  # serve: everything but listening
    name, *options = command
    for given, flushing in (([], 1.0), (["--flush_denormal", "false"], 0.0), (["--flush_denormal", "true"], 1.0)):
        code, _, err = run_cli(capsys, name, str(trained_run.run_dir), *options, *given)
        assert code == 0 and flushed_share() == flushing, (given, err)  # the default is train.flush_denormal's


def _printed_metric(out: str, name: str) -> float:
    """The value in the first column of the row ``name`` (NDCG@10, say) of a printed metrics table."""
    import re

    return float(re.search(rf"{re.escape(name)}\s*[│|]\s*([0-9.]+)", out).group(1))


def test_evaluate_scores_the_split_and_the_seen_item_filter_it_is_given(trained_run, capsys):
    run = str(trained_run.run_dir)
    code, out, err = run_cli(capsys, "evaluate", run, "--split", "valid")
    assert code == 0, err
    header = next(line for line in out.splitlines() if "metric" in line)
    assert "valid" in header and "test" not in header, out
    stored = trained_run.metrics
    assert _printed_metric(out, "NDCG@10") == pytest.approx(stored["valid"]["ndcg@10"], abs=1e-4)
    assert round(stored["valid"]["ndcg@10"], 4) != round(stored["test"]["ndcg@10"], 4)  # else this shows nothing
    code, out, err = run_cli(capsys, "evaluate", run, "--filter_seen", "false")
    assert code == 0 and "(seen items not filtered)" in out, err


def test_evaluate_by_history_length_partitions_the_users(trained_run, capsys):
    import re

    code, out, _ = run_cli(capsys, "evaluate", str(trained_run.run_dir), "--by_length", "true")
    assert code == 0 and "by history length" in out
    rows = [line for line in out.splitlines() if re.match(r"\W*(\d+-\d+|>\d+)\s", line)]
    users = [int(re.split(r"[│|]", row)[2].strip().replace(",", "")) for row in rows]
    ndcg = [float(re.split(r"[│|]", row)[4]) for row in rows]
    assert rows and sum(users) == len(__import__("numpy").load(trained_run.run_dir / "test_ranks.npy"))
    overall = sum(u * v for u, v in zip(users, ndcg)) / sum(users)
    assert overall == pytest.approx(trained_run.metrics["test"]["ndcg@10"], abs=1e-3)  # rows printed to 4 digits


def test_fit_runs_from_a_config_file(tmp_path, capsys):
    config = tmp_path / "tiny.yaml"
    config.write_text(
        "data:\n  synthetic:\n    num_users: 60\n    num_items: 20\n"
        "model:\n  max_len: 10\n  hidden_size: 8\n  num_blocks: 1\n"
        f"train:\n  max_epochs: 2\n  progress_bar: false\noutput_dir: {tmp_path / 'run'}\n"
    )
    code, out, err = run_cli(capsys, "fit", "--config", str(config), "--model.mask_prob", "0.5")
    assert code == 0, err
    assert (tmp_path / "run" / "model.safetensors").is_file()
    assert "popularity" in out and "sasrec, dot attention, no refinement on synthetic" in out, out
    # an option the model never reads is said, not silently dropped
    assert "note: model.mask_prob has no effect here (only model.name 'bert4rec' reads it)" in " ".join(out.split())


@pytest.mark.parametrize(
    "yaml_text, expected",
    [
        ("model:\n  hidden_sise: 64\n", "hidden_sise"),  # unknown key
        ("model:\n  hidden_size: 64\n  num_heads: 3\n", "model.num_heads"),  # impossible value
        ("train:\n  loss: hinge\n", "train.loss"),
        ("train:\n  monitor: ndcg@50\n", "train.monitor"),
        ("data:\n  min_user_interactions: -1\n", "data.min_user_interactions"),
        ("model:\n  refine: magic\n", "model.refine"),
        ("train:\n  max_time: 5min\n", "train.max_time"),
        ("model:\n  name: stosa\n", "model.attention"),  # STOSA needs the wasserstein attention
        ("train:\n  loss: stosa\n", "train.loss"),  # STOSA's loss on SASRec
        ("train:\n  seed: -1\n", "train.seed must be in 0..4294967295"),  # numpy's range, before the data
        ("train:\n  seed: 4294967296\n", "train.seed must be in 0..4294967295"),
        ("train:\n  num_negatives: -5\n", "train.num_negatives must be >= 1"),  # whatever the loss
        ("model:\n  norm_eps: -1\n", "model.norm_eps must be > 0"),
        # YAML keeps the last of two equal keys silently: the second lr would win unseen
        ("train:\n  lr: 0.001\n  batch_size: 8\n  lr: 0.1\n", "line 4: 'lr' is given twice in one mapping (first on line 2)"),
        ("model: {refine: simp, refine: add}\n", "'refine' is given twice"),
    ],
)
def test_bad_configs_name_the_field(tmp_path, capsys, yaml_text, expected):
    config = tmp_path / "bad.yaml"
    config.write_text(yaml_text + f"output_dir: {tmp_path / 'run'}\n")
    code, _, err = run_cli(capsys, "fit", "--config", str(config), "--train.max_epochs", "1")
    assert code != 0
    assert expected in err


@pytest.mark.parametrize(
    "content, expected",
    [
        ("1 2 3\n2 x 4\n", ":2"),  # malformed line: file and line number
        ("", "no interactions"),
    ],
)
def test_bad_data_files_name_file_and_line(tmp_path, capsys, content, expected):
    data = tmp_path / "interactions.txt"
    data.write_text(content)
    code, _, err = run_cli(capsys, "stats", "--data.path", str(data))
    assert code == 2
    assert "interactions.txt" in err and expected in err


def test_stats_reads_the_data_section_of_a_fit_config(tmp_path, capsys):
    fit_config = tmp_path / "run.yaml"
    fit_config.write_text(
        "data:\n  synthetic: {num_users: 60, num_items: 25, seed: 3}\nmodel: {name: sasrec, max_len: 10}\n"
        "train: {max_epochs: 1}\noutput_dir: runs/x\n"
    )
    code, from_config, err = run_cli(capsys, "stats", "--config", str(fit_config))
    assert code == 0, err
    code, direct, _ = run_cli(
        capsys, "stats", "--data.synthetic.num_users", "60", "--data.synthetic.num_items", "25", "--data.synthetic.seed", "3",
    )
    assert code == 0 and "60 users" in direct and from_config == direct
    code, overridden, _ = run_cli(capsys, "stats", f"--config={fit_config}", "--data.synthetic.num_users", "70")
    assert code == 0 and "70 users" in overridden
    # an unknown section is still an error, naming it, not silently dropped
    fit_config.write_text("data:\n  synthetic: {num_users: 60}\nmodel: {name: sasrec}\ntrian: {lr: 0.1}\n")
    code, _, err = run_cli(capsys, "stats", "--config", str(fit_config))
    assert code == 2 and "run.yaml, line 4: unknown section 'trian'; did you mean train?" in err, err


def test_missing_data_file(tmp_path, capsys):
    code, _, err = run_cli(capsys, "stats", "--data.path", str(tmp_path / "nope.txt"))
    assert code == 2 and "nope.txt" in err


def test_unknown_item_in_recommend(trained_run, capsys):
    code, _, err = run_cli(capsys, "recommend", str(trained_run.run_dir), "--history", "1,424242")
    assert code == 2 and "424242" in err
    # a negative id first is the option's value, not an option argparse does not know
    code, _, err = run_cli(capsys, "recommend", str(trained_run.run_dir), "--history", "-7,2")
    assert code == 2 and "unknown item id(s): '-7'" in err, err
    code, out, err = run_cli(capsys, "recommend", str(trained_run.run_dir), "--history", "1,2", "--exclude", "-7,-8", "--k", "3")
    assert code == 0 and "top 3" in out and "--exclude names 2 id(s) the model does not know: -7, -8" in err, err


def test_exclude_finds_ids_written_as_whole_floats_and_names_the_ids_it_does_not_know(trained_run, tmp_path, capsys):
    run = str(trained_run.run_dir)
    code, out, _ = run_cli(capsys, "recommend", run, "--history", "1,2,3", "--k", "3", "--json_output", "true")
    first, second, third = (r["item"] for r in json.loads(out))
    # "5.0" is item 5, as the CSV readers read it: excluded, not skipped as unknown
    code, out, err = run_cli(capsys, "recommend", run, "--history", "1.0,2,3", "--k", "1", "--json_output", "true",
                             "--exclude", f"{first}.0,{second}.00,banana")
    assert code == 0 and [r["item"] for r in json.loads(out)] == [third], out
    assert "--exclude names 1 id(s) the model does not know: banana" in err, err
    log = tmp_path / "log.csv"
    log.write_text("user,item\nu,1\nu,2\nu,3\n")
    out_file = tmp_path / "recs.csv"
    code, _, err = run_cli(capsys, "recommend", run, "--input", str(log), "--user_col", "user", "--item_col", "item",
                           "--time_col", "", "--output", str(out_file), "--k", "1", "--exclude", f"{first}.0,{second},banana")
    assert code == 0 and "--exclude names 1 id(s) the model does not know: banana" in err, err
    assert out_file.read_text().splitlines()[1].split(",")[2] == str(third)  # user, rank, item, score


def test_an_empty_or_space_separated_history_id_is_named_not_skipped(trained_run, capsys):
    run = str(trained_run.run_dir)
    for given, position in (("1,,2", 2), ("1,2,,", 3), (",1", 1)):
        code, _, err = run_cli(capsys, "recommend", run, "--history", given)
        assert code == 2 and f"--history: id {position} of {given!r} is empty" in err, err
    code, out, _ = run_cli(capsys, "recommend", run, "--history", "1,2,", "--json_output", "true")  # a list built in a loop
    assert code == 0 and len(json.loads(out)) == 10
    code, _, err = run_cli(capsys, "recommend", run, "--history", "1,2", "--exclude", "3,,4")
    assert code == 2 and "--exclude: id 2 of '3,,4' is empty" in err, err
    code, _, err = run_cli(capsys, "recommend", run, "--history", "1 2 3")
    assert code == 2 and "unknown item id(s): '1 2 3' (ids are comma-separated: --history 1,2,3)" in err, err
    code, _, err = run_cli(capsys, "recommend", run, "--history", "1 424242")  # not all known: no such guess
    assert code == 2 and err.startswith("awrsr: error: unknown item id(s): '1 424242'\n"), err


def test_values_that_begin_with_a_dash_and_a_digit_are_attached_to_their_option():
    from awrsr.cli import attach_dash_values

    assert attach_dash_values(["recommend", "r", "--history", "-1,2", "--k", "3"]) == ["recommend", "r", "--history=-1,2", "--k", "3"]
    assert attach_dash_values(["--k=3", "-1,2"]) == ["--k=3", "-1,2"]  # the option has its value already
    assert attach_dash_values(["-1,2", "--history", "-x"]) == ["-1,2", "--history", "-x"]  # not a digit: an option


def test_incomplete_artifact_directory(tmp_path, capsys):
    (tmp_path / "config.yaml").write_text("model: {}\n")
    code, _, err = run_cli(capsys, "recommend", str(tmp_path), "--history", "1")
    assert code == 2 and "model.safetensors" in err and "vocab.json" in err


def test_changing_only_the_loss_uses_that_losses_default_negatives(tmp_path, capsys):
    from awrsr.run_config import load_fit_config

    config = tmp_path / "c.yaml"
    config.write_text("train:\n  loss: sampled_softmax\n")
    train = load_fit_config(["--config", str(config)])["train"]
    assert train.effective_num_negatives == 100
    assert load_fit_config([])["train"].effective_num_negatives == 0


@pytest.mark.parametrize(
    "file, edit, expected",
    [
        ("metrics.json", lambda text: "{not json", "metrics.json"),
        ("metrics.json", lambda text: "[]", "metrics.json"),
        ("metrics.json", lambda text: text.replace('"sha256"', '"sha"'), "fingerprint"),
        ("config.yaml", lambda text: text.replace("hidden_size: 32", "hidden_size: abc"), "config.yaml"),
        ("config.yaml", lambda text: text.replace("  dropout: 0.1", "  dropout: null"), "config.yaml"),
        ("config.yaml", lambda text: text.replace("data:\n", "data: x\nold_data:\n"), "config.yaml"),
        # an edited max_len is named, not reported as the position table's shape
        ("config.yaml", lambda text: text.replace("  max_len: 20", "  max_len: 50"), "max_len (20 -> 50)"),
    ],
)
def test_damaged_artifacts_are_clear_errors(trained_run, tmp_path, capsys, file, edit, expected):
    import shutil

    damaged = tmp_path / "damaged"
    shutil.copytree(trained_run.run_dir, damaged)
    (damaged / file).write_text(edit((damaged / file).read_text()))
    code, _, err = run_cli(capsys, "evaluate", str(damaged))
    assert code == 2 and expected in err


@pytest.mark.parametrize("file", ["config.yaml", "metrics.json"])
def test_an_artifact_file_in_another_encoding_names_its_line(trained_run, tmp_path, capsys, file):
    import shutil

    damaged = tmp_path / "damaged"
    shutil.copytree(trained_run.run_dir, damaged)
    text = (damaged / file).read_text()
    (damaged / file).write_bytes(text.encode() + "\n".encode() + "caf\u00e9".encode("latin-1"))  # a Latin-1 edit
    lines = text.count("\n") + 2
    code, _, err = run_cli(capsys, "evaluate", str(damaged))
    assert code == 2 and f"{file}:{lines}: not valid UTF-8 text" in err, err


@pytest.mark.parametrize("command", ["fit", "evaluate", "recommend", "serve", "stats", "tune", "compare", "plot"])
def test_every_command_help_opens_with_a_whole_sentence(capsys, command):
    # `awrsr CMD --help` shows only the docstring's first line: it must not stop mid-sentence.
    code, out, _ = run_cli(capsys, command, "--help")
    assert code == 0
    description = out.split("\n\n")[1].replace("\n", " ").strip()
    assert description.endswith(".") and len(description) > 20, description


def test_version_is_told_without_importing_lightning():
    """awrsr --version answers in seconds: importing workflows, Lightning with it, made it take 10.8 s
    where it now takes 3.7 s, both beside two trainings (session 51)."""
    import subprocess
    import sys

    code = "import sys; from awrsr.cli import version_text; version_text(); print(sorted(m for m in sys.modules if m.startswith('lightning')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", out


def test_version_names_the_code_torch_and_python_and_only_awrsr_takes_it(capsys):
    import platform

    import torch

    import awrsr
    from awrsr.version import code_version

    code, out, _ = run_cli(capsys, "--version")
    assert code == 0
    assert out == f"awrsr {code_version()} (torch {torch.__version__}, Python {platform.python_version()})\n"
    assert out.startswith(f"awrsr {awrsr.__version__}")
    code, out, _ = run_cli(capsys, "--help")
    assert code == 0 and "--version" in out
    code, _, err = run_cli(capsys, "fit", "--version")  # a subcommand's parser has no --version
    assert code == 2 and err == "awrsr: error: --version goes before the command: awrsr --version (not awrsr fit --version)\n", err


@pytest.mark.parametrize("edges", ["[10,5]", "[0,5]", "[]"])
def test_compare_refuses_bad_length_edges_before_training(tmp_path, capsys, edges):
    config = tmp_path / "base.yaml"
    config.write_text("model:\n  max_len: 10\n")
    code, _, err = run_cli(capsys, "compare", str(config), "--length_edges", edges, "--output_dir", str(tmp_path / "c"))
    assert code == 2 and "length_edges" in err and "positive and increasing" in err
    assert not (tmp_path / "c").exists()  # nothing trained


def test_serve_refuses_a_bad_port_and_a_missing_artifact_before_listening(trained_run, tmp_path, capsys):
    code, _, err = run_cli(capsys, "serve", str(trained_run.run_dir), "--port", "70000")
    assert code == 2 and "--port must be in 0..65535" in err
    code, _, err = run_cli(capsys, "serve", str(tmp_path / "nothing"))
    assert code == 2 and "artifact directory not found" in err
    code, _, err = run_cli(capsys, "serve", str(trained_run.run_dir), "--device", "tpu")
    assert code == 2 and "device must be cpu, cuda, cuda:N, mps or auto" in err


def test_a_value_of_the_wrong_type_in_a_config_file_names_the_file_and_line(tmp_path, capsys, monkeypatch):
    config = tmp_path / "conf" / "run.yaml"
    config.parent.mkdir()
    config.write_text("model:\n  refine: simp\ntrain:\n  seed: 1\n  lr: fast\n  max_epochs: 3\n")
    monkeypatch.chdir(tmp_path)  # a relative path: jsonargparse reads the file from its own directory
    code, _, err = run_cli(capsys, "fit", "--config", "conf/run.yaml")
    assert code == 2 and "awrsr: error: conf/run.yaml, line 5: train.lr expects a number, got 'fast'" in err, err
    # a later --train.lr does not help: the file's value is refused as the file is read
    code, _, err = run_cli(capsys, "fit", "--config", "conf/run.yaml", "--train.lr", "0.1")
    assert code == 2 and "conf/run.yaml, line 5: train.lr expects a number" in err, err
    # the same key typed on the command line is the option's error, not the file's
    config.write_text("train:\n  lr: 0.1\n")
    code, _, err = run_cli(capsys, "fit", "--config", "conf/run.yaml", "--train.lr", "fast")
    assert code == 2 and "awrsr: error: --train.lr expects a number, got 'fast'" in err, err
    # the last file that gives the value is named, and tune and compare name it too
    other = tmp_path / "other.yaml"
    other.write_text("train: {max_epochs: 2.5}\n")
    code, _, err = run_cli(capsys, "fit", "--config", "conf/run.yaml", "--config", "other.yaml")
    assert code == 2 and "other.yaml, line 1: train.max_epochs expects an integer, got '2.5'" in err, err
    code, _, err = run_cli(capsys, "compare", "other.yaml", "--variants", "[simp]", "--output_dir", str(tmp_path / "cmp"))
    assert code == 2 and "other.yaml, line 1: train.max_epochs expects an integer" in err, err


def test_abbreviated_options_are_errors_not_guesses(capsys):
    code, _, err = run_cli(capsys, "fit", "--train.max_epoch", "7", "--print_config")
    assert code == 2 and "--train.max_epoch 7 (did you mean --train.max_epochs?)" in err


def test_a_misspelt_key_names_the_closest_one(tmp_path, capsys):
    config = tmp_path / "typo.yaml"
    config.write_text("model:\n  refin: simp\n")
    code, _, err = run_cli(capsys, "fit", "--config", str(config))
    assert code == 2 and "typo.yaml, line 2: unknown key 'model.refin'; did you mean model.refine?" in err, err
    code, _, err = run_cli(capsys, "fit", "--zzz", "1")
    assert code == 2 and "unrecognized arguments: --zzz 1" in err and "did you mean" not in err
    from awrsr.errors import ConfigError
    from awrsr.run_config import load_fit_config

    with pytest.raises(ConfigError, match=r"did you mean --model\.refine\?"):  # variants files and search spaces
        load_fit_config(["--model.refin", "simp"])
    # a key under its section of a config file: the file and line, before the parser sees it
    with pytest.raises(ConfigError, match=r"typo.yaml, line 2: unknown key 'model.refin'; did you mean model\.refine\?"):
        load_fit_config(["--config", str(config)])
    # a section given as a file of its own, and so a mapping in a mapping, as a loaded config
    # reports it ("Group 'model' ... 'refin'")
    with pytest.raises(ConfigError, match=r"Group 'model' does not accept option 'refin' \(did you mean --model\.refine\?\)"):
        load_fit_config(["--model", "{refin: simp}"])


def test_option_errors_are_one_line_not_the_usage(tmp_path, capsys):
    """jsonargparse would print fit's whole usage (dozens of lines) above its message."""
    broken = tmp_path / "broken.yaml"
    broken.write_text("model:\n  name: sasrec\n  hidden_size: 64: 3\n")
    unquoted = tmp_path / "unquoted.yaml"
    unquoted.write_text("model:\n  refine: no\n")  # YAML 1.1: false, where "none" was meant
    for args, message in (
        (["fit", "--model.refin", "simp"], "unrecognized arguments: --model.refin simp (did you mean --model.refine?)"),
        (["fit", "--train.max_epochs", "abc"], "--train.max_epochs expects an integer, got 'abc'"),
        # jsonargparse's account of a union is seven lines ("Subtypes: [...]", "Given value type: ...")
        (["tune", "base.yaml", "space.yaml", "--max_trials", "abc"], "--max_trials expects an integer or null, got 'abc'"),
        (["compare", "base.yaml", "--seeds", "1"], "--seeds expects a list (a list is written [a,b]), got '1'"),
        # a variants file given where the variants' names go
        (["compare", "base.yaml", "--variants", "configs/compare/stosa.yaml"],
         "--variants expects a list (a list is written [a,b]; a YAML file of them goes to --variants_file), "
         "got 'configs/compare/stosa.yaml'"),
        (["fit", "--train.precision", "16"], "--train.precision expects one of '32-true', 'bf16-mixed', got '16'"),
        (["frob"], "argument subcommand: invalid choice: 'frob'"),
        (["fit", "--config", str(broken)], f"{broken}, line 3, column 18: not valid YAML: mapping values are not allowed here"),
        # in a file, its line (the file says no, the parser read False)
        (["fit", "--config", str(unquoted)], f"{unquoted}, line 2: model.refine expects a string (YAML reads an unquoted no, "
                                             "yes, off or on as false or true: quote the value), got 'False'"),
    ):
        code, out, err = run_cli(capsys, *args)
        assert code == 2 and err.startswith(f"awrsr: error: {message}") and "usage:" not in err, (args, err)
        assert len(err.splitlines()) <= (2 if "expects" in message else 3) and not out, (args, err)
        if "YAML" not in message:  # jsonargparse's errors point to the options' help
            command = f" {args[0]}" if args[0] in ("fit", "tune", "compare") else ""
            assert err.rstrip().endswith(f"(for the accepted options: awrsr{command} --help)"), err




@pytest.mark.parametrize("args, missing", [
    (["tune", "base.yaml"], "missing SPACE: the command is awrsr tune BASE_CONFIG SPACE [options]"),
    (["plot"], "missing DIRECTORY: the command is awrsr plot DIRECTORY [options]"),
    (["recommend", "--k", "5"], "missing ARTIFACT: the command is awrsr recommend ARTIFACT [options]"),
])
def test_a_missing_positional_is_named_as_typed_with_its_command(capsys, args, missing):
    code, out, err = run_cli(capsys, *args)
    assert code == 2 and not out
    assert err == f"awrsr: error: {missing}\n(for the accepted options: awrsr {args[0]} --help)\n"

def test_awrsr_debug_shows_what_is_behind_an_error(tmp_path, capsys, monkeypatch):
    from awrsr.cli import main
    from awrsr.errors import DataError

    missing = str(tmp_path / "missing.txt")
    code, _, err = run_cli(capsys, "stats", "--data.path", missing)
    assert code == 2 and err.startswith("awrsr: error: data file not found")
    monkeypatch.setenv("AWRSR_DEBUG", "1")
    with pytest.raises(DataError, match="data file not found"):  # raised, so Python prints its traceback
        main(["stats", "--data.path", missing])
    code, _, err = run_cli(capsys, "fit", "--model.refin", "simp")
    assert code == 2 and "usage:" in err and "(did you mean --model.refine?)" in err  # jsonargparse's own report
    monkeypatch.setenv("AWRSR_DEBUG", "0")
    code, _, err = run_cli(capsys, "stats", "--data.path", missing)
    assert code == 2 and err.startswith("awrsr: error: data file not found")

def test_an_output_dir_that_cannot_be_made_is_one_line_naming_it(tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    code, _, err = run_cli(capsys, "fit", "--train.max_epochs", "1", "--output_dir", str(blocker / "run"))
    assert code == 2 and err.startswith("awrsr: error: ") and str(blocker) in err


def test_ctrl_c_outside_training_is_one_line(monkeypatch, capsys):
    import awrsr.workflows

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(awrsr.workflows, "fit", interrupted)
    code, _, err = run_cli(capsys, "fit", "--train.max_epochs", "1")
    assert code == 130 and err.strip() == "awrsr: interrupted"


def test_a_failed_write_is_one_line_naming_the_file_unless_debugging(monkeypatch, capsys):
    import errno

    import awrsr.workflows

    def disk_full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", "/data/run/model.safetensors")

    monkeypatch.setattr(awrsr.workflows, "fit", disk_full)
    code, _, err = run_cli(capsys, "fit", "--train.max_epochs", "1")
    assert code == 2 and err == "awrsr: error: No space left on device: /data/run/model.safetensors\n"
    monkeypatch.setenv("AWRSR_DEBUG", "1")
    with pytest.raises(OSError, match="No space left on device"):  # raised, so Python prints its traceback
        from awrsr.cli import main

        main(["fit", "--train.max_epochs", "1"])


def test_compare_takes_boolean_variants_as_yaml_writes_them(tmp_path, capsys):
    # `--variants [true]` against `--base false`: each variant is a bool option named as YAML writes it
    config = tmp_path / "base.yaml"
    config.write_text("model:\n  max_len: 10\n  refine: simp\n  num_heads: 2\n")
    code, _, err = run_cli(
        capsys, "compare", str(config), "--key", "model.refine_per_head", "--base", "false", "--variants", "[true]",
        "--seeds", "[1]", "--output_dir", str(tmp_path / "c"), "--report_only", "true",
    )
    assert code == 2 and "no finished run of this comparison yet. Not started: false seed 1; true seed 1." in err, err


def test_config_before_the_command_says_where_it_goes(capsys):
    for argv in (["--config", "configs/sasrec/synthetic.yaml", "fit"], ["--config=configs/sasrec/synthetic.yaml", "fit"]):
        code, _, err = run_cli(capsys, *argv)
        assert code == 2 and "--config goes after the command, e.g. awrsr fit --config FILE" in err, err


def test_running_out_of_memory_is_one_line_naming_what_to_shrink(tmp_path, capsys, monkeypatch):
    # numpy refuses a 7 TiB array at once, without touching memory
    code, _, err = run_cli(capsys, "fit", "--data.synthetic.num_users", "1000000000000", "--output_dir", str(tmp_path / "r"))
    assert code == 2 and "awrsr: error: out of memory (Unable to allocate 7.28 TiB" in err and "train.batch_size" in err, err
    from awrsr import workflows

    def torch_cpu_allocator_fails(*args, **kwargs):
        raise RuntimeError(
            "[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate memory: you tried "
            "to allocate 40000000000000 bytes. Error code 12 (Cannot allocate memory)"
        )

    monkeypatch.setattr(workflows, "fit", torch_cpu_allocator_fails)
    code, _, err = run_cli(capsys, "fit", "--output_dir", str(tmp_path / "r"))
    assert code == 2 and "out of memory (tried to allocate 37,252.9 GiB)" in err and "alloc_cpu" not in err, err

    def a_bug(*args, **kwargs):
        raise RuntimeError("shape mismatch")  # not a user's error: the traceback stays

    monkeypatch.setattr(workflows, "fit", a_bug)
    with pytest.raises(RuntimeError, match="shape mismatch"):
        from awrsr.cli import main

        main(["fit", "--output_dir", str(tmp_path / "r")])


def test_ids_and_paths_with_brackets_are_data_not_markup_or_patterns(tmp_path, capsys, monkeypatch):
    # rich reads "[red]" as a style and "[/x]" as a closing tag (an error): ids and paths are data
    monkeypatch.setenv("COLUMNS", "500")  # long temporary paths on one line
    folder = tmp_path / "[v2]"
    folder.mkdir()
    odd = ["[red]", "[/x]", "[new] widget"]
    items = odd + [f"i{j}" for j in range(9)]
    rows = [f"u{user},{items[(user + step) % len(items)]}" for user in range(30) for step in range(8)]
    (folder / "log.csv").write_text("user_id,item_id\n" + "\n".join(rows) + "\n")
    run = folder / "run"
    code, out, err = run_cli(
        capsys, "fit", "--data.path", str(folder / "log.csv"), "--data.min_user_interactions", "0",
        "--data.min_item_interactions", "0", "--model.max_len", "8", "--model.hidden_size", "8",
        "--model.num_blocks", "1", "--train.max_epochs", "1", "--train.progress_bar", "false", "--output_dir", str(run),
    )
    assert code == 0, err
    assert f"saved to {run}" in out, out
    code, out, err = run_cli(capsys, "recommend", str(run), "--history", "i1", "--k", "20")
    assert code == 0, err
    assert all(f" {item} " in out for item in odd), out  # each in its table cell
    code, out, err = run_cli(capsys, "recommend", str(run), "--history", '["[/zz]", "i1"]', "--ignore_unknown", "true")
    assert code == 0 and "left out 1 id(s) the model does not know: [/zz]" in err, err
    (folder / "new.csv").write_text("user_id,item_id\n[/u],unknown\nu1,i2\n")
    code, out, err = run_cli(capsys, "recommend", str(run), "--input", str(folder / "new.csv"), "--ignore_unknown", "true",
                             "--output", str(folder / "recs[1].csv"))
    assert code == 0 and f"-> {folder / 'recs[1].csv'}" in err and "no item the model knows and got none: [/u]" in err, err
    code, out, err = run_cli(capsys, "plot", str(run))  # reads the run's tables from a folder named like a glob
    assert code == 0 and (run / "figures").is_dir(), err
