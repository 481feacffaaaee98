"""Batch scoring of a whole log (``awrsr recommend --input``): every user gets what
``Recommender.recommend`` gives their history alone, and what cannot be scored is reported."""

import json
import shutil

import polars as pl
import pytest
import torch
import yaml

from awrsr.data import DataConfig, Vocabulary
from awrsr.errors import ConfigError, DataError
from awrsr.infer import Recommender, recommend_log, write_recommendations
from awrsr.infer.batch import log_data_config, read_user_histories
from conftest import copy_run_with_data, run_cli

# Three users; rows deliberately out of time order, and user "u2" interleaved with "u1".
LOG = pl.DataFrame({
    "user_id": ["u1", "u2", "u1", "u3", "u1", "u2", "u3"],
    "item_id": [5, 9, 3, 11, 7, 2, 4],
    "ts": [30, 5, 10, 1, 20, 1, 2],
})
HISTORIES = {"u1": [3, 7, 5], "u2": [2, 9], "u3": [11, 4]}  # each user's items by time


@pytest.fixture(scope="module")
def recommender(trained_run):
    return Recommender.load(trained_run.run_dir)


@pytest.fixture()
def log_file(tmp_path):
    path = tmp_path / "events.csv"
    LOG.write_csv(path)
    return path


def _per_user(frame: pl.DataFrame) -> dict:
    return {user: group.sort("rank") for (user,), group in frame.group_by("user", maintain_order=True)}


@pytest.mark.parametrize("batch_size", [1, 2, 1024])
def test_each_user_gets_what_recommend_gives_their_history_alone(recommender, log_file, batch_size):
    data = DataConfig(path=str(log_file), time_col="ts")
    result = recommend_log(recommender, log_file, data, k=6, batch_size=batch_size)
    assert result.frame.columns == ["user", "rank", "item", "score"]
    assert result.frame.get_column("user").unique(maintain_order=True).to_list() == ["u1", "u2", "u3"]
    assert result.users == 3 and result.skipped_users == [] and result.unknown_interactions == 0
    for user, group in _per_user(result.frame).items():
        alone = recommender.recommend(HISTORIES[user], k=6)
        assert group.get_column("rank").to_list() == list(range(1, 7))
        assert group.get_column("item").to_list() == [r.item for r in alone]
        assert group.get_column("score").to_list() == pytest.approx([r.score for r in alone], abs=1e-5)
        assert not set(HISTORIES[user]) & set(group.get_column("item").to_list())


def test_a_frame_of_whole_numbers_written_as_text_gets_what_recommend_gives(recommender, tmp_path):
    # "5.0" finds item 5 in recommend (Vocabulary.key); the log's reader must find it too
    as_text = LOG.with_columns(pl.col("item_id").cast(pl.Float64).cast(pl.Utf8))
    assert as_text.get_column("item_id")[0] == "5.0"
    result = recommend_log(recommender, as_text, DataConfig(time_col="ts"), k=4)
    assert result.unknown_interactions == 0
    for user, group in _per_user(result.frame).items():
        assert group.get_column("item").to_list() == [r.item for r in recommender.recommend(HISTORIES[user], k=4)]
    # and the result, or its frame, is written as it is
    write_recommendations(result, tmp_path / "recs.csv")
    assert pl.read_csv(tmp_path / "recs.csv").get_column("item").to_list() == result.frame.get_column("item").to_list()
    with pytest.raises(ConfigError, match="write_recommendations takes recommend_log's result or its polars frame, got dict"):
        write_recommendations({"user": [1]}, tmp_path / "other.csv")


def test_without_a_time_column_file_order_is_time_order(recommender, log_file):
    result = recommend_log(recommender, log_file, DataConfig(path=str(log_file)), k=3)  # u1 read as 5, 3, 7
    expected = recommender.recommend([5, 3, 7], k=3)
    assert _per_user(result.frame)["u1"].get_column("item").to_list() == [r.item for r in expected]


def test_exclusions_seen_items_and_a_k_beyond_the_catalogue(recommender, log_file):
    data = DataConfig(path=str(log_file), time_col="ts")
    top = recommend_log(recommender, log_file, data, k=4).frame
    blocked = top.filter(pl.col("rank") == 1).get_column("item").to_list()
    without = recommend_log(recommender, log_file, data, k=4, exclude=[*blocked, "not-an-item"]).frame
    assert not set(blocked) & set(without.get_column("item").to_list())
    every = recommend_log(recommender, log_file, data, k=1000, exclude_seen=True).frame
    num_items = len(recommender.vocab)
    counts = every.group_by("user", maintain_order=True).len().get_column("len").to_list()
    assert counts == [num_items - len(HISTORIES[u]) for u in ("u1", "u2", "u3")]  # only real items, no -inf rows
    with_seen = recommend_log(recommender, log_file, data, k=1000, exclude_seen=False).frame
    assert with_seen.height == 3 * num_items


def test_unknown_items_are_an_error_naming_the_file_unless_ignored(recommender, tmp_path):
    log = tmp_path / "new.csv"
    pl.DataFrame({"user_id": ["a", "a", "b", "c"], "item_id": [1, 99999, 99998, 2]}).write_csv(log)
    with pytest.raises(DataError, match=r"new.csv: 2 interaction\(s\) name 2 item id\(s\).*99999, 99998.*unknown=\"ignore\""):
        recommend_log(recommender, log, DataConfig(path=str(log)))
    with pytest.raises(ConfigError, match="^unknown must be 'error' or 'ignore', got 'skip'$"):  # never a silent ignore
        recommend_log(recommender, log, DataConfig(path=str(log)), unknown="skip")
    result = recommend_log(recommender, log, DataConfig(path=str(log)), k=2, unknown="ignore")
    assert result.skipped_users == ["b"] and result.users == 2
    assert result.unknown_interactions == 2 and result.unknown_items == [99999, 99998]
    assert result.frame.get_column("user").unique(maintain_order=True).to_list() == ["a", "c"]
    assert _per_user(result.frame)["a"].get_column("item").to_list() == [r.item for r in recommender.recommend([1], k=2)]


def test_unknown_interactions_are_counted_row_by_row_and_five_ids_named(recommender, tmp_path):
    log = tmp_path / "new.csv"
    unknown = [90001, 90002, 90003, 90004, 90005, 90006]
    # 8 interactions name 6 distinct unknown ids: 90001 and 90002 come twice, from two users
    pl.DataFrame({"user_id": ["a"] * 7 + ["b"] * 3, "item_id": [1, *unknown, 2, 90001, 90002]}).write_csv(log)
    with pytest.raises(DataError, match=r"new.csv: 8 interaction\(s\) name 6 item id\(s\) the model does not know "
                                        r"\(90001, 90002, 90003, 90004, 90005, \.\.\.\);"):
        recommend_log(recommender, log, DataConfig(path=str(log)))
    result = recommend_log(recommender, log, DataConfig(path=str(log)), k=2, unknown="ignore")
    assert result.unknown_interactions == 8 and result.unknown_items == unknown and result.users == 2


def test_ids_are_matched_as_the_vocabulary_stores_them(tmp_path):
    log = tmp_path / "log.csv"
    log.write_text("user_id,item_id\nx,b\nx,a\ny,zz\ny,c\n")
    read = read_user_histories(log, DataConfig(path=str(log)), Vocabulary(["a", "b", "c"]), unknown="ignore")
    assert read.users.to_list() == ["x", "y"]
    assert read.histories.to_lists() == [[2, 1], [3]]
    assert read.unknown_items == ["zz"]
    padded = tmp_path / "padded.csv"
    padded.write_text("user_id,item_id\n1,007\n1,7\n")  # text ids: "007" is not item 7
    read = read_user_histories(padded, DataConfig(path=str(padded)), Vocabulary([7, 8]), unknown="ignore")
    assert read.histories.to_lists() == [[1]] and read.unknown_items == ["007"]


def test_the_log_is_read_with_the_models_own_settings_unless_overridden():
    stored = {"path": "train.csv", "format": "csv", "user_col": "visitor", "item_col": "product", "time_col": "ts",
              "duplicates": "consecutive", "min_user_interactions": 5, "synthetic": {"num_users": 3}}
    config = log_data_config(stored, "new.log", item_col="sku", time_col=None)
    assert (config.path, config.format, config.user_col, config.item_col, config.time_col, config.duplicates) == (
        "new.log", "csv", "visitor", "sku", "ts", "consecutive"
    )
    with pytest.raises(ConfigError, match="stored data settings"):
        log_data_config({"colour": "red"}, "new.csv")
    with pytest.raises(ConfigError, match="stored data settings: not a mapping of options, got int 5"):  # was an AttributeError
        log_data_config(5, "new.csv")


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".parquet", ".jsonl"])
def test_written_recommendations_read_back_the_same(tmp_path, suffix):
    frame = pl.DataFrame({"user": ["u1", "u1"], "rank": pl.Series([1, 2], dtype=pl.Int32), "item": [4, 9], "score": [0.5, 0.25]})
    path = tmp_path / f"recs{suffix}"
    write_recommendations(frame, path)
    read = {
        ".csv": lambda: pl.read_csv(path), ".tsv": lambda: pl.read_csv(path, separator="\t"),
        ".parquet": lambda: pl.read_parquet(path), ".jsonl": lambda: pl.read_ndjson(path),
    }[suffix]()
    assert read.cast(frame.schema).equals(frame)


@pytest.mark.parametrize("name, expected", [("recs.xlsx", "suffix picks the format"), ("missing/recs.csv", "does not exist")])
def test_bad_output_paths_are_refused(tmp_path, name, expected):
    with pytest.raises(ConfigError, match=expected):
        write_recommendations(pl.DataFrame({"user": [1]}), tmp_path / name)


def test_cli_scores_a_log_into_a_file(trained_run, log_file, tmp_path, capsys):
    out = tmp_path / "recs.parquet"
    code, stdout, stderr = run_cli(
        capsys, "recommend", str(trained_run.run_dir), "--input", str(log_file), "--time_col", "ts", "--output", str(out),
        "--k", "3", "--exclude", "1,2",
    )
    assert code == 0 and "top 3 for 3 users (9 rows)" in stderr and stdout == ""
    frame = pl.read_parquet(out)
    assert frame.height == 9 and not {1, 2} & set(frame.get_column("item").to_list())
    code, stdout, _ = run_cli(capsys, "recommend", str(trained_run.run_dir), "--input", str(log_file), "--k", "2")
    assert code == 0 and stdout.splitlines()[0] == "user,rank,item,score" and len(stdout.splitlines()) == 7



def test_cli_names_its_own_option_for_unknown_items(trained_run, tmp_path, capsys):
    log = tmp_path / "new.csv"
    pl.DataFrame({"user_id": ["a", "a"], "item_id": [1, 99999]}).write_csv(log)
    code, _, stderr = run_cli(capsys, "recommend", str(trained_run.run_dir), "--input", str(log))
    assert code == 2 and stderr.rstrip().endswith("Skip them with --ignore_unknown true.") and "unknown=" not in stderr
    pl.DataFrame({"user_id": ["a", "b"], "item_id": [1, 99999]}).write_csv(log)
    code, _, stderr = run_cli(capsys, "recommend", str(trained_run.run_dir), "--input", str(log), "--ignore_unknown", "true")
    assert code == 0 and "for 1 user (" in stderr and "1 user has no item the model knows and got none: b" in stderr, stderr


def test_cli_passes_each_option_on_when_scoring_a_log(trained_run, log_file, tmp_path, capsys):
    """--include_seen, --ignore_unknown, --device and --batch_size reach the scoring of a log, and
    the summary lines count what each user got."""
    import io

    run, log = str(trained_run.run_dir), str(log_file)
    code, out, err = run_cli(capsys, "recommend", run, "--input", log, "--time_col", "ts", "--k", "50", "--include_seen", "true")
    u1 = pl.read_csv(io.StringIO(out)).filter(pl.col("user") == "u1")
    assert code == 0 and u1.height == 50 and set(HISTORIES["u1"]) <= set(u1.get_column("item").to_list()), err
    assert "top 50 for 3 users (150 rows)" in err and "got none" not in err, err  # every user got a full list
    code, _, err = run_cli(capsys, "recommend", run, "--input", log, "--k", "1000")  # more than the 50 items
    assert code == 0 and "top 50 for 3 users" in err, err
    with_unknown = tmp_path / "unknown.csv"
    pl.DataFrame({"user_id": ["a", "a", "b"], "item_id": [1, 99999, 2]}).write_csv(with_unknown)
    code, out, err = run_cli(capsys, "recommend", run, "--input", str(with_unknown), "--k", "2", "--ignore_unknown", "true")
    assert code == 0 and len(out.splitlines()) == 1 + 2 * 2, err
    assert "left out 1 interactions with 1 item ids the model does not know" in " ".join(err.split()), err
    code, _, err = run_cli(capsys, "recommend", run, "--input", log, "--device", "tpu")
    assert code == 2 and "device must be cpu, cuda, cuda:N, mps or auto, got 'tpu'" in err, err
    code, _, err = run_cli(capsys, "recommend", run, "--input", log, "--batch_size", "0")
    assert code == 2 and "batch_size must be an integer >= 1, got 0" in err, err


@pytest.mark.parametrize(
    "extra, expected",
    [
        (["--history", "1,2", "--input", "LOG"], "either --history or --input"),
        (["--history", "1,2", "--output", "recs.csv"], "--output only applies with --input"),
        (["--history", "1,2", "--user_col", "visitor"], "--user_col only applies with --input"),
        (["--history", "1,2", "--batch_size", "8"], "--batch_size only applies with --input"),
        (["--history", "1,2", "--output", "recs.csv", "--batch_size", "8"], "--output, --batch_size only apply with --input"),
        (["--input", "LOG", "--json_output", "true"], "--json_output is for --history"),
        (["--input", "LOG", "--output", "recs.xlsx"], "suffix picks the format"),
        (["--input", "LOG", "--item_col", "sku"], "sku"),
        ([], "--history is empty"),
    ],
)
def test_cli_refuses_mixed_or_bad_options_in_one_line(trained_run, log_file, capsys, extra, expected):
    argv = [str(log_file) if a == "LOG" else a for a in extra]
    code, _, stderr = run_cli(capsys, "recommend", str(trained_run.run_dir), *argv)
    assert code == 2 and expected in stderr


def test_histories_longer_than_the_window_and_mixed_widths_match_recommend(recommender, tmp_path):
    long = [1 + (7 * i) % 40 for i in range(45)]  # 45 items with repeats: more than max_len = 20
    rows = [("long", item) for item in long] + [("short", 3)] + [("mid", item) for item in long[:12]]
    log = tmp_path / "mixed.csv"
    pl.DataFrame(rows, schema=["user_id", "item_id"], orient="row").write_csv(log)
    result = recommend_log(recommender, log, DataConfig(path=str(log)), k=5, batch_size=2)
    per_user = _per_user(result.frame)
    for user, history in {"long": long, "short": [3], "mid": long[:12]}.items():
        alone = recommender.recommend(history, k=5)
        assert per_user[user].get_column("item").to_list() == [r.item for r in alone], user


def test_a_log_with_no_known_item_is_an_error_even_when_unknown_ids_are_ignored(recommender, tmp_path):
    log = tmp_path / "unknown.csv"
    pl.DataFrame({"user_id": [1, 2], "item_id": [99999, 88888]}).write_csv(log)
    with pytest.raises(DataError, match="no interaction names an item the model knows"):
        recommend_log(recommender, log, DataConfig(path=str(log)), unknown="ignore")


def test_a_file_suffix_beats_the_training_format_and_empty_strings_clear_options(tmp_path):
    stored = {"format": "whitespace", "time_col": "ts", "separator": ";"}
    assert log_data_config(stored, "events.csv").format == "auto"  # read by its suffix, not as whitespace
    txt = log_data_config(stored, "events.txt")
    assert (txt.format, txt.time_col, txt.separator) == ("whitespace", None, None)  # no columns to name there
    # a model trained on a CSV with its own column names scores a whitespace log that auto detects
    log = tmp_path / "events.txt"
    log.write_text("1 5 6\n")
    csv_trained = {"format": "auto", "user_col": "visitor", "item_col": "product", "time_col": "ts"}
    config = log_data_config(csv_trained, str(log))
    assert (config.user_col, config.item_col, config.time_col) == ("user_id", "item_id", None)
    assert read_user_histories(log, config, Vocabulary([5, 6]), unknown="error").histories.to_lists() == [[1, 2]]
    named = log_data_config(csv_trained, str(tmp_path / "events.csv"), format="whitespace")  # the format named
    assert (named.format, named.user_col, named.time_col) == ("whitespace", "user_id", None)
    # a parquet log keeps the model's columns but not its CSV's separator or header switch
    parquet = log_data_config({**csv_trained, "separator": ";", "has_header": False}, str(tmp_path / "events.parquet"))
    assert (parquet.user_col, parquet.separator, parquet.has_header) == ("visitor", None, True)
    assert log_data_config(stored, "events.csv", format="tsv").format == "tsv"
    cleared = log_data_config(stored, "events.csv", time_col="", separator="")
    assert cleared.time_col is None and cleared.separator is None


def test_a_log_without_a_format_suffix_is_read_as_the_training_file_was(tmp_path):
    # auto read the training file by its suffix; a log named without one is that format too,
    # not detected afresh (which would read a CSV as whitespace and fail on its header)
    log = tmp_path / "events"
    log.write_text("visitor,product,ts\nu1,6,2\nu1,5,1\n")
    csv_trained = {"path": "../data/train.CSV", "format": "auto", "user_col": "visitor", "item_col": "product", "time_col": "ts"}
    config = log_data_config(csv_trained, str(log))
    assert (config.format, config.user_col, config.time_col) == ("csv", "visitor", "ts")
    assert read_user_histories(log, config, Vocabulary([5, 6]), unknown="error").histories.to_lists() == [[1, 2]]
    assert log_data_config({**csv_trained, "path": "train.tsv"}, "events.log").format == "tsv"
    assert log_data_config({**csv_trained, "path": "ml-1m.txt"}, "events.log").format == "auto"  # auto read its content
    assert log_data_config({**csv_trained, "format": "movielens"}, "events.log").format == "movielens"  # as named
    assert log_data_config(csv_trained, "events.log", format="whitespace").format == "whitespace"
    assert log_data_config(csv_trained, "events.parquet").format == "auto"  # the log's own suffix first
    parquet_log = tmp_path / "events_pq"  # Parquet by its content, which auto reads whatever the name
    pl.DataFrame({"visitor": ["u1", "u1"], "product": [6, 5], "ts": [2, 1]}).write_parquet(parquet_log)
    config = log_data_config(csv_trained, str(parquet_log))
    assert config.format == "auto"
    assert read_user_histories(parquet_log, config, Vocabulary([5, 6]), unknown="error").histories.to_lists() == [[1, 2]]


@pytest.fixture()
def artifact_trained_on_whitespace_with_times(trained_run, tmp_path):
    return copy_run_with_data(trained_run.run_dir, tmp_path / "artifact", format="whitespace", time_col="ts")


def test_cli_reads_a_csv_log_for_a_model_trained_on_another_format(artifact_trained_on_whitespace_with_times, tmp_path, capsys):
    log = tmp_path / "plain.csv"
    pl.DataFrame({"user_id": ["a", "a", "b"], "item_id": [1, 2, 3]}).write_csv(log)  # no ts column
    argv = ["recommend", str(artifact_trained_on_whitespace_with_times), "--input", str(log), "--k", "2"]
    code, _, stderr = run_cli(capsys, *argv)
    assert code == 2 and "no column 'ts'" in stderr and "--time_col" in stderr and "data.time_col" not in stderr
    code, stdout, _ = run_cli(capsys, *argv, "--time_col", "")
    assert code == 0 and len(stdout.splitlines()) == 1 + 2 * 2


def test_cli_names_a_bad_reading_option_by_its_own_name(trained_run, log_file, capsys):
    # a field's own error (data.separator) comes back under the command's option, not as a crash
    code, _, stderr = run_cli(capsys, "recommend", str(trained_run.run_dir), "--input", str(log_file), "--separator", ";;")
    assert code == 2 and "--separator must be a single one-byte character" in stderr and "data.separator" not in stderr
    assert "Traceback" not in stderr


def test_a_stored_data_section_that_is_no_mapping_is_named_with_or_without_output(trained_run, log_file, tmp_path, capsys):
    # it crashed with an AttributeError, in the output check too
    copy = tmp_path / "model"
    shutil.copytree(trained_run.run_dir, copy, ignore=shutil.ignore_patterns("checkpoints"))
    config = yaml.safe_load((copy / "config.yaml").read_text())
    (copy / "config.yaml").write_text(yaml.safe_dump({**config, "data": 5}))
    for output in ([], ["--output", str(tmp_path / "recs.csv")]):
        code, _, stderr = run_cli(capsys, "recommend", str(copy), "--input", str(log_file), *output)
        assert code == 2 and "stored data settings: not a mapping of options, got int 5" in stderr, stderr


def test_cli_refuses_to_write_over_its_input_log(trained_run, log_file, capsys):
    before = log_file.read_text()
    code, _, stderr = run_cli(capsys, "recommend", str(trained_run.run_dir), "--input", str(log_file), "--output", str(log_file))
    assert code == 2 and "is the input log" in stderr
    assert log_file.read_text() == before



def test_cli_refuses_to_write_over_the_models_training_data(trained_run, log_file, tmp_path, capsys, monkeypatch):
    copy = tmp_path / "model"
    shutil.copytree(trained_run.run_dir, copy, ignore=shutil.ignore_patterns("checkpoints"))
    data = tmp_path / "train.csv"
    data.write_text("user_id,item_id\n1,2\n")
    config = yaml.safe_load((copy / "config.yaml").read_text())
    config["data"]["path"] = str(data)  # as if trained on this file
    (copy / "config.yaml").write_text(yaml.safe_dump(config))
    code, _, stderr = run_cli(capsys, "recommend", str(copy), "--input", str(log_file), "--output", str(data))
    assert code == 2 and "is the model's training data" in stderr, stderr
    assert data.read_text() == "user_id,item_id\n1,2\n"
    # a relative stored path read from another directory: the absolute path recorded at training
    monkeypatch.chdir(tmp_path / "model")  # where no train.csv lies
    config["data"]["path"] = "train.csv"
    (copy / "config.yaml").write_text(yaml.safe_dump(config))
    metrics = json.loads((copy / "metrics.json").read_text())
    metrics["dataset"]["resolved_path"] = str(data)
    (copy / "metrics.json").write_text(json.dumps(metrics))
    code, _, stderr = run_cli(capsys, "recommend", str(copy), "--input", str(log_file), "--output", str(data))
    assert code == 2 and "is the model's training data" in stderr, stderr
    assert data.read_text() == "user_id,item_id\n1,2\n"


def test_a_reader_that_stops_early_ends_the_command_quietly(trained_run, log_file, capsys, monkeypatch):
    import io

    class ClosedPipe(io.StringIO):  # what stdout is after `| head -n 1` has exited
        def write(self, text):
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr("sys.stdout", ClosedPipe())
    from awrsr.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["recommend", str(trained_run.run_dir), "--input", str(log_file), "--k", "2"])
    assert exit_.value.code == 1
    assert capsys.readouterr().err == ""  # no traceback, no "Broken pipe", no success line


def test_a_model_with_non_finite_scores_is_a_one_line_error(trained_run, log_file, tmp_path, capsys):
    import shutil

    from safetensors.torch import load_file, save_file

    broken = tmp_path / "broken"
    shutil.copytree(trained_run.run_dir, broken, ignore=shutil.ignore_patterns("checkpoints"))
    weights = load_file(broken / "model.safetensors")
    weights = {name: torch.full_like(value, float("nan")) for name, value in weights.items()}
    save_file(weights, broken / "model.safetensors")
    for argv in (["--input", str(log_file)], ["--history", "1,2"]):
        code, _, stderr = run_cli(capsys, "recommend", str(broken), *argv)
        assert code == 2 and "non-finite scores" in stderr


def test_cli_writes_over_nothing_but_earlier_recommendations(trained_run, log_file, tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(trained_run.run_dir, run)
    before = (run / "history.csv").read_bytes()
    code, _, stderr = run_cli(capsys, "recommend", str(run), "--input", str(log_file), "--output", str(run / "history.csv"))
    assert code == 2 and "history.csv: the file exists and is not an earlier table of recommendations (columns user, rank, item, score)" in stderr
    assert (run / "history.csv").read_bytes() == before  # the learning curves survive
    # nor another log (a one-letter slip in --output replaced it), a tune's or a comparison's tables
    other_log = tmp_path / "other.csv"
    other_log.write_text("user_id,item_id\n1,2\n")
    code, _, stderr = run_cli(capsys, "recommend", str(run), "--input", str(log_file), "--output", str(other_log))
    assert code == 2 and "is not an earlier table of recommendations" in stderr and other_log.read_text() == "user_id,item_id\n1,2\n"
    (tmp_path / "runs.csv").write_text("variant,seed\n")
    with pytest.raises(ConfigError, match="is not an earlier table of recommendations"):
        write_recommendations(pl.DataFrame({"user": [1]}), tmp_path / "runs.csv")
    # an earlier answer, in any format, or an empty file is replaced: a repeated command
    for name in ("recs.csv", "recs.tsv", "recs.parquet", "recs.jsonl"):
        for round_ in (1, 2):
            code, _, _ = run_cli(capsys, "recommend", str(run), "--input", str(log_file), "--output", str(tmp_path / name), "--k", str(round_))
            assert code == 0
        frame = pl.read_parquet(tmp_path / name) if name.endswith(".parquet") else pl.read_ndjson(tmp_path / name) \
            if name.endswith(".jsonl") else pl.read_csv(tmp_path / name, separator="\t" if name.endswith(".tsv") else ",")
        assert frame.columns == ["user", "rank", "item", "score"] and frame["rank"].max() == 2, name
    (tmp_path / "empty.csv").touch()
    write_recommendations(pl.DataFrame({"user": [1]}), tmp_path / "empty.csv")
    write_recommendations(pl.DataFrame({"user": [2]}), tmp_path / "empty.csv")  # the same columns again
    assert pl.read_csv(tmp_path / "empty.csv")["user"].to_list() == [2]


def test_arguments_of_the_wrong_kind_are_clear_errors(recommender, log_file):
    data = DataConfig(path=str(log_file), time_col="ts")
    with pytest.raises(ConfigError, match="k must be an integer >= 1, got 0"):  # before the log is read
        recommend_log(recommender, "/no/such/log.csv", data, k=0)
    with pytest.raises(ConfigError, match="exclude_seen must be true or false, got 'no'"):
        recommend_log(recommender, log_file, data, exclude_seen="no")
    with pytest.raises(ConfigError, match="data must be a DataConfig"):  # one line, as every argument error
        recommend_log(recommender, log_file, None)
    with pytest.raises(ConfigError, match="^source: give the log"):
        recommend_log(recommender, None, data)
    with pytest.raises(ConfigError, match="^top_k takes histories as awrsr.data.Sequences .* got list"):
        recommender.top_k([[1, 2]], 3)


@pytest.mark.parametrize(("policy", "expected"), [("keep", [[1, 1, 2, 1]]), ("consecutive", [[1, 2, 1]]), ("first", [[1, 2]])])
def test_a_log_is_read_with_the_training_duplicates_policy(policy, expected):
    log = pl.DataFrame({"user_id": ["u"] * 4, "item_id": [3, 3, 7, 3]})
    read = read_user_histories(log, DataConfig(duplicates=policy), Vocabulary([3, 7]))
    assert read.histories.to_lists() == expected


def _run_with_duplicates_policy(trained_run, tmp_path, policy):
    """A copy of the shared run whose config says it was trained with ``policy`` (as
    ``awrsr fit --data.duplicates POLICY`` stores it; the weights do not depend on it here)."""
    run = tmp_path / f"run-{policy}"
    shutil.copytree(trained_run.run_dir, run)
    config = yaml.safe_load((run / "config.yaml").read_text())
    config["data"]["duplicates"] = policy
    (run / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return run


@pytest.mark.parametrize(
    ("policy", "read_as"), [("keep", [3, 3, 7, 3, 9]), ("consecutive", [3, 7, 3, 9]), ("first", [3, 7, 9])]
)
def test_every_path_reads_a_history_with_the_models_duplicates_policy(trained_run, tmp_path, capsys, policy, read_as):
    history = [3, 3, 7, 3, 9]
    keeping = Recommender.load(trained_run.run_dir)
    expected = keeping.recommend(read_as, k=5)
    if policy != "keep":  # the policy changes the answer, so each check below can fail
        assert [r.score for r in keeping.recommend(history, k=5)] != pytest.approx([r.score for r in expected])
    run = _run_with_duplicates_policy(trained_run, tmp_path, policy)
    rec = Recommender.load(run)
    assert rec.duplicates == policy
    for got in (rec.recommend(history, k=5), rec.recommend_many([history, [3]], k=5)[0]):
        assert [r.item for r in got] == [r.item for r in expected]
        assert [r.score for r in got] == pytest.approx([r.score for r in expected], abs=1e-5)
    assert rec.attention(history).items == read_as
    # a log: the model's policy, whatever the DataConfig given says (here its default, keep)
    log = pl.DataFrame({"user_id": ["u"] * len(history), "item_id": history})
    frame = recommend_log(rec, log, DataConfig(), k=5).frame
    assert frame.get_column("item").to_list() == [r.item for r in expected]
    code, out, _ = run_cli(capsys, "recommend", str(run), "--history", "3,3,7,3,9", "--k", "5", "--json_output", "true")
    assert code == 0 and [r["item"] for r in json.loads(out)] == [r.item for r in expected]


def test_an_unknown_duplicates_policy_in_an_artifact_names_the_field(trained_run, tmp_path, capsys):
    run = _run_with_duplicates_policy(trained_run, tmp_path, "last")
    code, _, err = run_cli(capsys, "recommend", str(run), "--history", "3,7")
    assert code == 2 and "config.yaml: data.duplicates must be one of keep, first, consecutive, got 'last'" in err, err
    with pytest.raises(ConfigError, match="duplicates must be one of keep, first, consecutive, got 'last'"):
        Recommender(Recommender.load(trained_run.run_dir).model, Vocabulary(list(range(1, 51))), 20, duplicates="last")
